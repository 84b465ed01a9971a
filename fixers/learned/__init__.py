"""Learned migrations: repair a contract break the way its own commit migrated the siblings.

``breaks`` reads contract breaks out of classified failures; ``history`` finds the commit that
changed the contract; ``examples`` turns each sibling that commit migrated into a
``signature_edit.MethodEdit``; ``rule`` learns the edit they agree on; ``engine`` finds every
subclass the commit missed and turns each into a ``learned-migration`` violation, which the
``learned_migration`` codemod applies with the same evidence as every other fix.
"""
