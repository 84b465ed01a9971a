"""One schema for every table of ``.repairbot.toml``: every key checked, every error at once.

The readers of each table (``fixers.contracts.model``, ``fixers.learned.policy``,
``fixers.repo.policy``, the runner's ``[verify]``) turn valid data into settings; this module
says whether the file is valid at all: unknown keys and tables (with a "did you mean"), wrong
types (``python = 3.10`` is a float, not "3.10"; ``enabled = "no"`` is a string), values outside
their set (``default = "yolo"``), each with the line it is on. ``repairbot config check`` prints
them; ``check``, ``sweep`` and ``fix`` exit non-zero when the file they were asked to use has
any.
"""

from __future__ import annotations

import copy
import difflib
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr
from pydantic import ValidationError as PydanticValidationError

Identifier = Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Dotted = Annotated[StrictStr, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
Mode = Literal["report", "suggest", "pr", "pr+verify"]


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ContractTable(_Table):
    """``[[contract]]``: a forbidden override and the hook subclasses implement instead."""

    name: StrictStr | None = None
    base: Identifier
    base_module: Dotted | None = None
    forbidden: Identifier | None = None
    hook: Identifier | None = None
    restore_hook: Identifier | None = None
    metadata_params: list[Identifier] | None = None


class VerifyTable(_Table):
    """``[verify]``: how the target's tests run for a verification (bot/runner/environment.py)."""

    command: StrictStr | None = None
    python: Annotated[StrictStr, Field(pattern=r"^/")] | None = None
    environment: Literal["uv"] | None = None
    requirements: list[StrictStr] | None = None
    image: StrictStr | None = None


class FanOutTable(_Table):
    """``[fan_out]``: the command posted on PRs a base-branch fix unblocks."""

    rerun_command: StrictStr | None = None


class RepairbotTable(_Table):
    """``[repairbot]``: the repository's switch and opted-out paths (the service's)."""

    enabled: StrictBool = True
    opt_out_paths: list[StrictStr] = Field(default_factory=list)


class AutonomyTable(_Table):
    """``[autonomy]``: how far the service goes, by default and per signature."""

    default: Mode = "pr+verify"
    signatures: dict[str, Mode] = Field(default_factory=dict)


class PinTable(_Table):
    """``[[learned.pin]]``: a migration rule applied as written."""

    base: Identifier
    method: Identifier
    from_: Identifier | None = Field(default=None, alias="from")
    add: StrictStr = ""


class LearnedTable(_Table):
    """``[learned]``: rules never learned, rules pinned."""

    forbid: list[StrictStr] = Field(default_factory=list)
    pin: list[PinTable] = Field(default_factory=list)


class ConfigFile(_Table):
    """The whole ``.repairbot.toml``."""

    python: Annotated[StrictStr, Field(pattern=r"^\s*(>=|~=|==|>)?\s*3\.\d+")] | None = None
    test_dirs: list[StrictStr] | None = None
    exclude: list[StrictStr] | None = None
    max_file_bytes: Annotated[StrictInt, Field(gt=0)] | None = None
    contract: list[ContractTable] = Field(default_factory=list)
    verify: VerifyTable | None = None
    fan_out: FanOutTable | None = None
    repairbot: RepairbotTable | None = None
    autonomy: AutonomyTable | None = None
    learned: LearnedTable | None = None


@dataclass(frozen=True)
class ConfigError:
    """One problem: the line it is on (None when not known) and what is wrong."""

    line: int | None
    where: str  # the key path, ``verify.command`` or ``contract[2].hook``
    message: str
    loc: tuple[str | int, ...] = ()  # the same path as data (list indexes from 0)

    def render(self, file: str) -> str:
        """``.repairbot.toml:12: verify.commnd: unknown key (did you mean 'command'?)``."""
        at = f"{file}:{self.line}" if self.line else file
        return f"{at}: {self.where}: {self.message}" if self.where else f"{at}: {self.message}"


def _allowed(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _model_at(loc: Sequence[str | int]) -> type[BaseModel] | None:
    """The table model a key path points into (for the keys it allows)."""
    model: type[BaseModel] | None = ConfigFile
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part) or next(
            (f for f in model.model_fields.values() if f.alias == part), None
        )
        if field is None:
            return model
        model = _table_type(field.annotation)
    return model


def _table_type(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _table_type(arg)
        if found is not None:
            return found
    return None


def _where(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _message(error: Any) -> str:
    loc = error["loc"]
    if error["type"] == "extra_forbidden":
        model = _model_at(loc[:-1])
        allowed = _allowed(model) if model is not None else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else f" (allowed: {', '.join(allowed)})"
        kind = "table" if isinstance(error.get("input"), dict) else "key"
        return f"unknown {kind}{hint}"
    if error["type"] == "missing":
        return "required"
    if tuple(loc) == ("python",) and isinstance(error.get("input"), float):
        return f'must be a string like "3.10" (unquoted, {error["input"]!r} is a number)'
    if tuple(loc) == ("python",):
        return f'must be a string like "3.10", got {error.get("input")!r}'
    got = error.get("input")
    shown = f"{got!r}" if not isinstance(got, dict | list) else type(got).__name__
    kind = error["type"]
    if kind == "literal_error":
        return f"must be one of {error['msg'].removeprefix('Input should be ')}, got {shown}"
    if kind == "string_pattern_mismatch":
        pattern = str(error.get("ctx", {}).get("pattern", ""))
        what = "a Python identifier" if pattern.endswith("]*$") else "a dotted module name"
        return f"must be {what}, got {shown}"
    words = _TYPE_WORDS.get(kind)
    return f"must be {words}, got {shown}" if words else f"{error['msg']}, got {shown}"


_TYPE_WORDS = {
    "bool_type": "true or false",
    "string_type": "a string",
    "int_type": "an integer",
    "list_type": "a list",
    "dict_type": "a table",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "greater_than": "greater than 0",
}


def _line_of(text: str, loc: Sequence[str | int]) -> int | None:
    """The line of key path ``loc`` in ``text``: the key inside the deepest table header the
    path names (``[[array]]`` entries counted), else that header's line."""
    lines = text.splitlines()
    header: int | None = None
    rest = [p for p in loc if isinstance(p, str)]
    for depth in range(len(loc), 0, -1):
        head = loc[:depth]
        names = [p for p in head if isinstance(p, str)]
        index = next((p for p in reversed(head) if isinstance(p, int)), None)
        pattern = re.compile(r"^\s*\[\[?\s*" + r"\s*\.\s*".join(map(re.escape, names)) + r"\s*\]")
        hits = [i for i, line in enumerate(lines) if pattern.match(line)]
        if hits and (index is None or index < len(hits)):
            header = hits[index or 0]
            rest = [p for p in loc[depth:] if isinstance(p, str)]
            break
    if not rest:
        return None if header is None else header + 1
    key = re.compile(r'^\s*["\']?' + re.escape(rest[0]) + r'["\']?\s*=')
    start = 0 if header is None else header + 1
    for i in range(start, len(lines)):
        if lines[i].lstrip().startswith("["):
            break  # the next table: the key is not in this one
        if key.match(lines[i]):
            return i + 1
    return None if header is None else header + 1


def validate_text(text: str) -> list[ConfigError]:
    """Every problem of a ``.repairbot.toml``'s text (empty when it is valid)."""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # RecursionError: arrays nested
        # a few thousand deep exhaust tomllib's recursive parser
        match = re.search(r"line (\d+)", str(exc))
        return [ConfigError(int(match.group(1)) if match else None, "", f"not valid TOML: {exc}")]
    return validate_data(data, text)


def validate_data(data: dict[str, Any], text: str = "") -> list[ConfigError]:
    """Every problem of parsed ``.repairbot.toml`` data (``text`` gives the lines)."""
    try:
        ConfigFile.model_validate(data)
    except PydanticValidationError as exc:
        found = [
            ConfigError(_line_of(text, e["loc"]), _where(e["loc"]), _message(e), tuple(e["loc"]))
            for e in exc.errors()
        ]
        return sorted(found, key=lambda e: (e.line or 0, e.where))
    return []


def without_invalid(data: dict[str, Any], errors: Sequence[ConfigError]) -> dict[str, Any]:
    """A copy of ``data`` less every key an error names (an entry of an array of tables as a
    whole), so the readers of each table see only valid keys and report nothing twice."""
    cleaned: dict[str, Any] = copy.deepcopy(data)
    dropped: list[tuple[list[Any], int]] = []
    for error in errors:
        node: Any = cleaned
        for depth, part in enumerate(error.loc):
            last = depth == len(error.loc) - 1
            if isinstance(part, int) and isinstance(node, list) and part < len(node):
                dropped.append((node, part))
                break
            if not isinstance(node, dict) or part not in node:
                break
            if last or not isinstance(node[part], dict | list):
                del node[part]
                break
            node = node[part]
    for items, index in sorted(dropped, key=lambda d: -d[1]):
        if index < len(items) and items[index] is not None:
            items[index] = None
    for items, _ in dropped:
        items[:] = [item for item in items if item is not None]
    return cleaned
