"""``repairbot check`` as a developer and CI run it: the real console script in real git repos."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fixers.sandbox import sandbox_problem
from tests.fixers.git_repos import BAD, GOOD, commit_all, git, worker_repo, write

REPAIRBOT = shutil.which("repairbot", path=str(Path(sys.executable).parent)) or "repairbot"
needs_sandbox = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


def _check(
    repo: Path, *args: str, github: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    if github:
        environ["GITHUB_ACTIONS"] = "true"
    return subprocess.run(
        [REPAIRBOT, "check", *args],
        cwd=repo,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main whose first commit already has OldWorker overriding forward."""
    return worker_repo(tmp_path / "repo")


def _add_new_worker(repo: Path, rel: str = "pkg/new.py") -> Path:
    path = write(repo, rel, BAD.format(name="NewWorker"))
    git(repo, "add", "--", rel)
    return path


def test_a_clean_tree_exits_0_and_counts_the_old_violation(repo: Path) -> None:
    proc = _check(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("base: merge base of HEAD and main (")
    assert "0 introduced, 1 already on the base (not counted)" in proc.stdout


def test_a_new_override_exits_1_with_its_line(repo: Path) -> None:
    _add_new_worker(repo)
    proc = _check(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert (
        "pkg/new.py:5: forbidden-override (rename) NewWorker overrides SpecWorkerBase.forward"
        in proc.stdout
    )
    assert "OldWorker" not in proc.stdout
    assert "1 introduced, 1 already on the base (not counted)" in proc.stdout


def test_a_violation_already_on_the_base_is_counted_not_failed(repo: Path) -> None:
    old = repo / "pkg" / "old.py"
    old.write_text("# moved down\n" * 5 + old.read_text())
    proc = _check(repo)
    assert proc.returncode == 0, proc.stdout
    assert "0 introduced, 1 already on the base (not counted)" in proc.stdout


def test_a_commit_on_a_feature_branch_is_compared_with_the_fork_point(repo: Path) -> None:
    git(repo, "switch", "--quiet", "-c", "feature")
    _add_new_worker(repo)
    commit_all(repo, "committed, not only staged")
    proc = _check(repo)
    assert proc.returncode == 1, proc.stdout
    assert "pkg/new.py:5: forbidden-override" in proc.stdout
    assert _check(repo, "--base", "HEAD").returncode == 0  # against itself: nothing new


def test_github_annotations_escape_a_hostile_file_name(repo: Path) -> None:
    name = "pkg/we,ird:na%me [red]x[/red] é.py"
    _add_new_worker(repo, name)
    proc = _check(repo, github=True)
    assert proc.returncode == 1, proc.stdout
    (annotation,) = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert annotation == (
        "::error file=pkg/we%2Cird%3Ana%25me [red]x[/red] é.py,line=5,"
        "title=repairbot forbidden-override::NewWorker overrides SpecWorkerBase.forward; "
        "rename it to _forward_impl [fix: repairbot check --fix (rename)]"
    )
    plain = _check(repo)
    assert f"{name}:5: forbidden-override (rename)" in plain.stdout  # markup shown, not applied


def test_only_github_actions_true_turns_annotations_on(repo: Path) -> None:
    _add_new_worker(repo)
    odd = _check(repo, env={"GITHUB_ACTIONS": "maybe"})
    assert odd.returncode == 1, odd.stderr  # any other value: plain lines, not a usage error
    assert "pkg/new.py:5: forbidden-override (rename)" in odd.stdout
    assert "::error" not in _check(repo, "--plain", github=True).stdout
    assert "::error file=pkg/new.py" in _check(repo, "--github-annotations").stdout


def test_fix_renames_only_the_new_override_then_passes(repo: Path) -> None:
    new = _add_new_worker(repo)
    old_bytes = (repo / "pkg" / "old.py").read_bytes()
    proc = _check(repo, "--fix")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "wrote pkg/new.py: rename_forbidden on NewWorker" in proc.stdout
    assert new.read_text() == GOOD.format(name="NewWorker")
    assert (repo / "pkg" / "old.py").read_bytes() == old_bytes
    assert "0 introduced, 1 already on the base (not counted)" in proc.stdout
    assert _check(repo).returncode == 0


def test_fix_exits_1_when_a_human_is_needed(repo: Path) -> None:
    write(
        repo,
        "pkg/half.py",
        "from pkg.base import SpecWorkerBase\n\n\nclass HalfWorker(SpecWorkerBase):\n    pass\n",
    )
    git(repo, "add", "pkg/half.py")
    proc = _check(repo, "--fix")
    assert proc.returncode == 1, proc.stdout
    assert "pkg/half.py:4: missing-hook (needs a human)" in proc.stdout
    assert "wrote" not in proc.stdout


@pytest.mark.parametrize("ref", ["no-such-branch", "--output=/tmp/x", "HEAD~5"])
def test_a_base_that_does_not_resolve_exits_2(repo: Path, ref: str) -> None:
    proc = _check(repo, f"--base={ref}")
    assert proc.returncode == 2
    assert f"error: '{ref}' does not name a commit" in proc.stderr


def test_no_default_branch_exits_2_and_says_pass_base(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    git(repo, "branch", "--quiet", "-m", "main", "trunk")
    proc = _check(repo)
    assert proc.returncode == 2
    assert "origin/HEAD, main and master do not resolve (pass --base REF)" in proc.stderr
    assert _check(repo, "--base", "trunk").returncode == 0


def test_outside_a_git_work_tree_exits_2(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    write(plain, "w.py", BAD.format(name="W"))
    proc = _check(plain)
    assert proc.returncode == 2
    assert "is not inside a git work tree" in proc.stderr
    missing = _check(tmp_path, "no/such/dir")
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr


def test_a_file_that_does_not_parse_is_reported_as_skipped(repo: Path) -> None:
    write(repo, "pkg/broken.py", "from pkg.base import SpecWorkerBase\nclass (:\n")
    git(repo, "add", "pkg/broken.py")
    proc = _check(repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped pkg/broken.py: syntax error at line 2" in proc.stdout
    assert "1 file(s) skipped (1 not skipped on the base)" in proc.stdout
    annotated = _check(repo, github=True)
    assert "::warning file=pkg/broken.py,line=1,title=repairbot skipped::syntax error" in (
        annotated.stdout
    )


def test_a_subdirectory_prints_paths_from_the_top(repo: Path) -> None:
    _add_new_worker(repo)
    proc = _check(repo, "pkg", github=True)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "::error file=pkg/new.py,line=5," in proc.stdout


def test_file_names_from_pre_commit_are_accepted_and_the_whole_tree_checked(repo: Path) -> None:
    # A new override in new.py; pre-commit passes only the other staged file's name.
    _add_new_worker(repo)
    write(repo, "pkg/good.py", GOOD.format(name="GoodWorker") + "# touched\n")
    git(repo, "add", "pkg/good.py")
    proc = _check(repo, "pkg/good.py")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "pkg/new.py:5: forbidden-override" in proc.stdout


def test_inside_a_git_hook_the_base_is_read_from_its_own_index(repo: Path) -> None:
    # `git commit` runs pre-commit hooks with GIT_INDEX_FILE naming the real index. Here the
    # working tree deletes pkg/mid.py, through which the base's LeafWorker is a worker; if the
    # base sweep listed its files from the real index it would miss mid.py, not see LeafWorker's
    # old override, and report it as introduced.
    write(
        repo,
        "pkg/mid.py",
        "from pkg.base import SpecWorkerBase\n\n\nclass Mid(SpecWorkerBase):\n    pass\n",
    )
    write(
        repo,
        "pkg/leaf.py",
        "from pkg.mid import Mid\n\n\nclass LeafWorker(Mid):\n    def forward(self, x):\n        return x\n",
    )
    commit_all(repo, "a two-level hierarchy")
    git(repo, "rm", "--quiet", "pkg/mid.py")
    write(repo, "pkg/leaf.py", BAD.format(name="LeafWorker"))
    git(repo, "add", "pkg/leaf.py")
    index = str((repo / ".git" / "index").resolve())
    proc = _check(repo, env={"GIT_INDEX_FILE": index})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 introduced, 2 already on the base (not counted)" in proc.stdout


@needs_sandbox
def test_import_check_keeps_a_module_that_fails_to_import_unwritten(repo: Path) -> None:
    # The rename is fine, but importing the module fails: only the opt-in check can tell.
    new = _add_new_worker(repo)
    new.write_text(new.read_text() + "\nraise RuntimeError('breaks at import')\n")
    git(repo, "add", "pkg/new.py")
    before = new.read_bytes()
    proc = _check(repo, "--fix", "--import-check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "not fixed pkg/new.py: evidence failed: not written" in proc.stdout
    assert "imports in the sandbox: failed" in proc.stdout
    assert new.read_bytes() == before

    new.write_text(BAD.format(name="NewWorker"))
    good = _check(repo, "--fix", "--import-check")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "wrote pkg/new.py: rename_forbidden on NewWorker (imports in the sandbox: ok)" in (
        good.stdout
    )


def test_a_subclass_added_against_a_changed_contract_is_fixed_as_the_contract_commit_did(
    tmp_path: Path,
) -> None:
    from tests.fixers.learned import history_repos as repos
    from tests.fixers.learned.test_static_breaks import TRUCK

    shipping = repos.shipping_repo(tmp_path / "shipping")
    git(shipping, "checkout", "-q", "-b", "trucks")
    repos.commit(shipping, "add trucks", {"shipping/truck.py": TRUCK})
    proc = _check(shipping, "--base", "main")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "shipping/truck.py:5: learned-migration" in proc.stdout
    assert "rename dispatch -> ship" in proc.stdout and "1 introduced" in proc.stdout
    assert "rail.py" not in proc.stdout  # missed on the base already: not this change's
    fixed = _check(shipping, "--base", "main", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    truck = (shipping / "shipping/truck.py").read_text()
    assert "    def ship(self, parcel, *, priority=0):\n        return parcel\n" in truck
