"""The state-flow model on shapes of real workers (tests/fixtures/state_flow, our own writing):
exact findings, exact fixed source, and fixed workers that really restore on failure."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixers.state.flow import analyse
from fixers.state.trace import Event
from fixers.sweep.fix_types import matches_param
from fixers.sweep.run import fix, sweep, write_changes
from tests.fixers.trees import python_files

TREE = Path(__file__).parents[2] / "fixtures" / "state_flow"

EXPECTED = [  # a forbidden override is located at its ``def``: where the reviewer looks
    ("pkg/workers/bracketed.py:19", "forbidden-override", "rename"),
    ("pkg/workers/branch_steps.py:11", "forbidden-override", "rename"),
    ("pkg/workers/inherited_save.py:7", "forbidden-override", "rename"),
    ("pkg/workers/inherited_save.py:8", "transient-state", None),
    ("pkg/workers/inherited_save.py:18", "forbidden-override", "rename"),
    ("pkg/workers/parallel_draft.py:14", "forbidden-override", "rename"),
    ("pkg/workers/parallel_draft.py:16", "deferred-fixup", "pending-flag"),
    ("pkg/workers/parallel_draft.py:28", "forbidden-override", "rename"),
    ("pkg/workers/parallel_draft.py:30", "deferred-fixup", None),
    ("pkg/workers/rewind_helpers.py:20", "deferred-fixup", "pending-flag"),
    ("pkg/workers/rewind_helpers.py:27", "forbidden-override", "rename"),
    ("pkg/workers/tree_draft.py:10", "forbidden-override", "rename"),
    ("pkg/workers/tree_draft.py:11", "transient-state", "snapshot"),
    ("pkg/workers/warmup.py:13", "transient-state", "snapshot"),
]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(TREE / "before", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_exactly_the_violations_a_maintainer_acts_on(tree: Path) -> None:
    report = sweep(tree)
    assert [(v.location(), v.kind, v.fix) for v in report.violations] == EXPECTED
    assert report.summary() == "14 violation(s) in 9 class(es)"
    by_line = {v.location(): v for v in report.violations}
    pair = by_line["pkg/workers/tree_draft.py:11"]
    # all_rank_num_tokens changes only inside _draft_loop, a helper: still part of the pair.
    assert [s[2] for s in pair.saves] == ["all_rank_num_tokens", "force_prepare_tree_mask"]
    assert "changed in _draft_loop, forward" in pair.detail
    warmup = by_line["pkg/workers/warmup.py:13"]
    assert warmup.saves == (("self._saved_kv_lens", "attn_metadata", "kv_lens", "tensor"),)
    # The bracket saves kv_lens on one branch only: what both branches save is seq_lens.
    real_pard = by_line["pkg/workers/rewind_helpers.py:20"]
    assert "in _bump_kv_lens, undone at line 24 in _rewind_kv_lens" in real_pard.detail
    assert real_pard.fixup == (
        "self._bump_kv_lens(attn_metadata, accepted)",
        "self._rewind_kv_lens(attn_metadata)",
    )
    inherited = by_line["pkg/workers/inherited_save.py:8"]
    assert "saved or restored in LinearLoopWorker.forward" in inherited.detail
    human = by_line["pkg/workers/parallel_draft.py:30"]
    assert "uses bs, nc, which the restore hook cannot see" in human.detail
    assert "A human must decide" in human.detail


def test_what_is_not_a_violation_is_explained(tree: Path) -> None:
    notes = {(n.path, n.line, n.field): n.category for n in sweep(tree).notes}
    assert notes[("pkg/workers/bracketed.py", 20, "spec_metadata.worker")] == "back-reference"
    assert notes[("pkg/workers/bracketed.py", 21, "spec_metadata.d2t")] == "cache"
    # kv_lens is saved by the worker's own prepare override, seq_lens by the base's.
    assert notes[("pkg/workers/bracketed.py", 23, "attn_metadata.seq_lens")] == "bracket"
    assert notes[("pkg/workers/bracketed.py", 24, "attn_metadata.kv_lens")] == "bracket"
    assert notes[("pkg/workers/bracketed.py", 26, "attn_metadata.use_spec_decoding")] == "scratch"
    assert notes[("pkg/workers/bracketed.py", 28, "attn_metadata.kv_lens")] == "scratch"
    assert notes[("pkg/workers/bracketed.py", 29, "attn_metadata.kv_lens")] == "scratch"
    assert notes[("pkg/workers/tree_draft.py", 33, "attn_metadata.seq_lens")] == "bracket"
    assert notes[("pkg/workers/tree_draft.py", 34, "attn_metadata.num_contexts")] == "scratch"
    assert notes[("pkg/workers/tree_draft.py", 27, "attn_metadata.all_rank_num_tokens")] == (
        "paired"
    )
    # The two arms of one ``if`` never run in one call: neither undoes the other.
    assert notes[("pkg/workers/branch_steps.py", 19, "attn_metadata.kv_lens")] == "scratch"
    assert notes[("pkg/workers/branch_steps.py", 22, "attn_metadata.kv_lens")] == "scratch"


def test_fix_matches_the_exact_fixed_source(tree: Path) -> None:
    result = fix(tree, imports=False)
    assert all(c.evidence is not None and c.evidence.ok for c in result.changes)
    # The save and restore of TreeOnLinearWorker's field sit in its parent's forward.
    assert [s.class_qualname for s in result.skips] == [
        "pkg.workers.inherited_save.TreeOnLinearWorker",
        "pkg.workers.parallel_draft.InlineRewindWorker",
    ]
    write_changes(tree, result)
    assert python_files(tree) == python_files(TREE / "after")
    again = fix(tree, imports=False)
    assert again.changes == []


def _pytest(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def test_fixed_workers_restore_the_metadata_when_a_call_fails(tree: Path) -> None:
    assert _pytest(tree).returncode != 0  # the guard refuses the forward overrides at import
    write_changes(tree, fix(tree, imports=False))
    after = _pytest(tree)
    assert after.returncode == 0, after.stdout[-3000:]


def test_renaming_alone_would_leave_every_leak(tree: Path) -> None:
    for path in (tree / "pkg" / "workers").glob("*.py"):
        text = path.read_text()
        path.write_text(
            text.replace("def forward(self, input_ids", "def _forward_impl(self, input_ids")
        )
    proc = _pytest(tree)
    assert "4 failed, 4 passed" in proc.stdout, proc.stdout[-2000:]


def test_generated_overrides_pass_mypy(tree: Path) -> None:
    write_changes(tree, fix(tree, imports=False))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            "/dev/null",
            "--follow-imports=silent",
            "pkg/workers",
        ],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize(
    ("param", "name", "expected"),
    [
        ("attn_metadata", "AttentionMetadata", True),
        ("spec_metadata", "SpecMetadata", True),
        ("attn_metadata", "SpecMetadata", False),
        ("attn_metadata", "AttentionMetadataBuilder", False),
        ("spec_metadata", "SpeculativeDecodingMetadata", False),
    ],
)
def test_metadata_types_are_matched_by_name(param: str, name: str, expected: bool) -> None:
    assert matches_param(param, name) is expected


@pytest.mark.parametrize(("restore_arm", "pairs"), [((7, 0), 1), ((7, 1), 0)])
def test_a_restore_on_the_other_arm_of_an_if_is_no_restore(
    restore_arm: tuple[int, int], pairs: int
) -> None:
    def event(kind: str, line: int, arm: tuple[int, int], **values: object) -> Event:
        fields = {"param": "attn_metadata", "attr": "seq_lens", **values}
        return Event(kind, "w.py", "W", "forward", line, arms=(arm,), **fields)  # type: ignore[arg-type]

    events = [
        event("save", 1, (7, 0), holder="saved"),
        event("mutate", 2, (7, 0), op="="),
        event("call", 3, (7, 0)),
        event("restore", 4, restore_arm, holder="saved"),
    ]
    assert len(analyse(events).pairs) == pairs
