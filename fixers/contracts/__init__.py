"""Contracts as data: the built-in one, `.repairbot.toml`'s and those given on the command line
(`model`), and those inferred from a base's `__init_subclass__` guard (`inference`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
