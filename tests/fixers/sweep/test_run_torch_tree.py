"""A large tree nobody here wrote: the installed torch package's .py files, plus a planted
contract hierarchy. Every planted violation is fixed, nothing else is touched, all output parses."""

from __future__ import annotations

import ast
import hashlib
import shutil
from pathlib import Path

import pytest
import torch

from fixers.sweep.index import IndexCache
from fixers.sweep.run import fix, sweep, write_changes

pytestmark = pytest.mark.slow

TORCH = Path(torch.__file__).parent
PLANTED = {
    "_rb_planted/__init__.py": "from .base import SpecWorkerBase\n",
    "_rb_planted/base.py": (
        "class SpecWorkerBase:\n"
        "    def forward(self, *args, **kwargs):\n"
        "        return self._forward_impl(*args, **kwargs)\n"
    ),
    "_rb_planted/workers.py": (
        "from torch._rb_planted import SpecWorkerBase\n\n\n"
        "def nvtx_range(name):\n    return lambda f: f\n\n\n"
        "class PlantedWorker(SpecWorkerBase):\n"
        "    # keep me\n"
        "    @nvtx_range('planted.forward')\n"
        "    def forward(self, x, attn_metadata=None, spec_metadata=None):\n"
        "        return x\n"
    ),
    "_rb_planted/deeper/__init__.py": "",
    "_rb_planted/deeper/leaf.py": (
        "from ..workers import PlantedWorker as PW\n\n\n"
        "class PlantedLeaf(PW):\n"
        "    def forward(self, x, attn_metadata=None, spec_metadata=None):\n"
        "        return super().forward(x, attn_metadata=attn_metadata)\n"
    ),
    "_rb_planted/tests/test_double.py": (
        "import torch._rb_planted.base as b\n\n\nclass _Worker(b.SpecWorkerBase):\n"
        "    max_draft_len = 1\n"
    ),
}
CHANGED = {
    "_rb_planted/workers.py",
    "_rb_planted/deeper/leaf.py",
    "_rb_planted/tests/test_double.py",
}


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.blake2b(p.read_bytes()).hexdigest()
        for p in root.rglob("*.py")
    }


@pytest.fixture(scope="module")
def torch_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("large") / "torch"
    shutil.copytree(
        TORCH,
        root,
        ignore=shutil.ignore_patterns(
            "*.so", "*.so.*", "lib", "include", "bin", "share", "__pycache__"
        ),
    )
    for rel, text in PLANTED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_planted_violations_fixed_and_nothing_else_touched(torch_tree: Path) -> None:
    assert sum(1 for _ in torch_tree.rglob("*.py")) > 2000
    before = _digests(torch_tree)
    cache = IndexCache()
    result = fix(torch_tree, cache=cache, imports=False)
    assert {c.path for c in result.changes} == CHANGED
    assert all(c.evidence is not None and c.evidence.ok for c in result.changes)
    assert result.report.files_parsed < 50  # a byte search first: torch itself is not parsed
    write_changes(torch_tree, result)
    after = _digests(torch_tree)
    touched = {rel for rel in before if before[rel] != after[rel]}
    assert touched == CHANGED
    for rel in CHANGED:
        ast.parse((torch_tree / rel).read_text())
    leaf = (torch_tree / "_rb_planted/deeper/leaf.py").read_text()
    assert "def _forward_impl(" in leaf and "super()._forward_impl(" in leaf
    assert [v for v in sweep(torch_tree, cache=cache).violations if v.fix] == []
