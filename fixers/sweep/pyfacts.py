"""Facts the repository index keeps about one Python module, extracted with the stdlib ``ast``.

``ast`` is an order of magnitude faster than LibCST, so the index reads modules with it and
LibCST is only used for the few files a codemod rewrites. Facts are plain frozen data (picklable,
cacheable by content hash).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class ClassFacts:
    """One class statement: where it is, what it derives from, which methods it defines."""

    name: str
    qualname: str
    lineno: int
    end_lineno: int
    bases: tuple[str, ...]
    methods: tuple[str, ...]
    abstract_methods: tuple[str, ...]
    nested: bool
    method_lines: tuple[int, ...] = ()  # the ``def`` line of each of ``methods``, in order

    def line_of(self, method: str) -> int:
        """The line of ``def method`` in this class (the class line when it has none): where a
        reviewer looks, and where an annotation on the PR belongs."""
        if method in self.methods and len(self.method_lines) == len(self.methods):
            return self.method_lines[self.methods.index(method)]
        return self.lineno


@dataclass(frozen=True)
class ModuleFacts:
    """Classes, import bindings and module-level aliases of one module.

    ``bindings`` maps a module-level local name to the dotted name it stands for
    (``from .a import B as C`` in ``pkg.m`` gives ``C -> pkg.a.B``; ``import a.b as c`` gives
    ``c -> a.b``; ``Alias = pkg.Base`` gives ``Alias -> pkg.Base`` once resolved by the index).
    """

    module: str
    is_package: bool
    classes: tuple[ClassFacts, ...]
    bindings: tuple[tuple[str, str], ...]
    aliases: tuple[tuple[str, str], ...]
    star_imports: tuple[str, ...]


class FactsError(Exception):
    """The module could not be read as Python; the message says why."""


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.C`` for a Name/Attribute chain, ``C`` for ``C[int]``; None for anything else."""
    if isinstance(node, ast.Subscript):
        return dotted_name(node.value)
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def is_abstract(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method is decorated with ``abstractmethod`` (any import style)."""
    for deco in func.decorator_list:
        name = dotted_name(deco)
        if name is not None and name.rsplit(".", 1)[-1] == "abstractmethod":
            return True
    return False


def resolve_relative(module: str, is_package: bool, level: int, target: str | None) -> str:
    """The absolute module named by ``from <level dots><target> import ...`` inside ``module``."""
    if level == 0:
        return target or ""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    if target:
        parts.append(target)
    return ".".join(parts)


def _class_facts(node: ast.ClassDef, prefix: str, nested: bool) -> list[ClassFacts]:
    qualname = f"{prefix}{node.name}"
    methods: list[str] = []
    lines: list[int] = []
    abstract: list[str] = []
    inner: list[ClassFacts] = []
    for stmt in node.body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            methods.append(stmt.name)
            lines.append(stmt.lineno)
            if is_abstract(stmt):
                abstract.append(stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            inner.extend(_class_facts(stmt, f"{qualname}.", True))
    bases = tuple(b for b in (dotted_name(base) for base in node.bases) if b is not None)
    facts = ClassFacts(
        name=node.name,
        qualname=qualname,
        lineno=node.lineno,
        end_lineno=node.end_lineno or node.lineno,
        bases=bases,
        methods=tuple(methods),
        abstract_methods=tuple(abstract),
        nested=nested,
        method_lines=tuple(lines),
    )
    return [facts, *inner]


def _import_bindings(
    stmt: ast.Import | ast.ImportFrom, module: str, is_package: bool
) -> tuple[list[tuple[str, str]], list[str]]:
    bindings: list[tuple[str, str]] = []
    stars: list[str] = []
    if isinstance(stmt, ast.Import):
        for alias in stmt.names:
            if alias.asname:
                bindings.append((alias.asname, alias.name))
            else:
                head = alias.name.split(".", 1)[0]
                bindings.append((head, head))
        return bindings, stars
    source = resolve_relative(module, is_package, stmt.level, stmt.module)
    for alias in stmt.names:
        if alias.name == "*":
            stars.append(source)
        else:
            target = f"{source}.{alias.name}" if source else alias.name
            bindings.append((alias.asname or alias.name, target))
    return bindings, stars


def _walk_module_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, looking inside ``if``/``try`` blocks (TYPE_CHECKING, fallbacks)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        if isinstance(stmt, ast.If):
            out.extend(_walk_module_level(stmt.body))
            out.extend(_walk_module_level(stmt.orelse))
        elif isinstance(stmt, ast.Try):
            out.extend(_walk_module_level(stmt.body))
            for handler in stmt.handlers:
                out.extend(_walk_module_level(handler.body))
            out.extend(_walk_module_level(stmt.orelse))
    return out


def module_facts_from_tree(tree: ast.Module, module: str, is_package: bool) -> ModuleFacts:
    """Extract the facts from an already parsed module."""
    classes: list[ClassFacts] = []
    bindings: list[tuple[str, str]] = []
    aliases: list[tuple[str, str]] = []
    stars: list[str] = []
    for stmt in _walk_module_level(tree.body):
        if isinstance(stmt, ast.ClassDef):
            classes.extend(_class_facts(stmt, "", False))
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            found, star = _import_bindings(stmt, module, is_package)
            bindings.extend(found)
            stars.extend(star)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            value = dotted_name(stmt.value)
            if isinstance(target, ast.Name) and value is not None:
                aliases.append((target.id, value))
    return ModuleFacts(
        module=module,
        is_package=is_package,
        classes=tuple(classes),
        bindings=tuple(bindings),
        aliases=tuple(aliases),
        star_imports=tuple(stars),
    )


def parse_python(data: bytes, filename: str) -> ast.Module:
    """Parse source bytes, turning every way it can fail into a ``FactsError`` with a reason."""
    try:
        return ast.parse(data, filename=filename)
    except SyntaxError as exc:
        raise FactsError(f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise FactsError(f"not valid Python source text: {exc}") from exc
    except RecursionError as exc:
        raise FactsError("too deeply nested to parse") from exc


def module_facts(data: bytes, filename: str, module: str, is_package: bool) -> ModuleFacts:
    """Parse ``data`` and extract its facts; raises ``FactsError`` when it is not Python."""
    return module_facts_from_tree(parse_python(data, filename), module, is_package)
