"""The state-flow model of a worker call: the MRO's sources (`sources`), the repository's
save/restore bracket (`bracket`), the call as state events (`trace`), which metadata changes
the contract must restore (`flow`), and its findings as violations (`violations`).

Modules import each other directly (never through this package), so importing one module
never runs the others.
"""
