"""Sweeping a repository for violations and fixing them in one change: the index of classes
and bases (`index`, over `pyfacts` and the files' bytes in `content`), violations
(`violations`, `violation_types`), the plan and its application in memory (`fix_plan`,
`fix_apply`, typed by `fix_types` and `stub_types`), the report (`outcome`, `unified_diff`),
and the whole run (`run`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
