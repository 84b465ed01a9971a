"""The sweep's file content: names searched through shared anchors, the stat cache, the budget."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fixers.sweep.content as content
from fixers.sweep.content import (
    MIN_ANCHOR,
    IndexCache,
    IndexStats,
    TreeContent,
    anchor_plan,
    search,
)
from fixers.sweep.run import run_sweep

WORKERS = frozenset({"BenchDraftWorker1", "BenchDraftWorker12", "_Worker", "EagleWorker"})


def test_names_that_share_a_piece_are_searched_through_it() -> None:
    plan = anchor_plan(WORKERS)
    assert [anchor for anchor, _ in plan] == [b"Worker"]
    assert {name for _, group in plan for name, _ in group} == WORKERS


def test_every_name_is_in_one_group_whose_anchor_it_holds() -> None:
    names = frozenset({"Spec", "SpecWorkerBase", "MTPWorker", "Eagle3OneModelWorker", "abc", "x"})
    plan = anchor_plan(names)
    grouped = [name for _, group in plan for name, _ in group]
    assert sorted(grouped) == sorted(names)
    for anchor, group in plan:
        assert all(anchor in encoded for _, encoded in group)
        assert len(anchor) >= min(MIN_ANCHOR, *(len(e) for _, e in group))


identifiers = st.text(alphabet="abAB_1", min_size=1, max_size=9)


@settings(max_examples=200, deadline=None)
@given(names=st.frozensets(identifiers, min_size=1, max_size=6), text=st.text(alphabet="abAB_1 ."))
def test_search_finds_exactly_the_names_the_bytes_hold(names: frozenset[str], text: str) -> None:
    data = text.encode()
    held, lacking = search(data, anchor_plan(names))
    assert held == {name for name in names if name.encode() in data}
    assert all(anchor not in data for anchor in lacking)


def _content(root: Path, cache: IndexCache | None = None) -> TreeContent:
    return TreeContent(root, cache or IndexCache(), 1 << 20, {}, IndexStats())


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


FILES = {
    "a.py": "from m import BenchDraftWorker1\n",
    "b.py": "class EagleWorker(Base): pass\n",
    "c.py": "x = 'Worker'\n",
    "d.py": "nothing here\n",
    "e.py": "BenchDraftWorker12 = _Worker\n",
}


@pytest.mark.parametrize("kept", [content.KEPT_BYTES, 0])
def test_answers_match_a_plain_search_pass_after_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: int
) -> None:
    monkeypatch.setattr(content, "KEPT_BYTES", kept)
    _write(tmp_path, FILES)
    tree = _content(tmp_path)
    tree.expected = frozenset({"Base"})
    passes = [{"Worker"}, {"BenchDraftWorker1", "EagleWorker"}, WORKERS, {"Base"}, {"nothing"}]
    for names in passes:
        for rel, text in FILES.items():
            assert tree.contains_any(rel, frozenset(names)) == any(n in text for n in names)
    assert tree.stats.read == len(FILES)


def test_files_past_the_budget_are_read_again_only_for_names_they_may_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(content, "KEPT_BYTES", 0)
    reads: list[str] = []
    real = content.read_repo_file_stat

    def counting(root: Path, rel: str, max_bytes: int) -> tuple[bytes, os.stat_result]:
        reads.append(rel)
        return real(root, rel, max_bytes)

    monkeypatch.setattr(content, "read_repo_file_stat", counting)
    _write(tmp_path, FILES)
    tree = _content(tmp_path)
    tree.expected = frozenset({"SpecWorkerBase"})
    for rel in FILES:  # the first pass: also answers the expected name
        tree.contains_any(rel, frozenset({"__init_subclass__"}))
    assert sorted(reads) == sorted(FILES)
    for rel in FILES:  # nothing new to search for
        tree.contains_any(rel, frozenset({"SpecWorkerBase"}))
    assert len(reads) == len(FILES)
    reads.clear()
    for rel in FILES:
        tree.contains_any(rel, frozenset({"BenchDraftWorker1", "_Worker"}))
    assert sorted(reads) == sorted(FILES)
    reads.clear()
    for rel in FILES:  # only files holding "Worker", the anchor of the pass before
        tree.contains_any(rel, frozenset({"BenchDraftWorker12"}))
    assert sorted(reads) == ["a.py", "b.py", "c.py", "e.py"]


def test_a_resweep_knows_unchanged_files_by_their_stat(tmp_path: Path) -> None:
    _write(tmp_path, FILES)
    cache = IndexCache()
    first = _content(tmp_path, cache)
    for rel in FILES:
        first.contains_any(rel, WORKERS)
    assert first.digest("a.py") is not None  # a parsed file is hashed: known by content
    assert set(cache.scans) == set(FILES) - {"a.py"} and set(cache.stats) == {"a.py"}
    (tmp_path / "d.py").write_text("now an EagleWorker\n")
    again = _content(tmp_path, cache)
    assert [rel for rel in FILES if again.contains_any(rel, WORKERS)] == [
        "a.py",
        "b.py",
        "d.py",
        "e.py",
    ]
    assert again.stats.read == 1


def test_a_sweep_past_the_budget_finds_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    golden = Path(__file__).parents[2] / "fixtures" / "sweep" / "golden" / "before"
    expected = run_sweep(golden).report
    monkeypatch.setattr(content, "KEPT_BYTES", 0)
    report = run_sweep(golden).report
    assert report.violations == expected.violations
    assert report.skips == expected.skips
    assert report.files_read == expected.files_read
