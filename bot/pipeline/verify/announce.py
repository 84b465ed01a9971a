"""Stage 4, announce: tell the PR what a verification found (commit status + comment), retried
on its own.

Posting is separate from verifying so that a rate limit or a forge outage never repeats a test
run; the comment carries a key, so a retried task does not post it twice.
"""

from __future__ import annotations

from bot.config import Settings
from bot.db.models import Verification
from bot.db.session import session_scope
from bot.forges.github.retry import RateLimited
from bot.forges.select import forge_for
from bot.pipeline.fan_out.task import queue_refresh
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.runner.pr_summary import STATUS_CONTEXT, status_for, verification_comment


@app.task(name=task_names.ANNOUNCE_VERIFICATION, base=RepairbotTask, bind=True)
def announce_verification(self: RepairbotTask, verification_id: int) -> None:
    """Post verification ``verification_id``'s status and comment on its fix PR."""
    post_verification(self.settings, verification_id)


def post_verification(settings: Settings, verification_id: int) -> None:
    """Set the fix's commit status and post the verification comment (a rate limit: retried)."""
    with session_scope(settings.resolved_database_url) as session:
        verification = session.get_one(Verification, verification_id)
        fix = verification.fix
        forge = forge_for(fix, settings)
        state, description = status_for(
            verification.verdict, verification.state, verification.reason
        )
        body = verification_comment(verification)
        try:
            forge.set_status(
                session, fix, state=state, context=STATUS_CONTEXT, description=description
            )
            forge.comment(session, fix, body, key=f"verification-{verification.id}")
        except RateLimited as exc:
            raise TransientError(str(exc)) from exc
        queue_refresh(session, fix)  # the PRs told of this fix see its verification
