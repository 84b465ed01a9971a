"""Publishing a fix on GitLab without ever duplicating one: a merge request per dedupe key.

An open fix of ours with the same violations (our database) → link to it; otherwise reserve the
fix row (the unique index on open dedupe keys makes concurrent runs agree on one), push the
branch and open the merge request once per fix row (the outbox's key: a retried or resumed run
finds the one it opened). Every push carries only the trusted base's history and the commit
made here (``bot.forges.provenance.check_push``). Only ``fixes`` rows are written here; the
run's states are the pipeline's.
"""

from __future__ import annotations

from bot.config import Settings
from bot.db.crud import open_fix_with_key
from bot.db.models import Fix
from bot.db.session import session_scope
from bot.forges.base import Candidate, Linked, Opened, PublishOutcome
from bot.forges.fix_rows import fix_row, insert_fix
from bot.forges.gitlab.api import GitLabApi
from bot.forges.gitlab.remote import push_branch
from bot.forges.provenance import check_push
from bot.git import commit_all, diff


def publish(settings: Settings, api: GitLabApi, c: Candidate) -> PublishOutcome:
    """Link to the open fix with the same key, or push the branch and open the merge request."""
    with session_scope(settings.resolved_database_url) as session:
        existing = open_fix_with_key(session, dedupe_key=c.key)
        if existing is not None and existing.id != c.own_fix:
            why = f"fix #{existing.id} ({existing.url or 'being opened'}) covers it"
            return Linked(existing.id, existing.url, why)
        resumed = existing.id if existing is not None else None
    if resumed is not None:  # our own, reserved by an attempt that was killed: resume it
        return _open(settings, api, c, resumed)
    with session_scope(settings.resolved_database_url) as session:
        row = fix_row(c, forge="gitlab", head_sha=c.base_sha, diff="")
        inserted = insert_fix(session, c, row, lost_race="another run is opening the same fix")
        if isinstance(inserted, Linked):
            return inserted
        fix_id = inserted.id
    return _open(settings, api, c, fix_id)


def _open(settings: Settings, api: GitLabApi, c: Candidate, fix_id: int) -> Opened:
    """Commit, push the branch and open the merge request of the reserved fix ``fix_id``."""
    assert c.base_ref is not None, "a GitLab candidate always names its target branch"
    head = commit_all(c.worktree, c.text.commit_message)
    check_push(
        c.repo, head, trusted=[c.trusted_tip or ""], made={head}, where=f"{c.repository} {c.branch}"
    )
    push_branch(settings, c.repository, c.repo, branch=c.branch, commit=head, token=api.token())
    merge_request = api.open_merge_request(
        c.repository,
        key=f"merge-request:{c.repository}:{c.key}:{fix_id}",
        branch=c.branch,
        base=c.base_ref,
        title=c.text.title,
        body=c.text.body,
    )
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(Fix, fix_id)
        iid = int(merge_request.remote_id)
        row.number, row.url, row.pr_number = iid, merge_request.url, iid
        row.head_sha, row.diff = head, diff(c.repo, c.base_sha, head)
        row.bot_head_sha = head  # what a merge is compared with: did a human edit it?
        return Opened(fix_id, f"merge request !{iid} on {c.branch}")
