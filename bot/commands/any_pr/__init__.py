"""repairbot's own commands, under its prefix (default ``/repairbot``), read on any PR:
``apply-fix`` (its work in ``apply_fix_run``), ``unsuppress``, ``opt-out``, ``opt-in``. One
module per command, each declaring its ``COMMAND``.
"""
