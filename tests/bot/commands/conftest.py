"""Fixtures shared by the command tests."""

from __future__ import annotations

import pytest

from bot.db.models import Fix
from bot.db.session import session_scope
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import push_branch, sync_mirror
from tests.bot.conftest import REPO


@pytest.fixture
def fix_pr(gh_settings, github_api, target, task_settings):
    """An open fix PR of ours on the fake GitHub, recorded as a Fix; tasks use these settings."""
    task_settings(gh_settings)
    repo, head = target
    forge = GitHubForge(gh_settings)
    mirror = sync_mirror(gh_settings, REPO, forge.token())
    push_branch(
        gh_settings,
        REPO,
        mirror,
        branch="repairbot/c/1",
        commit=head,
        token=forge.token(),
        force=True,
    )
    pull = forge.open_pull(
        REPO, key="pull:t", branch="repairbot/c/1", base="main", title="t", body="b"
    )
    with session_scope(gh_settings.resolved_database_url) as session:
        fix = Fix(
            forge="github",
            repository=REPO,
            number=int(pull.remote_id),
            url=pull.url,
            dedupe_key="k",
            signature="s",
            base_sha=head,
            branch="repairbot/c/1",
            head_sha=head,
            title="t",
            body="b",
            diff="",
        )
        session.add(fix)
        session.flush()
        fix_id = fix.id
    repo.permissions.update({"writer": "write", "admin": "admin", "reader": "read"})
    return repo, int(pull.remote_id), fix_id, head
