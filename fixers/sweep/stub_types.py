"""A stub's signature carried from a base class's method into a subclass's module.

A generated stub overrides a base method, so mypy wants its signature compatible with the
base's: the same parameters and return type. The annotations are the base's, read in the base's
module; each name they use must mean the same thing in the subclass's module:

* a builtin, or a name the subclass's module binds to the same thing: written as is;
* a class or module the base's module imports or defines (and the subclass's module does not
  bind): imported under ``if TYPE_CHECKING:`` and the annotation quoted (unless the module has
  ``from __future__ import annotations``), so nothing new runs at import time;
* anything else (a name bound to something else, a star import, a local alias): the parameter
  is annotated ``object`` (a supertype of every argument, so still a compatible override) and
  the return annotation left out (``Any``).
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from fixers.learned.signature_edit import Function, Param, params_of, params_source
from fixers.sweep.fix_types import type_checking_only
from fixers.sweep.index import RepoIndex

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class StubSignature:
    """``def name(<params>)<returns>:`` for a stub, and the TYPE_CHECKING imports it needs
    (``module:Name``, or ``module:`` for ``import module``)."""

    params: str
    returns: str
    imports: tuple[str, ...]
    is_async: bool

    def source(self, name: str, body: str = "raise NotImplementedError") -> str:
        """The stub's text at column 0: ``def name(...) -> T:`` and a four-space body."""
        prefix = "async def" if self.is_async else "def"
        return f"{prefix} {name}({self.params}){self.returns}:\n    {body}\n"


@dataclass
class _Carrier:
    """Carries annotation text from the base's module into the target's."""

    index: RepoIndex
    base_module: str
    target_bound: dict[str, str]
    guarded: set[str]
    future: bool
    imports: dict[str, None]

    def _meaning(self, name: str) -> str:
        """How ``name`` from the base's module reads in the target's: "same" (bound alike),
        "guarded" (bound alike, but only under ``TYPE_CHECKING``), "builtin", "differs" (the
        target binds it to something else) or "unbound"."""
        meant = self.index.resolve(self.base_module, name)
        if name in self.target_bound:
            if self.target_bound[name] != meant:
                return "differs"
            return "guarded" if name in self.guarded else "same"
        return "builtin" if meant == name and name in _BUILTINS else "unbound"

    def runs_here(self, text: str) -> bool:
        """Whether an expression evaluated at ``def`` time (a default) means the same in the
        target module: only builtins and names the target binds alike."""
        node = _expression(text)
        return node is not None and all(
            self._meaning(name) in ("same", "builtin") for name in _names_in(node)
        )

    def carry(self, text: str | None) -> str | None:
        """``text`` as the target module should write it, or None when it cannot."""
        node = _expression(text) if text is not None else None
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.carry(node.value)
        needed: dict[str, None] = {}
        quote = False
        for name in sorted(_names_in(node)):
            meaning = self._meaning(name)
            if meaning == "differs":
                return None  # the name means something else there
            quote = quote or meaning == "guarded"
            if meaning != "unbound":
                continue
            spec = _import_for(name, self.index.resolve(self.base_module, name), self.index,
                               self.base_module)  # fmt: skip
            if spec is None:
                return None
            needed[spec] = None
        self.imports.update(needed)
        written = ast.unparse(node)
        if (needed or quote) and not self.future:
            return f'"{written}"' if '"' not in written else repr(written)
        return written


def _expression(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _names_in(node: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _module_names(tree: ast.Module) -> set[str]:
    """The names a module's top level binds (assignments, ``def``, ``class``, imports)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
    return names


def _import_for(name: str, meant: str, index: RepoIndex, base_module: str) -> str | None:
    """``module:Name`` importing ``name`` as the base's module means it, or None."""
    facts = index.module_facts(base_module)
    bound = dict(facts.bindings) if facts is not None else {}
    if meant == name and bound.get(name) == name:
        return f"{name}:"  # ``import torch`` in the base's module
    module, _, last = meant.rpartition(".")
    if module and last == name:
        return f"{module}:{name}"
    return None


def stub_signature(
    index: RepoIndex,
    base_rel: str | None,
    function: Function,
    target_rel: str,
    *,
    typed: bool = False,
) -> StubSignature:
    """The stub signature of ``function`` (defined in ``base_rel``) for a class in
    ``target_rel``. Without a base file (a library's), annotations are kept only where they
    are builtins or bound alike in the target. ``typed``: what the base leaves unannotated is
    typed anyway (parameters ``object``, the return ``None``), so the stub is checked."""
    target = index.files[target_rel].module if target_rel in index.files else ""
    base_module = index.files[base_rel].module if base_rel in index.files else target
    tree = index.tree(target_rel)
    # Every module-level name the target binds, to what it stands for ("" when not a name
    # the index can follow: a function, a variable): a name bound to anything else is not
    # the base's.
    bound = {name: "" for name in _module_names(tree)} if tree is not None else {}
    facts = index.facts.get(target_rel)
    if facts is not None:
        named = [local for local, _ in [*facts.bindings, *facts.aliases]]
        named += [c.qualname for c in facts.classes]
        bound |= {name: index.resolve(target, name) for name in named}
    data = index.read(target_rel) or b""
    carrier = _Carrier(
        index,
        base_module,
        bound,
        type_checking_only(tree) if tree is not None else set(),
        b"from __future__ import annotations" in data,
        {},
    )
    params: list[Param] = []
    for i, param in enumerate(params_of(function)):
        annotation = param.annotation
        if annotation is not None:
            annotation = carrier.carry(annotation) or "object"
        elif typed and not (i == 0 and param.kind in ("positional", "positional-only")):
            annotation = "object"  # ``self``/``cls`` aside
        params.append(Param(param.name, param.kind, param.default, annotation))
    if function.returns is None:
        returns = "None" if typed else None
    else:
        returns = carrier.carry(ast.unparse(function.returns))
    written = params_source(tuple(params))
    if any(p.default is not None and not carrier.runs_here(p.default) for p in params):
        # A default that means something else here would run at ``def`` time: take anything.
        first = params[0].name if params and params[0].kind != "keyword-only" else None
        written = ", ".join([*([first] if first else []), "*args: object", "**kwargs: object"])
    return StubSignature(
        written,
        f" -> {returns}" if returns else "",
        tuple(carrier.imports),
        isinstance(function, ast.AsyncFunctionDef),
    )
