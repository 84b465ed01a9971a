"""Stage 2, repair: a run's attempt (`start`: refuse a run that keeps dying, read its policy
once), where it happens and where its fix goes (`target`, `untrusted_heads`,
`trusted_config`), the sweep and fix, then the steps after it (`steps`, `already_fixed`), the
pure decisions (`plan`), the run's state and timeline (`run_state`, `stage_times`), the warm
import check for the next attempt (`import_spare`), and `/repairbot apply-fix` (`apply_fix`).
The task is `task.repair`.
"""
