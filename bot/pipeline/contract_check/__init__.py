"""The pre-merge contract check: when PRs get one (`triggers`), the tree on disk per repository
(`tree`, `blobs`), what a PR adds to its base's violations (`sweep`), the answer (`answer`),
and the task (`task`).
"""
