"""The codemod registry: codemods are found by their ``CODEMOD`` declaration, never listed.

The last tests add a codemod the way a contributor would, as one new module in a folder of the
``fixers.codemods`` package, and check that discovery, the plan builder, ``codemod_versions``
and the signatures loader all know it with no other edit.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import pkgutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from libcst.codemod import TransformSuccess, transform_module

import fixers.codemods
import fixers.sweep.fix_plan
from fixers.classify.signatures import SignatureError, parse_signatures
from fixers.codemods.registry import (
    RegistryError,
    builtin_codemods,
    codemod_versions,
    discover,
)
from fixers.sweep.fix_plan import plan_fixes
from fixers.sweep.run import run_sweep
from fixers.sweep.violation_types import Violation

PACKAGE_DIR = Path(fixers.codemods.__file__).resolve().parent


def test_a_module_is_a_codemod_exactly_when_it_declares_codemod():
    registered = set(builtin_codemods().names())
    for info in pkgutil.iter_modules([str(PACKAGE_DIR)]):
        if info.name.startswith("_"):
            assert info.name not in registered, "helpers are never codemods"
            continue
        module = importlib.import_module(f"fixers.codemods.{info.name}")
        assert (info.name in registered) == hasattr(module, "CODEMOD"), info.name
    assert {"examples", "snapshot_text", "registry"}.isdisjoint(registered)
    assert len(registered) >= 4


def test_every_violation_the_sweep_reports_is_a_kind_and_fix_the_registry_knows(
    tmp_path: Path,
) -> None:
    # The golden tree has every built-in kind a sweep finds; the registry is the one list.
    tree = Path(__file__).parents[2] / "fixtures" / "sweep" / "golden" / "before"
    report = run_sweep(tree).report
    codemods = builtin_codemods()
    assert {v.kind for v in report.violations} <= codemods.kinds()
    assert {v.fix for v in report.violations if v.fix} <= set(codemods.fixes())
    assert {"forbidden-override", "missing-hook", "transient-state"} <= {
        v.kind for v in report.violations
    }


def test_fix_plan_names_no_codemod():
    source = inspect.getsource(fixers.sweep.fix_plan)
    for spec in builtin_codemods().codemods:
        assert spec.name not in source and f'"{spec.fix}"' not in source, spec.name


def test_codemod_versions_hash_each_module_source():
    names = ["snapshot_state", "rename_forbidden", "rename_forbidden", "not_a_codemod"]
    expected = [
        f"{name}@{hashlib.sha256((PACKAGE_DIR / f'{name}.py').read_bytes()).hexdigest()[:10]}"
        for name in ("rename_forbidden", "snapshot_state")
    ]
    assert codemod_versions(names) == ["not_a_codemod@unknown", *expected]


def test_an_unknown_fix_names_the_known_fixes():
    with pytest.raises(RegistryError, match="known fixes: rename, stub"):
        builtin_codemods().for_fix("nope")


NEW_CODEMOD = '''
"""Mark a class as repaired (a codemod added by one file, in a test)."""

from __future__ import annotations

import libcst as cst

from fixers.codemods._common import ClassTargetCommand
from fixers.codemods.registry import CodemodSpec, PlanContext, Step
from fixers.sweep.index import Hierarchy
from fixers.sweep.violation_types import Violation

DESCRIPTION = "Add REPAIRED = True to the targeted classes."


class MarkRepairedCommand(ClassTargetCommand):
    DESCRIPTION: str = DESCRIPTION

    def edit_class(self, qualname: str, node: cst.ClassDef) -> cst.ClassDef:
        body = node.body
        assert isinstance(body, cst.IndentedBlock)
        line = cst.parse_statement("REPAIRED = True\\n")
        return node.with_changes(body=body.with_changes(body=[*body.body, line]))


def plan_step(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Step:
    qualname = hierarchy.members[v.class_qualname].facts.qualname
    return CODEMOD.step({"classes": [qualname]}, (qualname,))


CODEMOD = CodemodSpec(
    name="{name}",
    fix="mark",
    kinds=("missing-hook",),
    fixer="mark-repaired",
    command=MarkRepairedCommand,
    build_step=plan_step,
    order=9,
    description=DESCRIPTION,
)
'''


def _write_package(root: Path, name: str, files: dict[str, str]) -> None:
    package = root / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, text in files.items():
        (package / f"{module}.py").write_text(textwrap.dedent(text))
    importlib.invalidate_caches()


@pytest.fixture
def extra_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith("extra_codemods"):
            del sys.modules[name]


def test_discovery_follows_the_rules_not_a_list(extra_package: Path):
    _write_package(
        extra_package,
        "extra_codemods",
        {
            "mark_repaired": NEW_CODEMOD.replace("{name}", "mark_repaired"),
            "_helper": "raise AssertionError('helpers are not imported by discovery')\n",
            "notes": "TEXT = 'a module without CODEMOD is no codemod'\n",
        },
    )
    found = discover("extra_codemods")
    assert found.names() == ("mark_repaired",)
    assert found.for_fix("mark").fixer == "mark-repaired"
    assert found.versions(["mark_repaired"])[0].startswith("mark_repaired@")


@pytest.mark.parametrize(
    ("files", "complaint"),
    [
        ({"bad": "CODEMOD = 3\n"}, "must be a CodemodSpec"),
        ({"renamed": NEW_CODEMOD.replace("{name}", "other")}, "it must be 'renamed'"),
        (
            {
                "mark_a": NEW_CODEMOD.replace("{name}", "mark_a"),
                "mark_b": NEW_CODEMOD.replace("{name}", "mark_b"),
            },
            "same fix: ['mark']",
        ),
    ],
)
def test_malformed_declarations_are_refused(extra_package: Path, files, complaint):
    _write_package(extra_package, "extra_codemods", files)
    with pytest.raises(RegistryError, match=None) as raised:
        discover("extra_codemods")
    assert complaint in str(raised.value)


@pytest.fixture
def one_more_codemod(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """``mark_repaired.py`` in a second folder of the ``fixers.codemods`` package: one file."""
    folder = tmp_path / "more_codemods"
    folder.mkdir()
    module = folder / "mark_repaired.py"
    module.write_text(textwrap.dedent(NEW_CODEMOD.replace("{name}", "mark_repaired")))
    importlib.invalidate_caches()
    monkeypatch.setattr(fixers.codemods, "__path__", [*fixers.codemods.__path__, str(folder)])
    builtin_codemods.cache_clear()
    yield module
    sys.modules.pop("fixers.codemods.mark_repaired", None)
    builtin_codemods.cache_clear()


def _repo(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "w.py").write_text(
        "from spec import SpecWorkerBase\n\n\nclass MyWorker(SpecWorkerBase):\n"
        "    def _forward_impl(self, x):\n        return x\n"
    )
    return root


def test_adding_a_codemod_is_one_file(one_more_codemod: Path, tmp_path: Path):
    codemods = builtin_codemods()
    assert "mark_repaired" in codemods.names()
    assert codemods.for_fixer("mark-repaired") is codemods.for_fix("mark")

    state = run_sweep(_repo(tmp_path / "repo"))
    (hierarchy,) = [h for h in state.hierarchies if "pkg.w.MyWorker" in h.members]
    violation = Violation(
        "missing-hook", hierarchy.contract.name, "pkg/w.py", 4, "pkg.w.MyWorker", "d", "mark"
    )
    plans, skips = plan_fixes(state.index, state.hierarchies, [violation], None, 88)
    assert skips == []
    ((step,),) = [plan.steps for plan in plans]
    assert (step.name, step.command.__name__, step.classes) == (
        "mark_repaired",
        "MarkRepairedCommand",
        ("MyWorker",),
    )
    result = transform_module(step.make(), (tmp_path / "repo" / "pkg" / "w.py").read_text())
    assert isinstance(result, TransformSuccess) and "REPAIRED = True" in result.code

    digest = hashlib.sha256(one_more_codemod.read_bytes()).hexdigest()[:10]
    assert codemod_versions(["mark_repaired"]) == [f"mark_repaired@{digest}"]

    signature = '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a"\n'
    assert parse_signatures(signature + 'fixer = "mark-repaired"\n')[0].fixer == "mark-repaired"


def test_without_the_file_the_codemod_is_unknown():
    assert "mark_repaired" not in builtin_codemods().names()
    assert codemod_versions(["mark_repaired"]) == ["mark_repaired@unknown"]
    signature = '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a"\n'
    with pytest.raises(SignatureError, match="unknown fixer 'mark-repaired'"):
        parse_signatures(signature + 'fixer = "mark-repaired"\n')
