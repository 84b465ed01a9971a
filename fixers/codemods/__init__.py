"""LibCST codemods for contract violations: one per module, each with ``EXAMPLES``."""
