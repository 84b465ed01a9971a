"""The humans' edits of a fix PR, read from real git histories built here: the bot's branch off
``main``, the base moving on, GitHub's "Update branch" merges (``git merge`` of ``main`` into the
branch: parents the PR's head and the base's tip, the clean merge's tree), human commits and
merges holding more than a clean merge. Each case states what a maintainer did and whether the
fix counts as edited; the diff must hold only the humans' lines, never the base's."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.git import GitError, commit_all, git, resolve_commit
from bot.pipeline.human_edits import MAX_PATH_COMMITS, human_diff, is_ancestor, untouched_tree

FIX = "".join(f"line {n}\n" for n in range(1, 21))
HUMAN = "# reviewed by a maintainer"


def _changed(text: str) -> list[str]:
    """The diff's added and removed lines (not its file headers)."""
    return [s for s in text.splitlines() if s[:1] in "+-" and not s.startswith(("+++", "---"))]


def _edit(repo: Path, name: str, old: str, new: str, message: str) -> str:
    path = repo / name
    path.write_text(path.read_text().replace(old, new, 1))
    return commit_all(repo, message)


def _update_branch(repo: Path) -> str:
    """GitHub's "Update branch": the base merged into the PR's branch, nothing else."""
    git(repo, "merge", "--quiet", "--no-ff", "--no-edit", "main")
    return resolve_commit(repo, "HEAD")


def _base_moves(repo: Path, n: int) -> None:
    """Another PR lands on ``main``: a change to the base's own file and a far line of fix.py."""
    git(repo, "checkout", "--quiet", "main")
    _edit(repo, "base.py", f"B = {n - 1}\n", f"B = {n}\n", f"base {n}")
    _edit(repo, "fix.py", f"line {21 - n}\n", f"line {21 - n} (base {n})\n", f"base fix {n}")
    git(repo, "checkout", "--quiet", "fix")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """``main`` with two files; branch ``fix`` holds the bot's commit (checked out)."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch", "main")
    (path / "fix.py").write_text(FIX)
    (path / "base.py").write_text("B = 0\n")
    commit_all(path, "start")
    git(path, "checkout", "--quiet", "-b", "fix")
    _edit(path, "fix.py", "line 2\n", "line 2 fixed by the bot\n", "the bot's fix")
    return path


@pytest.fixture
def bot(repo: Path) -> str:
    return resolve_commit(repo, "fix")


def test_a_merged_as_the_bot_pushed_it_is_unchanged(repo, bot):
    assert human_diff(repo, bot, bot) == ""


def test_b_update_branch_merges_are_not_edits(repo, bot):
    _base_moves(repo, 1)
    once = _update_branch(repo)
    assert human_diff(repo, bot, once) == ""
    _base_moves(repo, 2)
    twice = _update_branch(repo)
    assert human_diff(repo, bot, twice) == ""
    assert git(repo, "diff", bot, twice) != ""  # the old reading: the base's changes, an "edit"


def test_c_a_human_commit_is_an_edit_with_its_own_lines(repo, bot):
    _base_moves(repo, 1)  # the base moved but was never merged in: it is not in the diff
    edited = _edit(repo, "fix.py", "line 5\n", f"line 5\n{HUMAN}\n", "review")
    assert _changed(human_diff(repo, bot, edited)) == [f"+{HUMAN}"]


@pytest.mark.parametrize("human_first", [True, False])
def test_d_update_branch_and_a_human_commit_show_the_human_lines_only(repo, bot, human_first):
    if human_first:
        _edit(repo, "fix.py", "line 5\n", f"line 5\n{HUMAN}\n", "review")
    _base_moves(repo, 1)
    _update_branch(repo)
    if not human_first:
        _edit(repo, "fix.py", "line 5\n", f"line 5\n{HUMAN}\n", "review")
    _base_moves(repo, 2)
    merged = _update_branch(repo)
    assert _changed(human_diff(repo, bot, merged)) == [f"+{HUMAN}"]


def test_e_a_merge_changed_by_hand_is_an_edit(repo, bot):
    _base_moves(repo, 1)
    git(repo, "merge", "--quiet", "--no-ff", "--no-commit", "main")
    (repo / "base.py").write_text("B = 1  # kept by hand\n")
    merged = commit_all(repo, "Merge main, with a change")
    assert _changed(human_diff(repo, bot, merged)) == ["-B = 1", "+B = 1  # kept by hand"]


def test_e_a_conflict_resolved_by_hand_is_an_edit(repo, bot):
    git(repo, "checkout", "--quiet", "main")
    _edit(repo, "fix.py", "line 2\n", "line 2 changed on the base\n", "the base's own line 2")
    git(repo, "checkout", "--quiet", "fix")
    git(repo, "merge", "--quiet", "--no-edit", "main", check=False)
    assert git(repo, "diff", "--name-only", "--diff-filter=U").split() == ["fix.py"]
    (repo / "fix.py").write_text(FIX.replace("line 2\n", "line 2 resolved\n"))
    merged = commit_all(repo, "Merge main, conflict resolved")
    assert len(git(repo, "rev-list", "--parents", "-n1", merged).split()) == 3
    changed = _changed(human_diff(repo, bot, merged))
    assert "+line 2 resolved" in changed and any(s.startswith("-<<<<<<<") for s in changed)


def test_f_a_squash_merge_is_read_at_the_pr_head(repo, bot):
    """GitHub squashes the PR onto the base: the merged head kept is the PR's head (the
    ``closed`` event's ``head.sha``), not the base's new commit, so the squash reads nothing."""
    _base_moves(repo, 1)
    pr_head = _update_branch(repo)
    git(repo, "checkout", "--quiet", "main")
    git(repo, "merge", "--quiet", "--squash", "fix")
    squashed = commit_all(repo, "Fix (#1)")
    assert human_diff(repo, bot, pr_head) == ""
    assert not is_ancestor(repo, bot, squashed)  # the squash commit is not our history


def test_g_the_bots_own_later_push_is_not_an_edit(repo, bot):
    """The bot extends its PR (after an Update branch) and ``fixes.bot_head_sha`` moves to its
    new head (``tests/bot/forges/github/test_publish.py``): the merge reads from there."""
    _base_moves(repo, 1)
    _update_branch(repo)
    extended = _edit(repo, "fix.py", "line 3\n", "line 3 fixed by the bot\n", "more fixes")
    _base_moves(repo, 2)
    merged = _update_branch(repo)
    assert human_diff(repo, extended, merged) == ""
    assert human_diff(repo, extended, extended) == ""


def test_a_rewritten_history_reads_the_plain_diff(repo, bot):
    """A force-push (or "Update with rebase") leaves the bot's head out of the history: the
    plain diff from it is read, and counts as an edit."""
    _base_moves(repo, 1)
    git(repo, "rebase", "--quiet", "main")
    rebased = resolve_commit(repo, "HEAD")
    assert untouched_tree(repo, bot, rebased) is None
    assert human_diff(repo, bot, rebased) == git(repo, "diff", "--no-color", bot, rebased) != ""


def test_tips_of_two_branches_merged_in_read_the_plain_diff(repo, bot):
    """The base and another branch merged in: no one tip holds the other, so what the head
    would be untouched is not one clean merge; the plain diff is read, as an edit."""
    git(repo, "branch", "side", "main")
    _base_moves(repo, 1)
    git(repo, "checkout", "--quiet", "side")
    (repo / "side.py").write_text("S = 1\n")
    commit_all(repo, "a side branch")
    git(repo, "checkout", "--quiet", "fix")
    _update_branch(repo)
    git(repo, "merge", "--quiet", "--no-ff", "--no-edit", "side")
    merged = resolve_commit(repo, "HEAD")
    assert untouched_tree(repo, bot, merged) is None
    assert "+S = 1" in human_diff(repo, bot, merged)


def test_a_long_history_after_the_bots_head_reads_the_plain_diff(repo, bot, monkeypatch):
    # Building MAX_PATH_COMMITS real commits costs seconds; the bound is lowered to one.
    monkeypatch.setattr("bot.pipeline.human_edits.MAX_PATH_COMMITS", 1)
    _base_moves(repo, 1)
    _update_branch(repo)
    _base_moves(repo, 2)
    merged = _update_branch(repo)
    assert untouched_tree(repo, bot, merged) is None and MAX_PATH_COMMITS > 1
    assert human_diff(repo, bot, merged) != ""


def test_a_missing_commit_raises(repo, bot):
    with pytest.raises(GitError, match="merge-base"):
        human_diff(repo, "0" * 40, bot)
