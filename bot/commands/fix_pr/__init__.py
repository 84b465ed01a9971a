"""The ``/bot`` commands, read on repairbot's own fix PRs only (TensorRT-LLM's CI grammar):
``run``, ``kill``, ``skip``, ``reuse-pipeline``. One module per command, each declaring its
``COMMAND``.
"""
