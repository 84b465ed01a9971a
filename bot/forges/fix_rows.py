"""The ``fixes`` row of a candidate, inserted once per dedupe key (every forge records its fix
the same way; the unique index on open dedupe keys makes concurrent runs agree on one), and the
``fix_comments`` row mirroring a status a forge set."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.db.crud import open_fix_with_key
from bot.db.models import Fix, FixComment, RepairRun
from bot.forges.base import Candidate, Linked, StatusState


def fix_row(c: Candidate, *, forge: str, head_sha: str, diff: str) -> Fix:
    """The row describing candidate ``c`` as a fix on ``forge`` whose branch is at ``head_sha``."""
    return Fix(
        forge=forge,
        repository=c.repository,
        dedupe_key=c.key,
        contract_key=c.contract_key,
        signature=c.signature,
        base_ref=c.base_ref,
        base_sha=c.base_sha,
        branch=c.branch,
        head_sha=head_sha,
        title=c.text.title,
        body=c.text.body,
        files=c.files,
        violations=c.violations,
        violation_keys=c.violation_keys,
        diff=diff,
        codemods=list(c.codemods),
    )


def insert_fix(session: Session, c: Candidate, row: Fix, *, lost_race: str) -> Fix | Linked:
    """Insert ``row`` and link ``c``'s run to it; the fix that won when another run inserted the
    same key first (``lost_race`` says so)."""
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:
        other = open_fix_with_key(session, dedupe_key=c.key)
        return Linked(other.id if other else None, None, lost_race)
    session.get_one(RepairRun, c.run_id).fix_id = row.id
    return row


def status_comment(
    fix: Fix, state: StatusState, context: str, description: str, target_url: str | None
) -> FixComment:
    """The ``fix_comments`` row of a commit status set on ``fix``: every forge mirrors what it
    posts there, so the dashboard shows one history whatever the forge."""
    body = description if target_url is None else f"{description} ({target_url})"
    return FixComment(fix_id=fix.id, kind="status", context=context, state=state, body=body)
