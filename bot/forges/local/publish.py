"""Publishing a fix on the local forge: a commit on a branch of the repository, and its row.

An open fix with the same violations (the same dedupe key) covers the candidate; otherwise the
changes are committed, the fix branch is pointed at the commit and the ``fixes`` row is inserted
(the unique index on open dedupe keys makes concurrent runs agree on one).
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from bot.config import Settings
from bot.db.crud import open_fix_with_key
from bot.db.models import Fix, RepairRun
from bot.db.session import session_scope
from bot.forges.base import Candidate, Linked, Opened, PublishOutcome
from bot.git import commit_all, diff, set_branch


def publish(settings: Settings, c: Candidate) -> PublishOutcome:
    """Link to the open fix with the same key, or commit, set the branch and record the fix."""
    with session_scope(settings.resolved_database_url) as session:
        existing = open_fix_with_key(session, dedupe_key=c.key)
        if existing is not None and existing.id == c.own_fix:
            # An earlier attempt recorded this fix and was killed before the run said so.
            return Opened(existing.id, f"fix #{existing.id} on {existing.branch}")
        if existing is not None:
            return Linked(existing.id, None, f"fix #{existing.id} already covers it")
    head = commit_all(c.worktree, c.text.commit_message)
    set_branch(c.repo, c.branch, head)
    return _record(settings, c, head)


def _record(settings: Settings, c: Candidate, head: str) -> PublishOutcome:
    """Insert the fix row and link the run to it, in one transaction."""
    with session_scope(settings.resolved_database_url) as session:
        row = Fix(
            forge="local",
            repository=c.repository,
            dedupe_key=c.key,
            signature=c.signature,
            base_ref=c.base_ref,
            base_sha=c.base_sha,
            branch=c.branch,
            head_sha=head,
            title=c.text.title,
            body=c.text.body,
            files=c.files,
            violations=c.violations,
            diff=diff(c.repo, c.base_sha, head),
        )
        try:
            with session.begin_nested():
                session.add(row)
        except IntegrityError:
            other = open_fix_with_key(session, dedupe_key=c.key)
            return Linked(
                other.id if other else None, None, "another run opened the same fix first"
            )
        row.number = row.id
        row.url = f"{settings.public_url}/fixes/{row.id}"
        session.get_one(RepairRun, c.run_id).fix_id = row.id
        return Opened(row.id, f"fix #{row.id} on {c.branch}")
