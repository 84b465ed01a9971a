"""Failure intake, signature classification, contract sweep and LibCST codemods, by concept:

* ``intake``: CI reports in every format (console logs, JUnit, analyses) into failure records;
* ``classify``: those records (``failures``) into findings, one per root cause, by signature;
* ``contracts``: what a base class asks of its subclasses, built in, declared or inferred;
* ``sweep``: the repository index, every violation of a contract, and the fix in memory;
* ``state``: the state-flow model behind the restore-hook violations;
* ``learned``: contract breaks repaired the way their own commit migrated the siblings;
* ``codemods``: the LibCST edits, one per module, found by their registry;
* ``evidence``: why a change is safe (parses, idempotent, scoped, imports in the sandbox);
* ``check``: a working tree against its base (``repairbot check``, the pre-merge check);
* ``repo``: the target repository's files, paths, ``.repairbot.toml`` schema and policy;
* ``sandbox``: the one launcher for target code.

Modules import each other directly, never through a package's ``__init__``.
"""
