"""What a crash left is pruned at start: stale work dirs, and registrations of deleted ones."""

from __future__ import annotations

import shutil
import uuid

from bot.db.models import Fix
from bot.db.session import session_scope
from bot.git import fresh_worktree
from bot.pipeline.reconcile.cleanup import prune_stale_work
from bot.runner.workdirs import leased
from tests.bot.runner.conftest import tiny_repo  # noqa: F401 - the fixture
from tests.bot.runner.test_workdirs import registered


def _record_fix(settings, repo) -> None:
    with session_scope(settings.resolved_database_url) as session:
        session.add(
            Fix(
                forge="local",
                repository=str(repo.path),
                dedupe_key=uuid.uuid4().hex,
                signature="s",
                base_sha=repo.base,
                branch="b",
                head_sha=repo.base,
                title="t",
                body="",
                diff="",
            )
        )


def test_crash_leftovers_are_pruned_and_live_work_is_kept(settings, tiny_repo, tmp_path):  # noqa: F811
    settings = settings.model_copy(update={"runner_dir": tmp_path / "runs"})
    _record_fix(settings, tiny_repo)
    runs, repairs = settings.runner_root, settings.worktrees_dir.resolve()
    wiped = fresh_worktree(tiny_repo.path, runs / "verification-1-aa" / "after", tiny_repo.base)
    left = fresh_worktree(tiny_repo.path, repairs / "run-2-bb", tiny_repo.base)  # present
    with leased(runs / "verification-3-cc") as live_dir:
        live = fresh_worktree(tiny_repo.path, live_dir / "after", tiny_repo.base)
        shutil.rmtree(wiped.parent)  # registered, directory gone (a wiped temp dir)
        assert sorted(registered(tiny_repo.path)) == sorted([wiped, left, live])

        pruned = prune_stale_work(settings)

        assert pruned.work_dirs == [left] and pruned.repositories == [tiny_repo.path]
        assert registered(tiny_repo.path) == [live] and live.is_dir()
        assert not left.exists()
