"""One fan-out notice brought up to date on GitHub: created once, then edited in place, the
newest planned text last, whatever number of tasks sync it at once.

Compare-and-set on the ``pr_notices`` row: each task plans the text the fix's facts give now in
a transaction that locks the row; a text other than the last planned one bumps ``version``. A
plan whose version is no longer the row's is dropped unsent (a newer one is being sent by its
own task). Each write goes through the outbox (counted against the per-minute cap): the
creation under the notice's key (one comment per (repository, PR, fix), ever), each edit under
``{key}:v{version}`` (two tasks planning the same text send it once). A plan overtaken while
its edit was in flight may have landed after the newer one; when that newer one had already
taken its slot, the newest text is sent once more under a new version (an extra edit, never an
older text left showing). The row keeps the digest of the text GitHub shows (``body_digest``)
and the newest version sent (``sent_version``).
"""

from __future__ import annotations

from dataclasses import dataclass

from github import GithubException
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, utcnow
from bot.db.records.opt_outs import opted_out
from bot.db.records.pr_notices import NoticeState, PrNotice
from bot.db.rows import contract_of
from bot.db.session import session_scope
from bot.forges.github.forge import GitHubForge
from bot.forges.github.outbox import has_started
from bot.forges.github.retry import RateLimited
from bot.pipeline.fan_out.text import NoticeFacts, body_digest, notice_body, verification_line
from bot.pipeline.task_base import TransientError

_GONE = (404, 410)  # no such PR (or repository): recorded as failed, never retried
_ROUNDS = 3  # sends of one sync: its own, and the newest text again when it was overtaken


def notice_key(notice: PrNotice) -> str:
    """The outbox key of a notice's comment: one comment per (repository, PR, fix), ever."""
    return f"pr-notice:{notice.repository}:{notice.pr_number}:{notice.fix_id}"


def edit_key(key: str, version: int) -> str:
    """The outbox key of the edit that sends version ``version`` of the notice ``key``."""
    return f"{key}:v{version}"


def facts_of(fix: Fix) -> NoticeFacts:
    """What a notice of ``fix`` says now."""
    contract = contract_of(fix.runs[0]) if fix.runs else None
    latest = fix.verifications[-1] if fix.verifications else None
    return NoticeFacts(
        fix_number=fix.number or 0,
        fix_url=fix.url or "",
        fix_state=fix.state,
        state_reason=fix.state_reason,
        base_ref=fix.base_ref or "the base branch",
        contract=contract.base if contract else fix.signature,
        forbidden=contract.forbidden if contract else "forward",
        hook=contract.hook if contract else "_forward_impl",
        violations=len(fix.violation_keys),
        verification=verification_line(
            latest.state if latest else None,
            latest.verdict if latest else None,
            latest.reason if latest else "",
        ),
    )


@dataclass(frozen=True)
class _Planned:
    """A notice's write, planned in one short transaction and sent outside any."""

    notice_id: int
    repository: str
    pr_number: int
    comment_id: str | None
    key: str
    body: str
    digest: str
    version: int


def _locked(session: Session, notice_id: int) -> PrNotice | None:
    return session.scalar(select(PrNotice).where(PrNotice.id == notice_id).with_for_update())


def _plan(settings: Settings, notice_id: int) -> _Planned | None:
    """The write the notice needs now (None: none, or it failed for good); a new text bumps
    the row's version."""
    with session_scope(settings.resolved_database_url) as session:
        notice = _locked(session, notice_id)
        if notice is None or notice.state == NoticeState.FAILED:
            return None
        if opted_out(session, repository=notice.repository, pr_number=notice.pr_number):
            return None  # the PR's author asked the bot to leave it alone (bot.db.records.opt_outs)
        fix = session.get_one(Fix, notice.fix_id)
        if fix.number is None:
            return None  # our PR is not open yet: its refresh follows the opening
        body = notice_body(facts_of(fix), notice.rerun_held)
        digest = body_digest(body)
        settled = notice.sent_version >= notice.version  # no newer text on its way
        if notice.comment_id is not None and digest == notice.body_digest and settled:
            notice.state = NoticeState.POSTED.value  # a refresh it owed found nothing to edit
            return None  # the text on GitHub says this already
        if digest != notice.planned_digest:
            notice.version, notice.planned_digest = notice.version + 1, digest
        key = notice_key(notice)
        return _Planned(
            notice.id,
            notice.repository,
            notice.pr_number,
            notice.comment_id,
            key,
            body,
            digest,
            notice.version,
        )


def _stale(settings: Settings, planned: _Planned) -> bool:
    """Whether a newer text was planned since (its own task sends it)."""
    with session_scope(settings.resolved_database_url) as session:
        notice = session.get_one(PrNotice, planned.notice_id)
        return notice.version != planned.version


def _send(forge: GitHubForge, planned: _Planned) -> tuple[str, str | None, bool]:
    """Create or edit the comment: its id, its address when known, whether it was an edit."""
    comment_id = planned.comment_id
    if comment_id is None:
        written = forge.post_comment(
            None, planned.repository, planned.pr_number, planned.body, key=planned.key
        )
        if written.fresh or planned.version <= 1:
            return written.remote_id, written.url, False
        comment_id = written.remote_id  # another task's creation, maybe of an older text
    edited = forge.edit_comment(
        planned.repository,
        planned.pr_number,
        int(comment_id),
        planned.body,
        key=planned.key,
        edit_key=edit_key(planned.key, planned.version),
    )
    return comment_id, edited.url, True


def sync_notice(settings: Settings, notice_id: int) -> str:
    """Post the notice, or edit it when its text changed; what happened, in words."""
    said = "nothing to write"
    for _ in range(_ROUNDS):
        planned = _plan(settings, notice_id)
        if planned is None:
            return said
        if _stale(settings, planned):
            return "a newer text is planned: its own task writes it"
        try:
            comment_id, url, edited = _send(GitHubForge(settings), planned)
        except RateLimited as exc:
            raise TransientError(str(exc)) from exc
        except GithubException as exc:
            if exc.status is None or exc.status >= 500:
                raise TransientError(f"GitHub answered {exc.status}: {exc.data}") from exc
            reason = _refusal(planned, exc)
            _failed(settings, planned, reason)
            return reason
        said = "edited" if edited else "posted"
        if _sent(settings, planned, comment_id=comment_id, url=url, edited=edited):
            return said
    return f"{said}; the newest text is still to be sent (the reconciler re-sends it)"


def _refusal(planned: _Planned, exc: GithubException) -> str:
    """Why GitHub refused a notice for good (a 4xx: retrying would be refused the same way)."""
    where = f"PR #{planned.pr_number} of {planned.repository}"
    if exc.status in _GONE:
        return f"{where} not found on GitHub ({exc.status}): no notice posted"
    message = exc.data.get("message", "") if isinstance(exc.data, dict) else ""
    said = f": {message}" if message else ""
    return f"GitHub refused the notice on {where} ({exc.status}{said})"


def _failed(settings: Settings, planned: _Planned, reason: str) -> None:
    with session_scope(settings.resolved_database_url) as session:
        notice = session.get_one(PrNotice, planned.notice_id)
        notice.state, notice.reason, notice.updated_at = NoticeState.FAILED.value, reason, utcnow()


def _sent(
    settings: Settings, planned: _Planned, *, comment_id: str, url: str | None, edited: bool
) -> bool:
    """Record a sent text; False when it was overtaken by a newer one that may have landed
    before it (the row's version is bumped: the caller sends the newest text again)."""
    with session_scope(settings.resolved_database_url) as session:
        notice = _locked(session, planned.notice_id)
        assert notice is not None
        notice.state, notice.reason = NoticeState.POSTED.value, ""
        notice.comment_id = notice.comment_id or comment_id
        notice.comment_url = notice.comment_url or url
        notice.edits += int(edited)
        notice.sent_version = max(notice.sent_version, planned.version)
        notice.updated_at = utcnow()
        if notice.version == planned.version:
            notice.body_digest = planned.digest  # nothing newer planned: GitHub shows ours
            return True
        if not has_started(session, edit_key(planned.key, notice.version)):
            return True  # the newest text is still to be sent: it lands after ours
        notice.version += 1
        return False
