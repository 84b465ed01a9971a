"""The contract check's tree on disk: exactly the swept files of the tree it says it holds,
moved by rewriting only what differs, rebuilt whole when a move was cut short."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bot.pipeline.contract_check.blobs import swept_blobs
from bot.pipeline.contract_check.tree import forget_caches, tree_of_repository
from fixers.sweep.run import run_sweep
from tests.bot.pipeline.pr_repos import CONTRACT, PRE_CONTRACT, commit, new_repo, worker
from tests.fakes.github_git import git_out

REPO = "acme/spec"


@pytest.fixture
def bare(tmp_path) -> Path:
    forget_caches()
    source, _ = new_repo(tmp_path / "source", PRE_CONTRACT)
    return source / ".git"


def _tree(bare: Path, ref: str) -> str:
    return git_out(bare, "rev-parse", f"{ref}^{{tree}}")


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def _link_and_submodule(bare: Path, parent: str) -> str:
    """A commit on ``parent`` adding a symlink ``spec/link.py`` and a submodule ``vendor``."""
    env = {**os.environ, "GIT_INDEX_FILE": str(bare / "tmp-index")}

    def run(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(
            ["git", "-C", str(bare), *args], input=data, env=env, capture_output=True, check=True
        )
        return done.stdout.decode().strip()

    link = run("hash-object", "-w", "--stdin", data=b"/etc/passwd")
    run("read-tree", parent)
    run("update-index", "--add", "--cacheinfo", f"120000,{link},spec/link.py")
    run("update-index", "--add", "--cacheinfo", f"160000,{parent},vendor")
    sha = run("commit-tree", run("write-tree"), "-p", parent, "-m", "link and submodule")
    (bare / "tmp-index").unlink()
    return sha


def test_a_tree_on_disk_is_its_swept_files_and_nothing_else(bare, tmp_path):
    files = {
        "spec/ngram.py": worker("NGramWorker"),
        ".github/scripts/x.py": "X = 1\n",  # a hidden folder: a walk never lists it
        "build/gen.py": "Y = 1\n",  # a folder the sweep skips
        "docs/guide.md": "# guide\n",  # not Python
        ".repairbot.toml": "max_file_bytes = 256\n",
        "spec/huge.py": "Z = 0\n" * 100,  # 600 bytes, over the cap
    }
    head = commit(bare, "pr", files, parent="main", message="many kinds")
    odd = _link_and_submodule(bare, head)

    with tree_of_repository(tmp_path / "trees", REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, odd))
        root = on_disk.root

        assert _files(root) == {
            ".repairbot.toml",
            "spec/__init__.py",
            "spec/base.py",
            "spec/eagle.py",
            "spec/huge.py",
            "spec/ngram.py",
        }
        huge = (root / "spec/huge.py").stat()
        assert huge.st_size == 600 and huge.st_blocks == 0  # a sparse stand-in, never copied
        report = run_sweep(root, cache=on_disk.cache).report
        assert [s.path for s in report.skips] == ["spec/huge.py"]
        assert report.skips[0].reason.startswith("skipped: 600 bytes, over the 256-byte cap")
    assert (tmp_path / "trees/acme/spec.tree").read_text() == _tree(bare, odd)


def test_moving_rewrites_only_what_differs_and_the_sweep_reads_only_that(bare, tmp_path):
    contract = commit(bare, "main", CONTRACT, parent="main", message="contract")
    edited = commit(
        bare,
        "main",
        {"spec/eagle.py": CONTRACT["spec/eagle.py"] + "# tuned\n"},
        parent=contract,
        message="edit eagle",
    )
    gone = commit(bare, "main", {"spec/eagle.py": None}, parent=edited, message="drop eagle")
    with tree_of_repository(tmp_path / "trees", REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, contract))
        assert run_sweep(on_disk.root, cache=on_disk.cache).index.stats.read == 3
        untouched = (on_disk.root / "spec/base.py").stat().st_mtime_ns

        on_disk.move_to(bare, _tree(bare, edited))
        resweep = run_sweep(on_disk.root, cache=on_disk.cache)

        assert (on_disk.root / "spec/base.py").stat().st_mtime_ns == untouched
        assert resweep.index.stats.read == 1  # the edited file, whose content is new
        on_disk.move_to(bare, _tree(bare, contract))  # back, as a check goes base → merge
        assert run_sweep(on_disk.root, cache=on_disk.cache).index.stats.read == 0  # all known
        on_disk.move_to(bare, _tree(bare, gone))
        assert _files(on_disk.root) == set(swept_blobs(bare, _tree(bare, gone)))
        assert not (on_disk.root / "spec/eagle.py").exists()


def test_a_move_cut_short_is_rebuilt_whole_by_the_next_check(bare, tmp_path):
    trees = tmp_path / "trees"
    with tree_of_repository(trees, REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, "main"))
    # What a check killed half way through a move leaves: no marker, a file of the other tree.
    (trees / "acme/spec.tree").unlink()
    (trees / "acme/spec/spec/stray.py").write_text("class Stray: ...\n")
    forget_caches()  # a new process

    contract = commit(bare, "main", CONTRACT, parent="main", message="contract")
    with tree_of_repository(trees, REPO) as on_disk:
        assert on_disk.tree == "" and not on_disk.root.exists()
        on_disk.move_to(bare, _tree(bare, contract))
        assert _files(on_disk.root) == set(swept_blobs(bare, _tree(bare, contract)))


def test_a_changed_configuration_rewrites_the_whole_tree(bare, tmp_path):
    big = "W = 0\n" * 50
    first = commit(
        bare,
        "main",
        {".repairbot.toml": "max_file_bytes = 64\n", "spec/big.py": big},
        parent="main",
        message="a small cap",
    )
    raised = commit(
        bare, "main", {".repairbot.toml": "max_file_bytes = 4096\n"}, parent=first, message="raise"
    )
    with tree_of_repository(tmp_path / "trees", REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, first))
        assert (on_disk.root / "spec/big.py").read_bytes() == b"\0" * len(big)  # stand-in
        on_disk.move_to(bare, _tree(bare, raised))
        assert (on_disk.root / "spec/big.py").read_text() == big  # now under the cap: copied


def test_a_tree_on_disk_pruned_from_the_repository_is_rewritten_whole(bare, tmp_path):
    trees = tmp_path / "trees"
    with tree_of_repository(trees, REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, "main"))
        (on_disk.root / "spec/stray.py").write_text("class Stray: ...\n")
    # The merge tree it held is no commit's: git gc prunes it once it is old.
    (trees / "acme/spec.tree").write_text("0123456789abcdef0123456789abcdef01234567")

    contract = commit(bare, "main", CONTRACT, parent="main", message="contract")
    with tree_of_repository(trees, REPO) as on_disk:
        on_disk.move_to(bare, _tree(bare, contract))
        assert _files(on_disk.root) == set(swept_blobs(bare, _tree(bare, contract)))
