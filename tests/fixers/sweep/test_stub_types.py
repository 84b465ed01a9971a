"""Stubs typed from the base's signature: what the test double's module can see, imports under
TYPE_CHECKING for the rest, and the result checked by mypy itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from fixers.sweep.run import fix, write_changes

BASE = """
import abc

from shapes.units import Area, Unit


class Shape(abc.ABC):
    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "area" in cls.__dict__:
            raise TypeError(f"{cls.__name__} must not override Shape.area; implement _area_impl instead")

    def area(self, unit: Unit, *, exact: bool = False) -> {returns}:
        return self._area_impl(unit, exact=exact)

    @abc.abstractmethod
    def _area_impl(self, unit: Unit, *, exact: bool = False) -> {returns}: ...
"""


def _shapes(root: Path, returns: str, double: str) -> Path:
    files = {
        "shapes/__init__.py": "",
        "shapes/units.py": "class Unit:\n    pass\n\n\nclass Area(float):\n    pass\n",
        "shapes/base.py": BASE.replace("{returns}", returns),
        "tests/test_shapes.py": double,
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def _mypy(root: Path) -> subprocess.CompletedProcess[str]:
    # mypy itself, as a maintainer's CI would run it on the fixed tree.
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "shapes", "tests"],
        cwd=root, capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip


DOUBLE = """
from shapes.base import Shape


class FakeShape(Shape):
    sides = 0


def test_sides() -> None:
    assert FakeShape.sides == 0
"""


def test_a_stub_imports_what_its_annotations_name_and_passes_mypy(tmp_path: Path) -> None:
    root = _shapes(tmp_path, "Area", DOUBLE)
    result = fix(root, imports=False)
    assert write_changes(root, result) == ["tests/test_shapes.py"]
    text = (root / "tests/test_shapes.py").read_text()
    assert 'def _area_impl(self, unit: "Unit", *, exact: bool = False) -> "Area":' in text
    assert (
        "if TYPE_CHECKING:\n    from shapes.units import Unit\n    from shapes.units import Area\n"
        in text
    )
    checked = _mypy(root)
    assert checked.returncode == 0, checked.stdout


def test_a_stub_keeps_a_builtin_return_type_and_names_the_module_already_binds(
    tmp_path: Path,
) -> None:
    double = DOUBLE.replace("from shapes.base import Shape\n", "from shapes.base import Shape\nfrom shapes.units import Unit\n")  # fmt: skip
    root = _shapes(tmp_path, "float", double)
    write_changes(root, fix(root, imports=False))
    text = (root / "tests/test_shapes.py").read_text()
    assert "def _area_impl(self, unit: Unit, *, exact: bool = False) -> float:" in text
    assert "TYPE_CHECKING" not in text
    checked = _mypy(root)
    assert checked.returncode == 0, checked.stdout


def test_a_name_the_double_binds_to_something_else_is_not_borrowed(tmp_path: Path) -> None:
    double = DOUBLE.replace("from shapes.base import Shape\n", "from shapes.base import Shape\n\nUnit = int\n")  # fmt: skip
    root = _shapes(tmp_path, "float", double)
    write_changes(root, fix(root, imports=False))
    text = (root / "tests/test_shapes.py").read_text()
    assert "def _area_impl(self, unit: object, *, exact: bool = False) -> float:" in text
