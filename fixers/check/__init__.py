"""A working tree against its base (`repairbot check`, the pre-merge check): the base's files
(`base_tree`), the violations the tree adds (`introduced`) and fixes for just those
(`tree_check`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
