"""Repository index: files, module names, base resolution across modules, caching."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

from fixers.contracts.model import SPEC_WORKER_CONTRACT, Contract
from fixers.sweep.index import IndexCache, RepoIndex
from fixers.sweep.run import run_sweep, sweep

BASE = "class SpecWorkerBase:\n    def forward(self):\n        return self._forward_impl()\n"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def _members(root: Path, contract: Contract = SPEC_WORKER_CONTRACT) -> set[str]:
    index = RepoIndex(root)
    (hierarchy,) = index.load_hierarchies([contract])
    return set(hierarchy.members)


RESOLUTION = {
    "lib/__init__.py": "from .core.base import SpecWorkerBase\nfrom .core import base as base_mod\n",
    "lib/core/__init__.py": "",
    "lib/core/base.py": BASE,
    "lib/a.py": "import lib.core.base as c\n\nclass ViaModuleAlias(c.SpecWorkerBase):\n    pass\n",
    "lib/b.py": "from lib import SpecWorkerBase as S\n\nclass ViaReexport(S):\n    pass\n",
    "lib/c.py": "from .core.base import SpecWorkerBase\n\nclass Relative(SpecWorkerBase):\n    pass\n",
    "lib/d.py": "from . import base_mod\n\nclass ViaPackageAttr(base_mod.SpecWorkerBase):\n    pass\n",
    "lib/e.py": "from .c import Relative\n\nGrandAlias = Relative\n",
    "lib/f.py": "from lib.e import GrandAlias\n\nclass Grandchild(GrandAlias):\n    pass\n",
    "lib/g.py": "class Holder:\n    class Inner(__import__('x').Y):\n        pass\n"
    "    class Nested(Grandchild):\n        pass\n\nfrom lib.f import Grandchild\n",
    "lib/h.py": "class SpecWorkerBase:\n    pass\n\nclass LocalNamesake(SpecWorkerBase):\n    pass\n",
    "lib/unrelated.py": "class Plain:\n    def forward(self):\n        pass\n",
    "ext.py": "from somewhere.not_here import SpecWorkerBase\n\nclass External(SpecWorkerBase):\n"
    "    pass\n",
}


def test_bases_resolve_across_modules(tmp_path: Path) -> None:
    members = _members(_tree(tmp_path, RESOLUTION))
    assert members == {
        "lib.a.ViaModuleAlias",
        "lib.b.ViaReexport",
        "lib.c.Relative",
        "lib.d.ViaPackageAttr",
        "lib.f.Grandchild",
        "lib.g.Holder.Nested",
        "lib.h.LocalNamesake",
        "ext.External",
    }


def test_only_files_that_can_matter_are_parsed(tmp_path: Path) -> None:
    files = dict(RESOLUTION)
    files.update({f"noise/m{i}.py": f"class C{i}:\n    pass\n" for i in range(30)})
    root = _tree(tmp_path, files)
    index = RepoIndex(root)
    index.load_hierarchies([SPEC_WORKER_CONTRACT])
    assert index.stats.files == len(files)
    assert not any(rel.startswith("noise/") for rel in index.facts)
    assert "lib/unrelated.py" not in index.facts


def test_resweep_reads_only_the_changed_file(tmp_path: Path) -> None:
    root = _tree(tmp_path, RESOLUTION)
    cache = IndexCache()
    first = run_sweep(root, cache=cache)
    assert first.index.stats.read == len(RESOLUTION)
    target = root / "lib" / "c.py"
    target.write_text(target.read_text() + "    def forward(self):\n        pass\n")
    os.utime(target, ns=(1, 1))
    second = run_sweep(root, cache=cache)
    assert second.index.stats.read == 1
    assert [v.class_qualname for v in second.report.violations if v.fix == "rename"] == [
        "lib.c.Relative"
    ]
    assert run_sweep(root, cache=cache).index.stats.read == 0


def test_git_repo_indexes_tracked_files_only(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "base.py": BASE,
            "w.py": "from base import SpecWorkerBase\n\n"
            "class W(SpecWorkerBase):\n    def forward(self):\n        pass\n",
        },
    )
    git = ["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "base.py", "w.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    _tree(
        root,
        {
            "untracked.py": "from base import SpecWorkerBase\n\n"
            "class U(SpecWorkerBase):\n    def forward(self):\n        pass\n"
        },
    )
    report = sweep(root)
    assert report.listing == "git ls-files"
    assert [v.class_qualname for v in report.violations] == ["w.W"]


def test_unreadable_and_unparsable_files_are_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"base.py": BASE, "bad.py": "class X(SpecWorkerBase:\n"})
    (root / "dangling.py").symlink_to(root / "missing.py")
    (root / "binary.py").write_bytes(b"SpecWorkerBase\x00\xff\xfe")
    report = sweep(root)
    reasons = {s.path: s.reason for s in report.skips}
    assert reasons["bad.py"].startswith("syntax error at line 1")
    assert reasons["dangling.py"].startswith("unreadable")
    assert "binary.py" in reasons


def test_bad_config_still_sweeps_with_builtin_contract(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "base.py": BASE,
            ".repairbot.toml": "[[contract]\n",
            "w.py": "from base import SpecWorkerBase\n\n"
            "class W(SpecWorkerBase):\n    def forward(self):\n        pass\n",
        },
    )
    report = sweep(root)
    assert report.config_errors and "not valid TOML" in report.config_errors[0]
    assert [v.kind for v in report.violations] == ["forbidden-override"]


def test_inferred_contract_is_swept(tmp_path: Path) -> None:
    guarded = Path(__file__).parents[2] / "fixtures" / "sweep" / "guarded_runner.py"
    root = _tree(
        tmp_path,
        {
            "runner.py": guarded.read_text(),
            "impl.py": "from runner import RunnerBase\n\nclass Fast(RunnerBase):\n"
            "    def run(self, ctx, state):\n        return ctx\n",
        },
    )
    report = sweep(root)
    assert any(c.base == "RunnerBase" and c.source.startswith("inferred") for c in report.contracts)
    assert [(v.kind, v.class_qualname) for v in report.violations] == [
        ("forbidden-override", "impl.Fast")
    ]


def test_bases_in_namespace_packages_resolve_by_their_import_names(tmp_path: Path) -> None:
    # PEP 420 packages (no __init__.py): imported as ``workers.base`` from the root, or as
    # ``app.specs`` from a src/ layout.
    root = _tree(tmp_path, {
        "workers/base.py": BASE,
        "workers/mtp.py": "from workers.base import SpecWorkerBase\n\nclass MTP(SpecWorkerBase):\n    pass\n",
        "src/app/specs.py": "class Spec:\n    pass\n",
    })  # fmt: skip
    index = RepoIndex(root)
    for rel in index.files:
        index.parse(rel)
    for dotted, rel in (("workers.base.SpecWorkerBase", "workers/base.py"),
                        ("app.specs.Spec", "src/app/specs.py")):  # fmt: skip
        assert index.classes[index.canonical(dotted)][0] == rel
