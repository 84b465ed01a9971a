"""Property: over generated hierarchies, the sweep finds exactly the violations a simple model
predicts, the fix leaves only the unfixable ones, and a second fix changes nothing."""

from __future__ import annotations

import ast
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixers.sweep.run import fix, sweep, write_changes

MODULES = ("p/m0.py", "p/m1.py", "p/sub/m2.py", "tests/test_doubles.py")
STYLES = ("from", "alias", "module", "relative")
BASE = (
    "class SpecWorkerBase:\n"
    "    def forward(self, *args, **kwargs):\n"
    "        return self._forward_impl(*args, **kwargs)\n"
)


@dataclass(frozen=True)
class Cls:
    name: str
    module: str
    parent: int | None  # index of an earlier class, None = the base
    body: str  # "forward" | "hook" | "none"
    style: str


@st.composite
def hierarchies(draw: st.DrawFn) -> list[Cls]:
    classes: list[Cls] = []
    for i in range(draw(st.integers(1, 8))):
        module = draw(st.sampled_from(MODULES))
        allowed = [j for j, c in enumerate(classes) if c.module == module or c.module[0] == "p"]
        parent = draw(st.sampled_from([None, *allowed]))
        private = draw(st.booleans())
        classes.append(
            Cls(
                f"{'_' if private else ''}C{i}",
                module,
                parent,
                draw(st.sampled_from(("forward", "hook", "none"))),
                draw(st.sampled_from(STYLES)),
            )
        )
    return classes


def _module_name(rel: str) -> str:
    return rel[:-3].replace("/", ".") if rel.startswith("p/") else rel.rsplit("/", 1)[1][:-3]


def _parent_ref(cls: Cls, parent: Cls, index: int) -> tuple[str, str]:
    """(import line, base expression) for ``cls`` deriving from ``parent``."""
    if parent.module == cls.module:
        return "", parent.name
    target = _module_name(parent.module)
    if cls.style == "alias":
        return f"from {target} import {parent.name} as Alias{index}", f"Alias{index}"
    if cls.style == "module":
        return f"import {target} as mod{index}", f"mod{index}.{parent.name}"
    if cls.style == "relative" and cls.module.startswith("p/") and cls.module.count("/") == 1:
        return f"from .{target.split('.', 1)[1]} import {parent.name}", parent.name
    return f"from {target} import {parent.name}", parent.name


def _write(root: Path, classes: list[Cls]) -> None:
    files: dict[str, list[str]] = {m: [] for m in MODULES}
    imports: dict[str, list[str]] = {m: ["from p.base import SpecWorkerBase"] for m in MODULES}
    for i, cls in enumerate(classes):
        base = "SpecWorkerBase"
        if cls.parent is not None:
            line, base = _parent_ref(cls, classes[cls.parent], i)
            if line:
                imports[cls.module].append(line)
        method = {"forward": "forward", "hook": "_forward_impl"}.get(cls.body)
        body = (
            f"    def {method}(self, *args, **kwargs):\n        return None\n"
            if method
            else ("    max_draft_len = 1\n")
        )
        files[cls.module].append(f"class {cls.name}({base}):\n{body}")
    for package in ("p", "p/sub"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "tests").mkdir(exist_ok=True)
    (root / "p" / "base.py").write_text(BASE)
    for rel in MODULES:
        text = "\n".join(imports[rel]) + "\n\n\n" + "\n\n".join(files[rel])
        (root / rel).write_text(text)


def _expected(classes: list[Cls]) -> set[tuple[str, str, str | None]]:
    expected: set[tuple[str, str, str | None]] = set()
    for i, cls in enumerate(classes):
        qual = f"{_module_name(cls.module)}.{cls.name}"
        if cls.body == "forward":
            expected.add(("forbidden-override", qual, "rename"))
            continue
        leaf = not any(c.parent == i for c in classes)
        chain: list[Cls] = []
        j: int | None = i
        while j is not None:
            chain.append(classes[j])
            j = classes[j].parent
        if leaf and all(c.body == "none" for c in chain):
            double = cls.module.startswith("tests/") or cls.name.startswith("_")
            expected.add(("missing-hook", qual, "stub" if double else None))
    return expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hierarchies())
def test_sweep_finds_every_violation_and_fix_converges(classes: list[Cls]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write(root, classes)
        found = {(v.kind, v.class_qualname, v.fix) for v in sweep(root).violations}
        assert found == _expected(classes)

        result = fix(root, imports=False)
        assert all(c.evidence is not None and c.evidence.ok for c in result.changes)
        write_changes(root, result)
        for rel in MODULES:
            ast.parse((root / rel).read_text())
        left = {(v.kind, v.fix) for v in sweep(root).violations}
        assert left <= {("missing-hook", None)}
        assert fix(root, imports=False).changes == []
