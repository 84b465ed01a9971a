"""The loop guard for pushes: never push to a branch whose last N commits are bots'.

N is ``Settings.branch_bot_commits_limit``. The branch's history is read with git (first
parents only: what was merged in from the base is not the branch's own work). A commit is a
bot's when its author or committer is one: our own identity (``bot.git.BOT_IDENTITY``), our
GitHub login, a ``[bot]`` name, or a GitHub bot's noreply address (``...[bot]@users.noreply...``).

- **Someone else's branch** (``/repairbot apply-fix`` onto a contributor's PR): refused when
  each of its last N commits is a bot's, ours included. Two bots taking turns on a branch, or
  the bot answering its own pushes, is a loop; a human's commit among the last N means a human
  is still driving the branch.
- **Our own fix branch** (``publish`` extending our open fix PR): our own commits are expected
  there (the fix, its extensions, merges of the base), so a tip of our commits alone is never
  refused; what is bounded there is the events that make us push (``bot.db.records.bot_events``).
  Refused when the last N are all bots' *and another bot is among them*: another bot is pushing
  onto our branch and we would be answering it, the two-bot ping-pong.

A branch with fewer than N commits is never refused (there are not N to be bots').
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bot.config import Settings
from bot.forges.github.events import is_bot_account
from bot.git import BOT_IDENTITY, git

_FIELDS = "%H%x00%an%x00%ae%x00%cn%x00%ce"


class BranchGuarded(Exception):
    """A push the loop guard refused; the message says which branch and why."""


@dataclass(frozen=True)
class CommitBy:
    """Who made one commit: author and committer, as git records them."""

    sha: str
    author: str
    author_email: str
    committer: str
    committer_email: str


def last_commits(repo: Path, ref: str, count: int) -> list[CommitBy]:
    """The last ``count`` first-parent commits of ``ref`` in ``repo``, newest first (GitError
    naming the ref when it is not there)."""
    out = git(
        repo, "log", f"--max-count={count}", "--first-parent", f"--format={_FIELDS}",
        "--end-of-options", ref, "--",
    )  # fmt: skip
    return [CommitBy(*line.split("\0")) for line in out.splitlines() if line]


def is_ours(settings: Settings, commit: CommitBy) -> bool:
    """Whether the bot itself made ``commit`` (its git identity, or its GitHub login)."""
    name, email = BOT_IDENTITY
    return (commit.author, commit.author_email.lower()) == (name, email) or (
        commit.author.lower() == settings.github_bot_login.lower()
    )


def _is_bot(settings: Settings, name: str, email: str) -> bool:
    return is_bot_account(settings, name) or "[bot]@" in email.lower()


def bot_of(settings: Settings, commit: CommitBy) -> str | None:
    """The bot behind ``commit`` (its author's or committer's name), or None for a human's."""
    if is_ours(settings, commit):
        return commit.author
    for name, email in (
        (commit.author, commit.author_email),
        (commit.committer, commit.committer_email),
    ):
        if _is_bot(settings, name, email):
            return name
    return None


def push_refusal(
    settings: Settings, repo: Path, ref: str, *, branch: str, own_branch: bool
) -> str | None:
    """Why the bot must not push onto ``branch`` (at ``ref`` in ``repo``), or None when it may:
    the rule in the module docstring."""
    limit = settings.branch_bot_commits_limit
    commits = last_commits(repo, ref, limit)
    if len(commits) < limit:
        return None
    bots = [bot_of(settings, c) for c in commits]
    if any(bot is None for bot in bots):
        return None  # a human's commit among them: a human is still driving the branch
    others = [c for c in commits if not is_ours(settings, c)]
    if own_branch and not others:
        return None
    names = ", ".join(sorted({bot for bot in bots if bot}))
    whose = "our fix branch" if own_branch else "branch"
    return (
        f"loop guard: the last {limit} commits on {whose} `{branch}` are all by bots ({names}); "
        f"not pushing to it (REPAIRBOT_BRANCH_BOT_COMMITS_LIMIT={limit}): a human must push first"
    )
