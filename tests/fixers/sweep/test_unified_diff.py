"""The diffs a fix and a review carry apply with the real ``git apply`` and give the exact bytes
back: a last line without a newline (gaining one, losing one, or staying without), CRLF lines,
and a form feed inside a line (``str.splitlines`` would split there; git does not)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixers.sweep.outcome import FileChange
from fixers.sweep.unified_diff import split_lines, unified_diff

CASES = {
    "no newline, kept": ("def forward(self):\n    pass", "def _forward_impl(self):\n    pass"),
    "no newline, gained": ("a\nb", "a\nb\n"),
    "no newline, lost": ("a\nb\n", "a\nc"),
    "crlf": (
        "class A:\r\n    def forward(self):\r\n",
        "class A:\r\n    def _forward_impl(self):\r\n",
    ),
    "form feed": ("x = 1\x0c# page\ny = 2\n", "x = 1\x0c# page\ny = 3\n"),
    "empty to text": ("", "new\n"),
}


def _git(repo: Path, *args: str, stdin: bytes | None = None) -> None:
    subprocess.run(["git", "-C", str(repo), *args], input=stdin, check=True, capture_output=True)


@pytest.mark.parametrize("before, after", CASES.values(), ids=CASES.keys())
def test_git_apply_takes_the_diff_and_gives_the_new_text_back(
    tmp_path: Path, before: str, after: str
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "worker.py").write_bytes(before.encode())
    change = FileChange("worker.py", "worker", before, after, ["rename"], ["A"])

    _git(repo, "apply", "--whitespace=nowarn", "-", stdin=change.diff().encode())

    assert (repo / "worker.py").read_bytes() == after.encode()


def test_the_marker_follows_each_unterminated_line() -> None:
    diff = unified_diff("f.py", split_lines("a\nb"), split_lines("a\nc"))

    assert diff.endswith("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")


def test_no_change_is_no_diff() -> None:
    assert unified_diff("f.py", split_lines("same\n"), split_lines("same\n")) == ""


def test_lines_split_on_newlines_only() -> None:
    assert split_lines("a\x0cb\u2028c\r\nd") == ["a\x0cb\u2028c\r\n", "d"]
