"""Source text the snapshot codemod generates, wrapped to the target file's line length.

Pure functions of strings. ``depth`` is where the code will sit in the file (for the line-length
check); the text itself is written as if its first line sat at column 0 (``col`` units for nested
lines), because LibCST re-bases continuation lines onto the block the statement lands in.
"""

from __future__ import annotations


def _fits(text: str, indent: str, depth: int, line_length: int) -> bool:
    return len(indent * depth) + len(text) <= line_length


def statement_text(
    prefix: str, items: list[str], suffix: str, indent: str, depth: int, line_length: int
) -> str:
    """``prefix(a, b)suffix`` on one line, or one item per line when that is too long."""
    inner = ", ".join(items) + ("," if len(items) == 1 else "")
    one_line = f"{prefix}({inner}){suffix}"
    if _fits(one_line, indent, depth, line_length):
        return one_line + "\n"
    lines = "".join(f"{indent}{item},\n" for item in items)
    return f"{prefix}(\n{lines}){suffix}\n"


def unpack_text(
    targets: list[str], value: str, indent: str, depth: int, line_length: int, col: int
) -> str:
    """``a, b = value`` on one line, or a bracketed target list one per line."""
    one_line = f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {value}"
    if _fits(one_line, indent, depth, line_length):
        return one_line
    lines = "".join(f"{indent * (col + 1)}{t},\n" for t in targets)
    return f"(\n{lines}{indent * col}) = {value}"


def signature_text(
    name: str, params: list[str], returns: str, indent: str, depth: int, line_length: int
) -> str:
    """A ``def`` line: one line, then black's two wrapped forms, as the line length requires."""
    joined = ", ".join(params)
    one_line = f"def {name}({joined}) -> {returns}:"
    if _fits(one_line, indent, depth, line_length):
        return one_line
    if _fits(joined, indent, depth + 1, line_length):
        return f"def {name}(\n{indent}{joined}\n) -> {returns}:"
    lines = "".join(f"{indent}{p},\n" for p in params)
    return f"def {name}(\n{lines}) -> {returns}:"


def restore_text(
    pairs: list[tuple[str, str]],
    tensors: list[bool],
    indent: str,
    depth: int,
    line_length: int,
) -> list[str]:
    """Lines putting ``saved`` back: one unpacking for values, ``copy_`` per tensor."""
    targets = [f"{p}.{a}" for p, a in pairs]
    if not any(tensors):
        return [unpack_text(targets, "saved", indent, depth, line_length, col=2)]
    return [
        f"{target}.copy_(saved[{i}])" if tensor else f"{target} = saved[{i}]"
        for i, (target, tensor) in enumerate(zip(targets, tensors, strict=True))
    ]


def hook_text(
    hook: str,
    method: str,
    attr: str,
    params: tuple[str, ...],
    annotations: list[str],
    pairs: list[tuple[str, str]],
    indent: str,
    depth: int,
    line_length: int,
    quote: str = '"""',
    tensors: list[bool] | None = None,
) -> str:
    """The restore-hook override: super() first, return if nothing saved, restore, clear."""
    typed = ["self", *(f"{p}: {a}" if a else p for p, a in zip(params, annotations, strict=True))]
    used = list(dict.fromkeys(p for p, _ in pairs))
    guard = " and ".join(f"{p} is not None" for p in used)
    restore = restore_text(pairs, tensors or [False] * len(pairs), indent, depth + 2, line_length)
    body = [
        f"{quote}Restore the state ``{method}`` saved if it failed before putting it back.{quote}",
        f"super().{hook}({', '.join(params)})",
        f"saved = self.{attr}",
        "if saved is None:",
        f"{indent}return",
        f"if {guard}:",
        *(f"{indent}{line}" for line in restore),
        f"self.{attr} = None",
    ]
    lines = "".join(f"{indent}{line}\n" for line in body)
    return f"{signature_text(hook, typed, 'None', indent, depth, line_length)}\n{lines}"


def pending_hook_text(
    hook: str,
    method: str,
    flag: str,
    params: tuple[str, ...],
    annotations: list[str],
    compensation: str,
    indent: str,
    depth: int,
    line_length: int,
    quote: str = '"""',
) -> str:
    """The restore-hook override for a deferred fix-up: undo it when it is still pending."""
    typed = ["self", *(f"{p}: {a}" if a else p for p, a in zip(params, annotations, strict=True))]
    used = [p for p in params if p in compensation]
    guard = " and ".join(f"{p} is not None" for p in used)
    body = [
        f"{quote}Undo the in-place adjustment ``{method}`` left pending when it failed.{quote}",
        f"super().{hook}({', '.join(params)})",
        f"if not self.{flag}:",
        f"{indent}return",
        *([f"if {guard}:", f"{indent}{compensation}"] if guard else [compensation]),
        f"self.{flag} = False",
    ]
    lines = "".join(f"{indent}{line}\n" for line in body)
    return f"{signature_text(hook, typed, 'None', indent, depth, line_length)}\n{lines}"


def init_text(attr: str, indent: str, line: str | None = None) -> str:
    """An ``__init__`` that passes everything to ``super()`` and sets the sentinel."""
    line = line or f"self.{attr}: tuple[object, ...] | None = None"
    return (
        "def __init__(self, *args: object, **kwargs: object) -> None:\n"
        f"{indent}super().__init__(*args, **kwargs)\n"
        f"{indent}{line}\n"
    )


def _import_line(module: str, name: str) -> str:
    return f"from {module} import {name}" if name else f"import {module}"


def type_checking_imports(imports: list[tuple[str, str]], indent: str) -> str:
    """The import lines for an existing ``if TYPE_CHECKING:`` block (an empty name: ``import
    module``)."""
    return "".join(f"{indent}{_import_line(module, name)}\n" for module, name in imports)


def type_checking_block(imports: list[tuple[str, str]], add_flag_import: bool, indent: str) -> str:
    """``if TYPE_CHECKING:`` imports for annotation-only names (and the flag's own import)."""
    head = "from typing import TYPE_CHECKING\n\n" if add_flag_import else "\n"
    return f"{head}if TYPE_CHECKING:\n{type_checking_imports(imports, indent)}"
