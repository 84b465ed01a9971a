"""Learned migrations: repair a contract break the way its own commit migrated the siblings.

``breaks`` reads contract breaks out of classified failures (``static_breaks`` finds them in
changed files without a log) and ``locate`` tells which class a log's name means; ``history``
finds the commit that changed the contract; ``examples`` turns each sibling that commit
migrated into a ``signature_edit.MethodEdit``; ``rule`` learns the edit they agree on (or,
for a base outside the repository with no sibling migrated, ``installed`` reads its signature);
``engine`` runs those steps per root cause and ``decisions`` decides for every subclass,
turning each miss into a ``learned-migration`` violation (kept in ``learning``), which the
``learned_migration`` codemod applies with the same evidence as every other fix.
"""
