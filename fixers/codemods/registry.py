"""The codemods, found in ``fixers.codemods`` rather than listed: one declaration per module.

A module of the package is a codemod when it defines a module-level ``CODEMOD``, a
``CodemodSpec``; modules whose name starts with ``_`` are helpers and are not imported here, and
any other module without ``CODEMOD`` (``examples``, ``snapshot_text``, this one) is not a codemod.
The declaration says which ``Violation.fix`` the codemod repairs, which violation kinds, which
``fixer`` name failure signatures use for it, and the function that turns a violation into a
plan step. ``fixers.sweep.fix_plan`` looks fixes up here, ``fixers.classify.signatures``
checks ``fixer`` values here, and ``codemod_versions`` hashes each codemod's own source.

Adding a codemod is one new module with its ``CODEMOD`` (and its examples, which are its tests).
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Literal

from libcst.codemod import Codemod, CodemodContext

from fixers.codemods.examples import Example
from fixers.sweep.index import Hierarchy, Member, RepoIndex
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

CODEMOD_PACKAGE = "fixers.codemods"
DECLARATION = "CODEMOD"


class RegistryError(ValueError):
    """A codemod declaration that is malformed or clashes with another one."""


@dataclass(frozen=True)
class Step:
    """One codemod run on one file: the command class and its keyword options."""

    name: str
    command: type[Codemod]
    options: dict[str, object]
    classes: tuple[str, ...]

    def make(self) -> Codemod:
        """A fresh command instance (commands keep per-run state)."""
        return self.command(CodemodContext(), **self.options)


@dataclass
class PlanContext:
    """What every step builder of one ``plan_fixes`` call shares.

    ``marks`` lets steps see what earlier steps did to the same class: ``(tag, contract,
    class)`` triples, e.g. that its forbidden method was renamed, or that a step already
    overrides its restore hook.
    """

    index: RepoIndex
    python: tuple[int, int] | None
    line_length: int
    marks: set[tuple[str, str, str]] = field(default_factory=set)

    def mark(self, tag: str, v: Violation) -> None:
        """Record that ``tag`` happened to ``v``'s class (within ``v``'s contract)."""
        self.marks.add((tag, v.contract, v.class_qualname))

    def marked(self, tag: str, v: Violation) -> bool:
        """Whether an earlier step recorded ``tag`` for ``v``'s class."""
        return (tag, v.contract, v.class_qualname) in self.marks


StepBuilder = Callable[[PlanContext, Hierarchy, Violation], "Step | Skip"]
# A codemod that repairs a kind of its own also says how the sweep finds it: given the index,
# the contract's hierarchy and one member, its violations.
Finder = Callable[[RepoIndex, Hierarchy, Member], Iterable[Violation]]


@dataclass(frozen=True)
class CodemodSpec:
    """A codemod module's declaration of itself (its module-level ``CODEMOD``).

    ``name`` is the module's name (and the step name in PR markers, ``name@hash``); ``fix`` the
    ``Violation.fix`` value it repairs; ``kinds`` the violation kinds it repairs; ``fixer`` the
    name failure signatures give the repair (``fixer = ...`` in ``signatures.toml``);
    ``build_step`` turns a violation into a step (or a skip with the reason); ``order`` places its
    steps in a file's plan (lower first); ``review`` how a pre-merge review offers its edit: a
    one-click ``suggestion`` (an edit of a few lines in place) or a ``patch`` block (a new
    method and the lines that call it); ``finder``, for a kind no built-in analysis finds, how
    the sweep finds it; ``signatures``, ``[[signature]]`` tables in TOML (the shape of
    ``fixers/classify/signatures.toml``, ``fixer`` defaulting to this codemod's) that name the
    kind in CI logs, tried after the shipped ones (docs/extending.md).
    """

    name: str
    fix: str
    kinds: tuple[str, ...]
    fixer: str
    command: type[Codemod]
    build_step: StepBuilder
    order: int
    description: str = ""
    examples: tuple[Example, ...] = ()
    review: Literal["suggestion", "patch"] = "suggestion"
    finder: Finder | None = None
    signatures: str = ""

    def step(self, options: dict[str, object], classes: tuple[str, ...]) -> Step:
        """A step running this codemod's command with ``options`` on ``classes``."""
        return Step(self.name, self.command, options, classes)


@dataclass(frozen=True)
class Registry:
    """Every discovered codemod, in plan order, with the module that declared it."""

    codemods: tuple[CodemodSpec, ...]
    modules: Mapping[str, ModuleType]

    def names(self) -> tuple[str, ...]:
        """The codemod names, in plan order."""
        return tuple(spec.name for spec in self.codemods)

    def fixes(self) -> tuple[str, ...]:
        """The ``Violation.fix`` values some codemod repairs."""
        return tuple(spec.fix for spec in self.codemods)

    def kinds(self) -> frozenset[str]:
        """Every violation kind some codemod repairs."""
        return frozenset(kind for spec in self.codemods for kind in spec.kinds)

    def fixers(self) -> tuple[str, ...]:
        """The ``fixer`` names failure signatures may use."""
        return tuple(spec.fixer for spec in self.codemods)

    def for_fix(self, fix: str) -> CodemodSpec:
        """The codemod that repairs ``fix``; ``RegistryError`` naming the known fixes if none."""
        for spec in self.codemods:
            if spec.fix == fix:
                return spec
        raise RegistryError(
            f"no codemod repairs fix {fix!r}; known fixes: {', '.join(self.fixes())}"
        )

    def finders(self) -> list[Finder]:
        """How the sweep finds the kinds that codemods declare a finder for, in plan order."""
        return [spec.finder for spec in self.codemods if spec.finder is not None]

    def for_fixer(self, fixer: str) -> CodemodSpec | None:
        """The codemod a signature's ``fixer`` names, or None."""
        return next((spec for spec in self.codemods if spec.fixer == fixer), None)

    def version(self, name: str) -> str:
        """``name@<first 10 hex of the sha256 of its module's source>``, or ``name@unknown``."""
        module = self.modules.get(name)
        source = module_source(module) if module is not None else None
        digest = hashlib.sha256(source).hexdigest()[:10] if source is not None else "unknown"
        return f"{name}@{digest}"

    def versions(self, names: Iterable[str]) -> list[str]:
        """``version`` of each distinct name, sorted by name."""
        return [self.version(name) for name in sorted(set(names))]


def module_source(module: ModuleType) -> bytes | None:
    """The bytes a module was loaded from, through its own loader (None when it has none)."""
    spec = module.__spec__
    origin = spec.origin if spec is not None else None
    get_data = getattr(spec.loader, "get_data", None) if spec is not None else None
    if origin is None or get_data is None:
        return None
    try:
        data = get_data(origin)
    except OSError:
        return None
    return data if isinstance(data, bytes) else None


def _declaration(module: ModuleType) -> CodemodSpec | None:
    spec = getattr(module, DECLARATION, None)
    if spec is None:
        return None
    if not isinstance(spec, CodemodSpec):
        raise RegistryError(f"{module.__name__}.{DECLARATION} must be a CodemodSpec, not {spec!r}")
    short = module.__name__.rpartition(".")[2]
    if spec.name != short:
        raise RegistryError(
            f"{module.__name__}.{DECLARATION}.name is {spec.name!r}: it must be {short!r}, "
            "the module's name (PR markers hash the module by it)"
        )
    if not spec.fix or not spec.fixer or not spec.kinds:
        raise RegistryError(f"{module.__name__}.{DECLARATION}: fix, fixer and kinds are required")
    return spec


def _check_unique(specs: list[CodemodSpec]) -> None:
    for attribute in ("name", "fix", "fixer"):
        values = [getattr(spec, attribute) for spec in specs]
        clashes = sorted({v for v in values if values.count(v) > 1})
        if clashes:
            raise RegistryError(f"two codemods declare the same {attribute}: {clashes}")


def discover(package: str | ModuleType = CODEMOD_PACKAGE) -> Registry:
    """Import every non-helper module of ``package`` and collect each ``CODEMOD`` declaration.

    The package's ``__path__`` is walked as it stands (every entry of it), so a module placed
    in any of its folders is found with no list to edit.
    """
    pkg = importlib.import_module(package) if isinstance(package, str) else package
    names = sorted({info.name for info in pkgutil.iter_modules(pkg.__path__)})
    found: list[tuple[CodemodSpec, ModuleType]] = []
    for name in names:
        if name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{name}")
        spec = _declaration(module)
        if spec is not None:
            found.append((spec, module))
    found.sort(key=lambda pair: (pair[0].order, pair[0].name))
    _check_unique([spec for spec, _ in found])
    return Registry(tuple(spec for spec, _ in found), {spec.name: module for spec, module in found})


@cache
def builtin_codemods() -> Registry:
    """The codemods of ``fixers.codemods``, discovered once (``cache_clear()`` discovers again)."""
    return discover(CODEMOD_PACKAGE)


def codemod_versions(names: Iterable[str]) -> list[str]:
    """``name@<hash of its source>`` for each codemod: the exact code that made the change.

    Sorted and deduplicated; a name no registered codemod has is ``name@unknown``.
    """
    return builtin_codemods().versions(names)
