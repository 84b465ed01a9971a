"""A working tree against its base, in real git repositories: introduced, existing, fixed."""

from __future__ import annotations

from pathlib import Path

from fixers.check.base_tree import materialised, work_tree
from fixers.check.tree_check import TreeCheck, check_tree, fix_introduced
from fixers.contracts.model import CONFIG_FILES
from fixers.sweep.index import IndexCache
from tests.fixers.git_repos import BAD, GOOD, commit_all, git, worker_repo, write


def _check(repo: Path, cache: IndexCache | None = None) -> TreeCheck:
    head = git(repo, "rev-parse", "HEAD").strip()
    with materialised(work_tree(repo), head, also=sorted(CONFIG_FILES)) as base_root:
        return check_tree(repo, base_root, cache)


def _names(check: TreeCheck) -> list[str]:
    return [v.class_qualname.rsplit(".", 1)[-1] for v in check.introduced]


def test_a_new_override_is_introduced_and_the_old_one_is_existing(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    git(repo, "add", "pkg/new.py")
    check = _check(repo)
    assert _names(check) == ["NewWorker"]
    assert check.existing == 1
    assert [v.class_qualname for v in check.base.violations] == ["pkg.old.OldWorker"]


def test_an_old_violation_that_moved_is_not_introduced(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    old = repo / "pkg" / "old.py"
    old.write_text("# a comment\n" * 20 + old.read_text())
    check = _check(repo)
    assert check.introduced == [] and check.existing == 1


def test_a_contract_new_in_the_working_tree_is_the_working_trees(tmp_path: Path) -> None:
    # Each side is swept with the contracts it declares: the one the change adds breaks the
    # runner that was fine before it, so that runner's violation is the change's.
    repo = worker_repo(tmp_path / "repo")
    write(
        repo,
        "pkg/runner.py",
        "class RunnerBase:\n    def run(self):\n        return self._run_impl()\n\n\n"
        "class OldRunner(RunnerBase):\n    def run(self):\n        return 1\n",
    )
    commit_all(repo, "a runner with an old override")
    write(
        repo,
        ".repairbot.toml",
        '[[contract]]\nbase = "RunnerBase"\nforbidden = "run"\nhook = "_run_impl"\n',
    )
    check = _check(repo)
    assert {c.base for c in check.head.report.contracts} == {"SpecWorkerBase", "RunnerBase"}
    assert {c.base for c in check.base.contracts} == {"SpecWorkerBase"}
    assert _names(check) == ["OldRunner"]
    assert check.existing == 1  # OldWorker


def test_the_base_is_swept_with_its_own_configuration(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    write(repo, ".repairbot.toml", 'exclude = ["pkg/old.py"]\n')
    commit_all(repo, "the old worker is excluded")
    write(repo, ".repairbot.toml", "")
    check = _check(repo)
    assert check.base.violations == []
    assert _names(check) == ["OldWorker"]  # the change stopped excluding it


GUARDED_SHAPE = """import abc


class Shape(abc.ABC):
    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "area" in cls.__dict__:
            raise TypeError(f"{cls.__name__} must not override Shape.area; implement {HOOK} instead")

    def area(self):
        return self.{HOOK}()

    @abc.abstractmethod
    def {HOOK}(self) -> float: ...
"""


def test_a_hook_renamed_in_the_base_breaks_every_subclass_as_introduced(tmp_path: Path) -> None:
    repo = tmp_path / "shapes"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "shapes/__init__.py", "")
    write(repo, "shapes/base.py", GUARDED_SHAPE.replace("{HOOK}", "_area_impl"))
    for name in ("Circle", "Square"):
        write(
            repo,
            f"shapes/{name.lower()}.py",
            f"from shapes.base import Shape\n\n\nclass {name}(Shape):\n"
            "    def _area_impl(self) -> float:\n        return 1.0\n",
        )
    commit_all(repo, "shapes")
    write(repo, "shapes/base.py", GUARDED_SHAPE.replace("{HOOK}", "_compute_area"))
    check = _check(repo)
    assert sorted(_names(check)) == ["Circle", "Square"]
    assert check.existing == 0 and check.base.violations == []


def test_a_package_at_the_top_keeps_its_module_names(tmp_path: Path) -> None:
    # The top's own name becomes a module prefix: the base's copy must have the same one.
    repo = worker_repo(tmp_path / "toppkg")
    write(repo, "__init__.py", "")
    commit_all(repo, "the top is a package")
    check = _check(repo)
    assert [v.class_qualname for v in check.base.violations] == ["toppkg.pkg.old.OldWorker"]
    assert check.introduced == []


def test_unchanged_files_are_parsed_once(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    git(repo, "add", "pkg/new.py")
    cache = IndexCache()
    check = _check(repo, cache)
    assert check.head.report.files_parsed == 4  # base, good, old, new
    assert check.base.files_parsed == 0  # every base file has a working-tree twin
    assert cache.stats and all(rel in check.head.index.files for rel in cache.stats)


def test_a_file_that_does_not_parse_is_a_new_skip(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    write(repo, "pkg/broken.py", "from pkg.base import SpecWorkerBase\nclass (:\n")
    git(repo, "add", "pkg/broken.py")
    check = _check(repo)
    assert check.introduced == []
    assert [s.path for s in check.new_skips()] == ["pkg/broken.py"]


def test_fix_changes_only_files_with_an_introduced_violation(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo")
    old_bytes = (repo / "pkg" / "old.py").read_bytes()
    write(repo, "pkg/new.py", BAD.format(name="NewWorker"))
    git(repo, "add", "pkg/new.py")
    cache = IndexCache()
    outcome = fix_introduced(repo, _check(repo, cache), cache)
    assert outcome.written == ["pkg/new.py"]
    assert (repo / "pkg" / "new.py").read_text() == GOOD.format(name="NewWorker")
    assert (repo / "pkg" / "old.py").read_bytes() == old_bytes
    assert outcome.after.introduced == [] and outcome.after.existing == 1


def test_fix_leaves_what_needs_a_human(tmp_path: Path) -> None:
    repo = worker_repo(tmp_path / "repo", old_violation=False)
    write(
        repo,
        "pkg/half.py",
        "from pkg.base import SpecWorkerBase\n\n\nclass HalfWorker(SpecWorkerBase):\n    pass\n",
    )
    git(repo, "add", "pkg/half.py")
    cache = IndexCache()
    check = _check(repo, cache)
    assert [(v.kind, v.fix) for v in check.introduced] == [("missing-hook", None)]
    outcome = fix_introduced(repo, check, cache)
    assert outcome.written == []
    assert _names(outcome.after) == ["HalfWorker"]
    assert any(s.class_qualname == "pkg.half.HalfWorker" for s in outcome.result.skips)
