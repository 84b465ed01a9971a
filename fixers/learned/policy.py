"""What a repository says about learned migrations: ``[learned]`` in ``.repairbot.toml``.

```toml
[learned]
forbid = ["Exporter.*"]          # "Base.method" patterns: reported, never learned

[[learned.pin]]                  # a rule a maintainer fixes in advance: applied as written,
base = "Carrier"                 # whether or not the siblings agree (or exist)
method = "ship"
from = "dispatch"                # optional: the old name (a rename)
add = "*, priority=0"            # optional: parameters to add, as they read in a def
```
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from fixers.learned.signature_edit import Param, params_of

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_MAX_DEPTH = 100_000


@dataclass(frozen=True)
class Pin:
    """A maintainer's rule for ``base.method``: rename from ``old`` (optional), add ``added``."""

    base: str
    method: str
    old: str | None
    added: tuple[Param, ...]


@dataclass(frozen=True)
class LearnedConfig:
    """``[learned]``: the patterns never learned and the pinned rules."""

    forbid: tuple[str, ...] = ()
    pins: tuple[Pin, ...] = ()


@dataclass(frozen=True)
class Policy:
    """What the engine obeys: the repository's ``[learned]``, its test dirs, the history limit."""

    forbid: tuple[str, ...] = ()
    pins: tuple[Pin, ...] = ()
    test_dirs: tuple[str, ...] = ("tests", "test", "testing")
    max_depth: int = DEFAULT_MAX_DEPTH

    def pin_for(self, base: str, method: str) -> Pin | None:
        """The pinned rule for ``base.method``, if any."""
        return next((p for p in self.pins if (p.base, p.method) == (base, method)), None)


def _added(source: str, where: str) -> tuple[Param, ...]:
    try:
        function = ast.parse(f"def f(self, {source}): pass").body[0]
    except SyntaxError as exc:
        raise ValueError(f"{where}: 'add' is not a parameter list: {source!r}") from exc
    assert isinstance(function, ast.FunctionDef)
    return params_of(function)[1:]


def _pin(table: object, where: str) -> Pin:
    if not isinstance(table, dict):
        raise ValueError(f"{where}: must be a table")
    unknown = set(table) - {"base", "method", "from", "add"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
    names = {key: table.get(key) for key in ("base", "method", "from")}
    for key, value in names.items():
        if (value is not None or key != "from") and not (
            isinstance(value, str) and _IDENT.match(value)
        ):
            raise ValueError(f"{where}: {key!r} must be a Python identifier, got {value!r}")
    add = table.get("add", "")
    if not isinstance(add, str):
        raise ValueError(f"{where}: 'add' must be a string")
    added = _added(add, where) if add.strip() else ()
    if names["from"] is None and not added:
        raise ValueError(f"{where}: a pin needs 'from' (a rename) or 'add' (new parameters)")
    return Pin(str(names["base"]), str(names["method"]), names["from"], added)


def parse_learned(table: object, config_file: str) -> tuple[LearnedConfig, list[str]]:
    """``[learned]`` read from its TOML table; problems are returned, never raised."""
    where = f"{config_file} [learned]"
    if not isinstance(table, dict):
        return LearnedConfig(), [f"{where}: must be a table"]
    errors: list[str] = []
    forbid = table.get("forbid", [])
    if not isinstance(forbid, list) or not all(isinstance(p, str) for p in forbid):
        errors.append(f"{where}: 'forbid' must be a list of strings")
        forbid = []
    pins: list[Pin] = []
    raw = table.get("pin", [])
    for number, entry in enumerate(raw if isinstance(raw, list) else [raw], start=1):
        try:
            pins.append(_pin(entry, f"{where} pin #{number}"))
        except ValueError as exc:
            errors.append(str(exc))
    return LearnedConfig(tuple(forbid), tuple(pins)), errors
