"""``bot.git.commit_all`` dated: a publication redone after a crash makes the same commit, so
re-pushing it to the same branch (forced, as the bot does to its own branches) changes nothing
on the remote: no new commit, and a PR from that branch keeps its head."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.git import commit_all, git, resolve_commit

AT = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _base(tmp_path: Path) -> tuple[Path, Path, str]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "--quiet", "--initial-branch", "main")
    (work / "a.py").write_text("A = 1\n")
    base = commit_all(work, "base")
    git(work, "push", "--quiet", str(remote), "main")
    return remote, work, base


def _attempt(work: Path, base: str) -> str:
    """One attempt at the fix: from the base, the same change, the same message."""
    git(work, "checkout", "--quiet", "--force", "--detach", base)
    (work / "a.py").write_text("A = 2\n")
    return commit_all(work, "Fix A", at=AT)


def test_the_same_change_redone_is_the_same_commit_and_its_repush_a_no_op(tmp_path):
    remote, work, base = _base(tmp_path)
    first = _attempt(work, base)
    git(work, "push", "--quiet", str(remote), f"+{first}:refs/heads/repairbot/fix")
    second = _attempt(work, base)  # the worker was killed after the push: the run is redone
    assert second == first
    said = git(work, "push", "--porcelain", str(remote), f"+{second}:refs/heads/repairbot/fix")
    assert "[up to date]" in said
    assert resolve_commit(remote, "refs/heads/repairbot/fix") == first
    assert git(remote, "rev-list", "--count", "refs/heads/repairbot/fix").strip() == "2"


def test_undated_commits_differ_by_their_time(tmp_path):
    _, work, base = _base(tmp_path)
    git(work, "checkout", "--quiet", "--detach", base)
    (work / "a.py").write_text("A = 3\n")
    dated = commit_all(work, "Fix A", at=AT)
    git(work, "checkout", "--quiet", "--detach", base)
    (work / "a.py").write_text("A = 3\n")
    assert commit_all(work, "Fix A") != dated  # now, not 2026-12-04 12:00
