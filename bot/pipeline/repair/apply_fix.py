"""The ``repairbot.apply_fix`` task: the work of one ``/repairbot apply-fix`` invocation.

Thin: the work is ``bot.commands.any_pr.apply_fix_run`` (which answers GitHub's refusals while
working itself). A git or GitHub hiccup — a fetch that fails, a rate limit, a dropped connection, an
error while posting the answer — retries the task; after the last retry the invocation is
answered with the error, so no comment waits for ever on a reply.
"""

from __future__ import annotations

import httpx
from github import GithubException

from bot.commands.any_pr.apply_fix_run import apply_fix_run, give_up
from bot.forges.github.retry import RateLimited
from bot.git import GitError
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app


@app.task(name=task_names.APPLY_FIX, base=RepairbotTask, bind=True)
def apply_fix(self: RepairbotTask, invocation_id: int, comment_id: int) -> str:
    """Fix the PR of invocation ``invocation_id`` and answer comment ``comment_id``."""
    try:
        return apply_fix_run(self.settings, invocation_id, comment_id)
    except (GitError, GithubException, RateLimited, httpx.TransportError) as exc:
        if self.request.retries >= self.max_retries:
            give_up(self.settings, invocation_id, comment_id, str(exc))
            return "error"
        raise TransientError(str(exc)) from exc
