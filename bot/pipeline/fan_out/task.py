"""Fan-out: every PR whose pipeline failed because of a violation on its base branch gets ONE
comment saying which fix PR carries the root cause and how far it is, edited in place after.

One ``pr_notices`` row per (repository, PR, fix). The row is made in the transaction that
records the run's publication (``record_notice``), so a crash never forgets it; posting is a
task of its own (``pr_notice``), so a rate limit never repeats a repair. The comment is created
through the outbox under a key of the row (a retried task never posts twice) and later edited,
through the outbox too, only when its text changes (``bot.pipeline.fan_out.notice_sync``: the
newest planned text wins however many tasks sync one notice at once): when a verification
of the fix is announced, when the fix merges, is closed or superseded (``queue_refresh``, then
``pr_notices_refresh``). Once the fix merged, each notice's PR that is still open also gets the
repository's re-run command, if its base branch's ``.repairbot.toml`` names one
(``[fan_out] rerun_command``), once.

Only GitHub: the local forge has no PRs but its own, so no notice is recorded there.
"""

from __future__ import annotations

from datetime import timedelta

from github import GithubException
from sqlalchemy import and_, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixState, utcnow
from bot.db.records.opt_outs import opted_out
from bot.db.records.pr_notices import NoticeState, PrNotice
from bot.db.session import session_scope
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import sync_mirror
from bot.forges.github.pulls import WRITERS, PullState
from bot.forges.github.retry import RateLimited
from bot.pipeline.fan_out.notice_sync import notice_key, sync_notice
from bot.pipeline.repair.trusted_config import config_text
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_pr_notice, start_pr_notices_refresh
from fixers.contracts.model import CONFIG_FILE, parse_config

__all__ = ["notice_key", "pr_notice", "pr_notices_refresh", "refresh_notices", "sync_notice"]


@app.task(name=task_names.PR_NOTICE, base=RepairbotTask, bind=True)
def pr_notice(self: RepairbotTask, notice_id: int) -> list[str]:
    """Post or update notice ``notice_id`` on its PR, and once its fix merged post the re-run
    command there; what happened (the worker logs it)."""
    return sync_and_rerun(self.settings, notice_id)


@app.task(name=task_names.PR_NOTICES_REFRESH, base=RepairbotTask, bind=True)
def pr_notices_refresh(self: RepairbotTask, fix_id: int) -> list[str]:
    """Fix ``fix_id`` changed: update each of its notices (and post re-run commands once it
    merged); what happened to each (the worker logs it)."""
    return refresh_notices(self.settings, fix_id)


def record_notice(
    session: Session,
    *,
    pr_number: int,
    fix: Fix,
    changed_fix: bool = False,
    failed_head: str | None = None,
) -> PrNotice | None:
    """In the caller's transaction: the notice of ``pr_number`` for ``fix`` (made once: a second
    failure from the same PR finds it), its write queued after the commit.

    ``changed_fix``: the run opened or extended ``fix``, so every notice of it is refreshed (the
    ones recorded before the PR had a number too); else only this one is sent. ``failed_head``:
    the PR head that failed (a re-run command is posted later only while it is still the head).
    """
    if fix.forge != "github":
        return None  # the local forge has no PRs but its own
    if _is_our_fix_pr(session, fix.repository, pr_number):
        return None  # our own fix PR's pipeline: it carries the fix, it needs no notice of it
    notice = session.scalar(
        select(PrNotice).where(
            PrNotice.repository == fix.repository,
            PrNotice.pr_number == pr_number,
            PrNotice.fix_id == fix.id,
        )
    )
    if notice is None:
        try:
            with session.begin_nested():
                notice = PrNotice(
                    repository=fix.repository,
                    pr_number=pr_number,
                    fix_id=fix.id,
                    failed_head=failed_head,
                )
                session.add(notice)
        except IntegrityError:  # another run of the same PR recorded it first, and sends it
            return None
    if changed_fix:
        start_pr_notices_refresh(session, fix.id)
    else:
        start_pr_notice(session, notice.id)
    return notice


def _is_our_fix_pr(session: Session, repository: str, number: int) -> bool:
    found = session.scalar(
        select(Fix.id)
        .where(Fix.forge == "github", Fix.repository == repository, Fix.number == number)
        .limit(1)
    )
    return found is not None


def queue_refresh(session: Session, fix: Fix) -> None:
    """In the caller's transaction: refresh ``fix``'s notices after the commit (if it has any).

    Each notice is marked pending in the same transaction: the refresh task may be lost (a
    broker that restarts with nothing saved), and the reconciler re-sends pending notices, so
    the edit (and, once the fix merged, the re-run command) still goes out.
    """
    owing = PrNotice.state != NoticeState.FAILED.value
    notices = session.scalars(select(PrNotice).where(PrNotice.fix_id == fix.id, owing)).all()
    if not notices:
        return
    for notice in notices:
        notice.state, notice.updated_at = NoticeState.PENDING.value, utcnow()
    start_pr_notices_refresh(session, fix.id)


def resend_pending(session: Session, *, older_than: timedelta) -> int:
    """The reconciler's part: re-send each notice still pending, or whose newest planned text
    is unsent, ``older_than`` after it was recorded or last sent (its task was lost), whose fix
    PR has a number; how many."""
    cutoff = utcnow() - older_than
    stale = session.scalars(
        select(PrNotice)
        .join(Fix, Fix.id == PrNotice.fix_id)
        .where(
            # Never posted, or posted with a newer text planned whose task was lost.
            or_(
                PrNotice.state == NoticeState.PENDING.value,
                and_(
                    PrNotice.state == NoticeState.POSTED.value,
                    PrNotice.sent_version < PrNotice.version,
                ),
            ),
            PrNotice.updated_at < cutoff,
            Fix.number.is_not(None),
        )
    ).all()
    # An opted-out PR's notice waits, unsent, until its author opts in again (then it goes).
    stale = [
        n for n in stale if not opted_out(session, repository=n.repository, pr_number=n.pr_number)
    ]
    for notice in stale:
        notice.updated_at = utcnow()  # not stale again until another ``older_than`` passes
        start_pr_notice(session, notice.id)
    return len(stale)


def refresh_notices(settings: Settings, fix_id: int) -> list[str]:
    """Update every notice of fix ``fix_id``; once it merged, post the re-run commands."""
    with session_scope(settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        ids = list(
            session.scalars(
                select(PrNotice.id).where(PrNotice.fix_id == fix_id).order_by(PrNotice.id)
            )
        )
        merged = fix.state == FixState.MERGED.value
        repository, base_ref = fix.repository, fix.base_ref
    done = [sync_notice(settings, notice_id) for notice_id in ids]
    if not merged or not base_ref:
        return done
    return done + _post_reruns(settings, repository, base_ref, ids)


def sync_and_rerun(settings: Settings, notice_id: int) -> list[str]:
    """``sync_notice``, then the re-run command if the fix merged and the PR still owes it: a
    lost refresh, re-sent per notice by the reconciler, loses neither."""
    done = [sync_notice(settings, notice_id)]
    with session_scope(settings.resolved_database_url) as session:
        notice = session.get_one(PrNotice, notice_id)
        fix = session.get_one(Fix, notice.fix_id)
        owed = notice.rerun_comment_id is None and notice.rerun_held is None
        merged = fix.state == FixState.MERGED.value and bool(fix.base_ref) and owed
        repository, base_ref = fix.repository, fix.base_ref or ""
    if not merged:
        return done
    return done + _post_reruns(settings, repository, base_ref, [notice_id])


def _post_reruns(
    settings: Settings, repository: str, base_ref: str, notice_ids: list[int]
) -> list[str]:
    """The base branch's re-run command posted on each notice's PR (``post_rerun``), or why
    none is."""
    forge = GitHubForge(settings)
    try:
        command = rerun_command(settings, forge, repository, base_ref)
    except RateLimited as exc:
        raise TransientError(str(exc)) from exc
    if command is None:
        return ["no re-run command configured"]
    return [post_rerun(settings, forge, notice_id, command) for notice_id in notice_ids]


def rerun_command(
    settings: Settings, forge: GitHubForge, repository: str, base_ref: str
) -> str | None:
    """``[fan_out] rerun_command`` of ``.repairbot.toml`` on the base branch (trusted: never a
    PR head's); None when there is none, or the file is too large or invalid there."""
    mirror = sync_mirror(settings, repository, forge.token())
    text, _ = config_text(mirror, f"refs/heads/{base_ref}", f"{CONFIG_FILE} on {base_ref}")
    return parse_config(text, mirror).rerun_command if text is not None else None


def _unreviewed(
    forge: GitHubForge, repository: str, pull: PullState, failed_head: str | None
) -> str | None:
    """Why a re-run command must not be posted on ``pull`` (None: it may): its head is not the
    one that failed, and its author may not write to the repository. A CI that trusts the bot's
    account would otherwise run commits nobody reviewed."""
    if failed_head is None or pull.head_sha == failed_head:
        return None
    if forge.permission(repository, pull.author) in WRITERS:
        return None
    return f"its head moved to {pull.head_sha[:12]} since it failed at {failed_head[:12]}"


def _hold_rerun(settings: Settings, notice_id: int, why: str) -> None:
    """Record why, and edit the notice so that it says a maintainer must trigger CI."""
    with session_scope(settings.resolved_database_url) as session:
        notice = session.get_one(PrNotice, notice_id)
        if notice.rerun_held != why:
            notice.rerun_held = why
            start_pr_notice(session, notice.id)


def post_rerun(settings: Settings, forge: GitHubForge, notice_id: int, command: str) -> str:
    """Post ``command`` (the repository's re-run command) on the notice's PR, once, if the PR
    is still open, its notice was posted and its head is the one that failed (or its author
    may write to the repository)."""
    with session_scope(settings.resolved_database_url) as session:
        notice = session.get_one(PrNotice, notice_id)
        if notice.state != NoticeState.POSTED or notice.rerun_comment_id is not None:
            return "no re-run command to post"
        repository, number = notice.repository, notice.pr_number
        if opted_out(session, repository=repository, pr_number=number):
            return f"PR #{number} opted out: no re-run"
        key = f"pr-rerun:{notice_key(notice)}"
        failed_head = notice.failed_head
    try:
        pull = forge.pull(repository, number)
        if pull.state != "open":
            return f"PR #{number} is closed: no re-run"
        moved = _unreviewed(forge, repository, pull, failed_head)
        if moved is not None:
            _hold_rerun(settings, notice_id, moved)
            return f"PR #{number}: {moved}: no re-run"
        # As written, no hidden marker: a CI bot parses the whole comment.
        written = forge.post_comment(None, repository, number, command, key=key, marked=False)
    except RateLimited as exc:
        raise TransientError(str(exc)) from exc
    except GithubException as exc:  # a 4xx is final for this PR; the other PRs still get theirs
        if exc.status is None or exc.status >= 500:
            raise TransientError(f"GitHub answered {exc.status}: {exc.data}") from exc
        refused = f"re-run command refused on PR #{number} ({exc.status})"
        with session_scope(settings.resolved_database_url) as session:
            session.get_one(PrNotice, notice_id).reason = refused
        return refused
    with session_scope(settings.resolved_database_url) as session:
        session.get_one(PrNotice, notice_id).rerun_comment_id = written.remote_id
    return f"posted {command!r} on PR #{number}"
