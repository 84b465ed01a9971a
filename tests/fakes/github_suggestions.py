"""GitHub's "Commit suggestions" on the GitHub double: the suggestion blocks of a review's
comments, applied to the PR branch in one commit.

A ``suggestion`` block replaces the comment's lines ``start_line..line`` with the block's lines
(none: the lines are deleted). The new lines end as the replaced ones did (CRLF stays CRLF, a last
line without a newline stays without). As on GitHub, a comment follows its lines when later
commits move them, and a suggestion whose lines changed since the comment was made (outdated)
and overlapping suggestions are refused.
"""

from __future__ import annotations

import difflib
import itertools
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tests.fakes.github_git import FakeRepo
from tests.fakes.github_reviews import store

if TYPE_CHECKING:
    from tests.fakes.github_api import FakeGitHub

Edit = tuple[int, int, list[str]]  # (start_line, line, new lines), 1-based inclusive
_OPENING = re.compile(r"^(?P<fence>`{3,}|~{3,})suggestion[^\n]*\n", re.MULTILINE)


def suggested_lines(body: str) -> list[str] | None:
    """The lines a comment's ``suggestion`` block proposes (empty: delete), None without one.

    The block closes at a line of the same fence character, at least as long as the opening
    one (CommonMark), so a longer fence can hold a shorter one.
    """
    opening = _OPENING.search(body)
    if opening is None:
        return None
    fence = opening["fence"]
    rest = body[opening.end() :].split("\n")
    for index, line in enumerate(rest):
        stripped = line.rstrip()
        if stripped.startswith(fence) and not stripped.strip(fence[0]):
            return rest[:index]
    return None


def split_lines(text: str) -> list[str]:
    """Lines with their terminators, split on ``\\n`` only (as git counts lines)."""
    parts = text.split("\n")
    return [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def apply_to_lines(lines: Sequence[str], edits: Sequence[Edit]) -> list[str]:
    """``lines`` with every edit made, as one batch of suggestions."""
    result = list(lines)
    ordered = sorted(edits, reverse=True)
    for (start, _, _), (_, end, _) in itertools.pairwise(ordered):
        if end >= start:
            raise RuntimeError(f"overlapping suggestions at line {start}")
    for start, end, new in ordered:
        last = result[end - 1]
        crlf = last.endswith("\r\n") or (
            not last.endswith("\n") and any(x.endswith("\r\n") for x in result)
        )
        made = [text + ("\r\n" if crlf else "\n") for text in new]
        if made and not last.endswith("\n"):
            made[-1] = new[-1]
        result[start - 1 : end] = made
    return result


def current_lines(
    then: Sequence[str], now: Sequence[str], start: int, end: int
) -> tuple[int, int] | None:
    """Where lines ``start..end`` of a file as it was are in the file as it is, as GitHub moves a
    review comment along with its lines; None when they changed (the comment is outdated)."""
    matcher = difflib.SequenceMatcher(None, list(then), list(now), autojunk=False)
    where = {
        block.a + k: block.b + k
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    }
    first = where.get(start - 1)
    if first is None or any(where.get(start - 1 + k) != first + k for k in range(end - start + 1)):
        return None
    return first + 1, first + 1 + end - start


def _git(repo: FakeRepo, *args: str, env: dict[str, str], data: bytes | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo.path), *args],
        input=data,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.decode().strip()}")
    return done.stdout.decode().strip()


def _file_lines(repo: FakeRepo, commit: str, path: str) -> list[str]:
    shown = subprocess.run(
        ["git", "-C", str(repo.path), "show", f"{commit}:{path}"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    return split_lines(shown.stdout.decode())


def _commit(repo: FakeRepo, head: str, branch: str, files: dict[str, list[str]], login: str) -> str:
    """One commit on ``branch`` (which must still be at ``head``) with ``files`` rewritten."""
    from tests.fakes.github_api import BOT_LOGIN

    with tempfile.TemporaryDirectory() as folder:
        env = {
            **os.environ,
            "GIT_INDEX_FILE": os.path.join(folder, "index"),
            "GIT_AUTHOR_NAME": login,
            "GIT_AUTHOR_EMAIL": f"{login}@users.noreply.github.com",
            "GIT_COMMITTER_NAME": "GitHub",
            "GIT_COMMITTER_EMAIL": "noreply@github.com",
        }
        _git(repo, "read-tree", head, env=env)
        for path, lines in files.items():
            mode = _git(repo, "ls-tree", head, "--", path, env=env).split()[0]
            data = "".join(lines).encode()
            blob = _git(repo, "hash-object", "-w", "--stdin", env=env, data=data)
            _git(repo, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)
        tree = _git(repo, "write-tree", env=env)
        message = (
            "Apply suggestions from code review\n\n"
            f"Co-authored-by: {BOT_LOGIN} <{BOT_LOGIN}@users.noreply.github.com>\n"
        )
        commit = _git(repo, "commit-tree", tree, "-p", head, "-m", message, env=env)
        _git(repo, "update-ref", f"refs/heads/{branch}", commit, head, env=env)
    return commit


def apply_suggestions(
    state: FakeGitHub, full_name: str, number: int, *, login: str = "alice"
) -> str:
    """Commit every suggestion of the bot's latest review on PR ``number`` to its branch in one
    commit, as GitHub's "Commit suggestions" (a batch) does; returns the new head."""
    from tests.fakes.github_api import BOT_LOGIN

    repo = state.repos[full_name]
    with state.lock:
        pull = repo.refresh(number)
        head, branch = pull["head"]["sha"], pull["head"]["ref"]
        reviews = store(repo)
        ours = [r for r in reviews.by_pull.get(number, []) if r["user"]["login"] == BOT_LOGIN]
        if not ours:
            raise AssertionError(f"no review by {BOT_LOGIN} on #{number}")
        edits: dict[str, list[Edit]] = {}
        for comment in reviews.comments.get(ours[-1]["id"], []):
            new = suggested_lines(comment["body"])
            if new is None:
                continue
            path = comment["path"]
            start, end = comment["start_line"] or comment["line"], comment["line"]
            then, now = _file_lines(repo, comment["commit_id"], path), _file_lines(repo, head, path)
            moved = current_lines(then, now, start, end)
            if moved is None:
                raise RuntimeError(f"outdated suggestion on {path}:{start}-{end}")
            edits.setdefault(path, []).append((*moved, new))
        if not edits:
            raise AssertionError(f"the latest review by {BOT_LOGIN} on #{number} suggests nothing")
        files = {
            path: apply_to_lines(_file_lines(repo, head, path), changes)
            for path, changes in edits.items()
        }
        commit = _commit(repo, head, branch, files, login)
        repo.refresh(number)
    return commit
