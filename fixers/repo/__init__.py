"""The target repository as files: which are indexed (`files`), reading and writing them
without leaving it (`paths`), the rules for report fields that reach git (`input_rules`), the
schema of `.repairbot.toml` (`config_schema`) and the switches it gives the service (`policy`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
