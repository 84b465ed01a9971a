"""LibCST codemods for contract violations: one per module, each declaring ``CODEMOD``.

The registry (``fixers.codemods.registry``) finds them; modules starting with ``_`` are helpers.
"""
