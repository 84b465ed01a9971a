"""Every task's name, in one place: senders and the task definitions both use these constants."""

from __future__ import annotations

from typing import Final

PROCESS_DELIVERY: Final = "repairbot.process_delivery"
TRIAGE: Final = "repairbot.triage"
REPAIR: Final = "repairbot.repair"
VERIFY: Final = "repairbot.verify"
# The wire name predates the stage's name (announce): messages already queued keep their task.
ANNOUNCE_VERIFICATION: Final = "repairbot.report_verification"
RECONCILE: Final = "repairbot.reconcile"
CONTRACT_CHECK: Final = "repairbot.contract_check"
CONTRACT_RECHECK: Final = "repairbot.contract_recheck"
APPLY_FIX: Final = "repairbot.apply_fix"  # /repairbot apply-fix: (invocation id, comment id)
PR_NOTICE: Final = "repairbot.pr_notice"  # a PR pipeline's run: its PR told of the fix
PR_NOTICES_REFRESH: Final = "repairbot.pr_notices_refresh"  # a fix changed: (fix id)
MERGE_OUTCOME: Final = "repairbot.merge_outcome"  # our fix merged from another head: (fix id)
SEND_GITHUB_WRITE: Final = "repairbot.send_github_write"  # a deferred GitHub write: (row id)
# /bot run on a fix PR Buildkite built: (invocation id, organization, pipeline, build number)
BUILDKITE_REBUILD: Final = "repairbot.buildkite_rebuild"
DISPATCH: Final = "repairbot.dispatch"  # several tasks of one name: (task name, [args, ...])
REPAIR_QUEUE: Final = "repair"  # where every repairbot.* task goes unless routed elsewhere
