"""What humans changed on our PR after the bot's last push, with merges of the base left out.

GitHub's "Update branch" merges the base into the PR's branch: a merge commit whose parents are
the PR's head and the base's tip, and whose tree is their clean merge. It brings the base's
changes in and changes nothing of the fix. What does change the fix: a human's own commits, and
whatever a merge commit holds that the clean merge of its parents does not (a conflict resolved
by hand, an edit made in the merge).

The PR's commits after the bot's head are those that descend from it (``rev-list
--ancestry-path``); a parent of one of their merges that does not descend from it brought
history in from elsewhere: the base. Untouched by humans, the merged head would be the bot's
head merged cleanly with the newest of those parents (``git merge-tree``: objects only, no
worktree, no hooks); the diff from that tree to the merged head's is the humans' edits and none
of the base's. Several updates read the same way: each later base tip holds the earlier ones. A
merge whose tree is not a clean merge shows as the difference (conflict markers against the
resolution, when the merge conflicted).

Where that reading does not apply, the plain diff from the bot's head is read, as before this
existed, and counts as edited: history rewritten under the bot's head (a force-push, "Update
with rebase"), brought-in tips that do not follow one another, more than ``MAX_PATH_COMMITS``
commits after the bot's head, or a merge git refuses. A merge of any history that does not hold
the bot's head is read as a base update: what it brings in is not counted.
"""

from __future__ import annotations

from pathlib import Path

from bot.git import GitError, diff, git, merge_tree, run_git

# A fix PR has a handful of commits after the bot's head; past this, the plain diff is read.
MAX_PATH_COMMITS = 1_000


def human_diff(repo: Path, bot: str, merged: str) -> str:
    """The unified diff of what humans changed between the bot's head ``bot`` and the merged
    head ``merged`` (commits of ``repo``), without what merges of the base brought in; empty
    when they changed nothing. Raises ``GitError`` when a commit is missing from ``repo``."""
    untouched = untouched_tree(repo, bot, merged)
    return diff(repo, untouched or bot, merged)


def untouched_tree(repo: Path, bot: str, merged: str) -> str | None:
    """The tree ``merged`` would have if no human had changed anything: the bot's head merged
    with the base tips merged into the branch after it. None when nothing was merged in (the
    bot's head is then the right start) or when the history cannot be read that way."""
    if not is_ancestor(repo, bot, merged):
        return None
    listed = git(
        repo, "rev-list", "--ancestry-path", "--parents", f"--max-count={MAX_PATH_COMMITS + 1}",
        "--end-of-options", f"{bot}..{merged}",
    ).split("\n")  # fmt: skip
    path = [line.split() for line in listed if line.strip()]
    if len(path) > MAX_PATH_COMMITS:
        return None
    after_bot = {commit[0] for commit in path} | {bot}
    tips = {p for commit in path if len(commit) > 2 for p in commit[1:] if p not in after_bot}
    if not tips:
        return None
    # The newest tip holds every other one when they are one branch's tips over time.
    newest = git(repo, "merge-base", "--independent", "--end-of-options", *sorted(tips)).split()
    if len(newest) != 1:
        return None
    try:
        tree, _clean = merge_tree(repo, bot, newest[0])
    except GitError:
        return None
    return tree


def is_ancestor(repo: Path, ancestor: str, commit: str) -> bool:
    """Whether ``ancestor`` is ``commit`` or one of its ancestors; raises ``GitError`` when
    either is missing."""
    result = run_git(repo, "merge-base", "--is-ancestor", "--end-of-options", ancestor, commit)
    if result.returncode not in (0, 1):
        reason = result.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"git merge-base --is-ancestor failed in {repo}: {reason}")
    return result.returncode == 0
