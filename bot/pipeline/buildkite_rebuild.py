"""The ``repairbot.buildkite_rebuild`` task: the rebuild one ``/bot run`` asked for.

Thin: the work is ``bot.commands.fix_pr.rebuild.rebuild_run``. Buildkite rate limiting us past
what a worker waits, or not answering, retries the task; after the last retry the PR is told
the rebuild was given up, with the reason.
"""

from __future__ import annotations

from bot.commands.fix_pr.rebuild import give_up, rebuild_run
from bot.forges.buildkite.events import BuildRef
from bot.forges.buildkite.rest import BuildkiteUnavailable
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app


@app.task(name=task_names.BUILDKITE_REBUILD, base=RepairbotTask, bind=True)
def buildkite_rebuild(
    self: RepairbotTask, invocation_id: int, organization: str, pipeline: str, number: int
) -> str:
    """Rebuild build ``number`` of ``organization/pipeline`` and answer the invocation's PR."""
    ref = BuildRef(organization, pipeline, number)
    try:
        return rebuild_run(self.settings, invocation_id, ref)
    except BuildkiteUnavailable as exc:
        if self.request.retries >= self.max_retries:
            return give_up(self.settings, invocation_id, ref, str(exc))
        raise TransientError(str(exc)) from exc
