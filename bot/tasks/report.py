"""Stage 4: tell the PR what a verification found (commit status + comment), retried on its own.

Posting is separate from verifying so that a rate limit or a forge outage never repeats a test
run; the comment carries a key, so a retried task does not post it twice.
"""

from __future__ import annotations

from bot.db.models import Verification
from bot.forge.base import forge_for
from bot.github.retry import RateLimited
from bot.runner.report import STATUS_CONTEXT, comment_body, status_for
from bot.tasks.base import RepairbotTask, TransientError
from bot.tasks.celery_app import app


@app.task(name="repairbot.report_verification", base=RepairbotTask, bind=True)
def report_verification(self: RepairbotTask, verification_id: int) -> None:
    """Post verification ``verification_id``'s status and comment on its fix PR."""
    with self.session() as session:
        verification = session.get_one(Verification, verification_id)
        fix = verification.fix
        forge = forge_for(fix, self.settings)
        state, description = status_for(
            verification.verdict, verification.state, verification.reason
        )
        results = verification.results
        body = comment_body(
            verification_id=verification.id,
            verdict=verification.verdict,
            state=verification.state,
            reason=verification.reason,
            device=verification.device or "unknown",
            host=verification.host or "",
            queue=verification.queue or "",
            requested_queue=verification.requested_queue,
            on_requested=bool(verification.on_requested_device),
            seconds=float(results.get("seconds", 0.0)),
            tests=results.get("tests", []),
            flaky=results.get("flaky", []),
            problems=results.get("problems", []),
            isolation=str(results.get("isolation", "")),
        )
        try:
            forge.set_status(
                session, fix, state=state, context=STATUS_CONTEXT, description=description
            )
            forge.comment(session, fix, body, key=f"verification-{verification.id}")
        except RateLimited as exc:
            raise TransientError(str(exc)) from exc
