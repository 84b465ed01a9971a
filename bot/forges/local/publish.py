"""Publishing a fix on the local forge: a commit on a branch of the repository, and its row.

An open fix with the same violations (the same dedupe key) covers the candidate; otherwise the
changes are committed, the commit's provenance is checked (``bot.forges.provenance``), the fix
branch is pointed at it and the ``fixes`` row is inserted (the unique index on open dedupe keys
makes concurrent runs agree on one).
"""

from __future__ import annotations

from bot.config import Settings
from bot.db.crud import open_fix_with_key
from bot.db.session import session_scope
from bot.forges.base import Candidate, Linked, Opened, PublishOutcome
from bot.forges.fix_rows import fix_row, insert_fix
from bot.forges.provenance import check_push
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
    check_push(c.repo, head, trusted=[c.trusted_tip or ""], made={head}, where=c.branch)
    set_branch(c.repo, c.branch, head)
    return _record(settings, c, head)


def _record(settings: Settings, c: Candidate, head: str) -> PublishOutcome:
    """Insert the fix row and link the run to it, in one transaction."""
    with session_scope(settings.resolved_database_url) as session:
        row = fix_row(c, forge="local", head_sha=head, diff=diff(c.repo, c.base_sha, head))
        inserted = insert_fix(session, c, row, lost_race="another run opened the same fix first")
        if isinstance(inserted, Linked):
            return inserted
        row.number, row.bot_head_sha = row.id, head
        row.url = f"{settings.public_url}/fixes/{row.id}"
        return Opened(row.id, f"fix #{row.id} on {c.branch}")
