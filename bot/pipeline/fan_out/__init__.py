"""Fan-out: a PR whose pipeline failed because of its base branch (`pr_pipeline`) gets one
notice (`text`), updated when the fix merges (`task`).
"""
