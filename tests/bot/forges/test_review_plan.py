"""Codemod changes → suggestions and patches on the PR head's lines (pure), checked by applying
them: suggestions as GitHub's "Commit suggestion" does (``tests/fakes/github_suggestions.py``),
patches with ``git apply``."""

from __future__ import annotations

import subprocess
from pathlib import Path

from bot.forges.github.review_text import suggestion_comment
from bot.forges.review_plan import ReviewPlan, Suggestion, plan_review
from fixers.sweep.outcome import FileChange, FixResult
from fixers.sweep.run import fix
from fixers.sweep.violation_types import Violation
from tests.fakes.github_suggestions import apply_to_lines, split_lines, suggested_lines

IMPORT = "from runtime.speculative.interface import SpecWorkerBase\n"
WORKERS = (
    IMPORT
    + '''

class GoodWorker(SpecWorkerBase):
    """Fine."""

    def _forward_impl(self, *args, **kwargs):
        return None


class BadWorker(SpecWorkerBase):
    """Overrides forward."""

    def forward(self, *args, **kwargs):
        return None


class _Double(SpecWorkerBase):
    @property
    def max_draft_len(self) -> int:
        return 1
'''
)
LEGACY = Path(__file__).resolve().parents[2] / "fixtures" / "legacy_workers"


def _fixed(root: Path, files: dict[str, bytes]) -> FixResult:
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return fix(root, None, imports=False)


def _apply(text: str, suggestions: tuple[Suggestion, ...] | list[Suggestion]) -> str:
    """``text`` with the suggestions committed, read back from the comments the bot posts."""
    edits = []
    for s in suggestions:
        lines = suggested_lines(suggestion_comment(s))
        assert lines is not None, suggestion_comment(s)
        edits.append((s.start_line, s.line, lines))
    return "".join(apply_to_lines(split_lines(text), edits))


def _git_apply(folder: Path, path: str, text: str, patch: str) -> str:
    """``text`` as file ``path`` with ``patch`` applied by ``git apply`` (as the review says)."""
    target = folder / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(text.encode())
    subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"],
        cwd=folder,
        input=patch.encode(),
        check=True,
        capture_output=True,
    )
    return target.read_bytes().decode()


def _plan(result: FixResult, head: dict[str, str] | None = None) -> ReviewPlan:
    texts = head or {c.path: c.before for c in result.changes}
    return plan_review("a" * 40, result.report.violations, result.changes, texts.get)


def test_a_rename_and_a_stub_become_suggestions_on_the_exact_lines(tmp_path: Path) -> None:
    result = _fixed(tmp_path, {"pkg/workers.py": WORKERS.encode()})
    plan = _plan(result)
    [change] = result.changes

    rename, stub = plan.suggestions
    assert (rename.path, rename.start_line, rename.line) == ("pkg/workers.py", 14, 14)
    assert rename.replacement == "    def _forward_impl(self, *args, **kwargs):\n"
    assert "rename it to _forward_impl" in rename.message
    # A stub is an insertion: the suggestion rewrites the line above it as itself + the stub.
    assert (stub.start_line, stub.line) == (21, 21)
    assert stub.replacement.startswith("        return 1\n\n    def _forward_impl(self, *args")
    assert plan.patches == ()
    assert _apply(change.before, plan.suggestions) == change.after
    assert not plan.clean and len(plan.violations) == 2
    assert all(line.endswith("fixed by a suggestion below") for line in plan.violations)
    assert plan.violations[0].startswith("`pkg/workers.py:14` `BadWorker` (forbidden-override)")


def test_the_snapshot_fix_is_a_patch_git_apply_takes_at_the_head(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    source = (LEGACY / "legacy_spec" / "dynamic_tree.py").read_bytes()
    result = _fixed(tree, {"legacy_spec/dynamic_tree.py": source})
    plan = _plan(result)
    [change] = result.changes

    [patch] = plan.patches
    assert patch.at_head and patch.path == "legacy_spec/dynamic_tree.py"
    assert "snapshot them on self" in patch.message
    assert "_ensure_spec_dec_state_restored" in patch.patch
    # The rename stays one click, out of the patch's context: the patch still applies (at an
    # offset) once the suggestion is committed. (GitHub moves a comment with the lines it is
    # on, so the other order works too: tests/bot/forges/github/test_reviews.py.)
    [rename] = plan.suggestions
    assert rename.replacement == "    def _forward_impl(\n"
    suggested = _apply(change.before, plan.suggestions)
    assert _git_apply(tmp_path, patch.path, suggested, patch.patch) == change.after
    assert any("(transient-state)" in v and "a patch below" in v for v in plan.violations)


def test_lines_follow_the_head_when_the_base_added_lines_above(tmp_path: Path) -> None:
    # The merge has three lines the base added at the top; the head does not have them yet.
    merged = '"""Workers."""\n# base line one\n# base line two\n' + WORKERS
    result = _fixed(tmp_path, {"pkg/workers.py": merged.encode()})
    plan = _plan(result, {"pkg/workers.py": WORKERS})

    assert [(s.start_line, s.line) for s in plan.suggestions] == [(14, 14), (21, 21)]
    fixed = _apply(WORKERS, plan.suggestions)
    assert "def forward" not in fixed and fixed.count("def _forward_impl") == 3
    assert plan.violations[0].startswith("`pkg/workers.py:14`")  # the head's line, not 17


def test_a_region_the_head_has_differently_becomes_a_patch_for_the_merge(tmp_path: Path) -> None:
    merged = WORKERS.replace("def forward(self, *args, **kwargs):", "def forward(self, *a, **k):")
    result = _fixed(tmp_path / "tree", {"pkg/workers.py": merged.encode()})
    plan = _plan(result, {"pkg/workers.py": WORKERS})
    [change] = result.changes

    [stub] = plan.suggestions  # the stub's lines are the same in both
    assert (stub.start_line, stub.line) == (21, 21)
    [patch] = plan.patches
    assert not patch.at_head
    fixed = _git_apply(tmp_path / "merged", patch.path, merged, patch.patch)
    assert "def _forward_impl(self, *a, **k):" in fixed
    assert _apply(fixed, plan.suggestions) == change.after


def test_crlf_lines_count_as_github_counts_them_and_stay_crlf(tmp_path: Path) -> None:
    crlf = WORKERS.replace("\n", "\r\n")
    result = _fixed(tmp_path / "tree", {"pkg/workers.py": crlf.encode()})
    plan = _plan(result)
    [change] = result.changes

    assert [(s.start_line, s.line) for s in plan.suggestions] == [(14, 14), (21, 21)]
    assert all("\r" not in s.replacement for s in plan.suggestions)
    assert _apply(crlf, plan.suggestions) == change.after
    # The fallback patches keep the file's CRLF, so git apply puts back exactly the fix.
    step = _git_apply(tmp_path / "p", "pkg/workers.py", crlf, plan.suggestions[1].patch)
    assert _git_apply(tmp_path / "p", "pkg/workers.py", step, plan.suggestions[0].patch) == (
        change.after
    )


def test_a_tab_indented_file_without_a_final_newline(tmp_path: Path) -> None:
    tabs = (
        IMPORT
        + "\n\nclass TabWorker(SpecWorkerBase):\n\tdef forward(self, *args, **kwargs):\n"
        + "\t\treturn None\n\n\nclass _Tab(SpecWorkerBase):\n\tdef max_draft_len(self):\n"
        + "\t\treturn 1"
    )
    result = _fixed(tmp_path / "tree", {"pkg/tabs.py": tabs.encode()})
    plan = _plan(result)
    [change] = result.changes

    rename, stub = plan.suggestions
    assert rename.replacement == "\tdef _forward_impl(self, *args, **kwargs):\n"
    assert (stub.start_line, stub.line) == (11, 11)  # the last line, which has no newline
    assert stub.replacement.startswith("\t\treturn 1\n\n\tdef _forward_impl(")
    assert "\t\traise NotImplementedError\n" in stub.replacement
    fixed = _apply(tabs, plan.suggestions)
    assert fixed == change.after and not fixed.endswith("\n")
    assert "\\ No newline at end of file" in stub.patch
    assert _git_apply(tmp_path / "p", "pkg/tabs.py", tabs, stub.patch).endswith(
        "\t\traise NotImplementedError"
    )


def test_a_file_the_head_lacks_gets_a_patch_for_the_merge(tmp_path: Path) -> None:
    result = _fixed(tmp_path, {"pkg/workers.py": WORKERS.encode()})

    plan = plan_review("e" * 40, result.report.violations, result.changes, lambda _path: None)

    assert plan.suggestions == ()
    [patch] = plan.patches
    assert not patch.at_head and "+    def _forward_impl(self, *args, **kwargs):" in patch.patch
    assert _git_apply(tmp_path / "m", "pkg/workers.py", WORKERS, patch.patch) == (
        result.changes[0].after
    )


def test_a_violation_without_a_fix_is_listed_for_a_human(tmp_path: Path) -> None:
    odd = Violation(
        kind="deferred-fixup",
        contract="spec-worker",
        path="pkg/odd.py",
        line=7,
        class_qualname="odd.OddWorker",
        detail="OddWorker adjusts kv_lens_cuda in place and nothing rewinds it",
        fix=None,
    )
    plan = plan_review("b" * 40, [odd], [], lambda _path: None)

    assert plan.suggestions == () and plan.patches == ()
    [line] = plan.violations
    assert line.startswith("`pkg/odd.py:7` `OddWorker` (deferred-fixup)")
    assert line.endswith("needs a human: no automatic fix for this one")
    assert not plan.clean


def test_a_replacement_holding_a_fence_gets_a_longer_one(tmp_path: Path) -> None:
    source = WORKERS.replace(
        "def forward(self, *args, **kwargs):", 'def forward(self, *args, fence="```", **kwargs):'
    )
    result = _fixed(tmp_path, {"pkg/workers.py": source.encode()})
    plan = _plan(result)
    [change] = result.changes

    rename = plan.suggestions[0]
    assert "```" in rename.replacement
    assert "\n````suggestion\n" in suggestion_comment(rename)
    assert _apply(source, plan.suggestions) == change.after


def test_only_the_classes_of_the_given_violations_are_proposed(tmp_path: Path) -> None:
    result = _fixed(tmp_path, {"pkg/workers.py": WORKERS.encode()})
    stub_only = [v for v in result.report.violations if v.fix == "stub"]
    plan = plan_review("c" * 40, stub_only, result.changes, {"pkg/workers.py": WORKERS}.get)

    [stub] = plan.suggestions
    assert stub.line == 21 and len(plan.violations) == 1
    assert "def forward" in _apply(WORKERS, plan.suggestions)


def test_a_suggestion_in_a_patch_s_context_joins_the_patch() -> None:
    before = (
        "class W(SpecWorkerBase):\n"
        "    def forward(self, attn_metadata):\n"
        "        saved = attn_metadata.x\n"
        "        return saved\n"
    )
    after = (
        "class W(SpecWorkerBase):\n"
        "    def _forward_impl(self, attn_metadata):\n"
        "        saved = attn_metadata.x\n"
        "        self._spec_dec_extra_state = (saved,)\n"
        "        return saved\n"
    )
    change = FileChange("w.py", "w", before, after, ["rename", "snapshot"], ["W"])
    common = {"contract": "spec-worker", "path": "w.py", "class_qualname": "w.W"}
    violations = [
        Violation(
            kind="forbidden-override",
            line=2,
            detail="rename",
            fix="rename",
            method="forward",
            **common,
        ),
        Violation(kind="transient-state", line=3, detail="snapshot", fix="snapshot", **common),
    ]
    plan = plan_review("d" * 40, violations, [change], {"w.py": before}.get)

    assert plan.suggestions == ()
    [patch] = plan.patches
    assert "+    def _forward_impl(self, attn_metadata):" in patch.patch
    assert all("a patch below" in line for line in plan.violations)


def test_the_digest_is_what_would_be_posted_not_the_head(tmp_path: Path) -> None:
    result = _fixed(tmp_path, {"pkg/workers.py": WORKERS.encode()})
    texts = {"pkg/workers.py": WORKERS}
    first = plan_review("1" * 40, result.report.violations, result.changes, texts.get)
    again = plan_review("2" * 40, result.report.violations, result.changes, texts.get)
    shifted = plan_review(
        "2" * 40, result.report.violations, result.changes, {"pkg/workers.py": "\n" + WORKERS}.get
    )

    assert first.digest() == again.digest() and first.head_sha != again.head_sha
    assert shifted.digest() != first.digest()  # the suggestions moved one line down
    clean = plan_review("3" * 40, [], [], texts.get)
    assert clean.clean and clean.suggestions == () and clean.digest() == clean.digest()


def test_every_codemods_fix_is_offered_as_its_codemod_declares() -> None:
    from bot.forges.review_plan import offered_as
    from fixers.codemods.registry import builtin_codemods

    PATCHED, SUGGESTED = offered_as("patch"), offered_as("suggestion")
    declared = {c.fix: c.review for c in builtin_codemods().codemods}
    assert set(declared) == SUGGESTED | PATCHED and not SUGGESTED & PATCHED
    assert {fix for fix, review in declared.items() if review == "patch"} == PATCHED
