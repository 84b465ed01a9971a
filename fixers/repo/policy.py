"""A repository's own switches for the bot, from its ``.repairbot.toml``: whether repairbot works
there at all, the paths it leaves alone, and how far it goes per failure signature.

```toml
[repairbot]
enabled = true                    # false: nothing is fixed, suggested or reported here
opt_out_paths = ["legacy/**"]     # fnmatch patterns: violations under them are left alone

[autonomy]
default = "pr+verify"             # report | suggest | pr | pr+verify
[autonomy.signatures]
"contract-forward-override" = "report"
```

The pipeline reads this from the base branch, never from a PR head (a PR must not raise its own
autonomy or opt its own violations out). Parsing is pure: every problem becomes a line in
``errors`` and the key it concerns keeps its default, so a bad file never stops a repair.
"""

from __future__ import annotations

import enum
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from fixers.classify.signatures import UNCLASSIFIED, builtin_signatures
from fixers.contracts.model import CONFIG_FILE
from fixers.repo.config_schema import validate_data, without_invalid

MAX_PATTERNS = 200
MAX_PATTERN_CHARS = 300


class Autonomy(enum.StrEnum):
    """How far the bot goes for a failure: the ladder from telling to fixing and proving it."""

    REPORT = "report"  # classify and say so; nothing is opened or posted
    SUGGEST = "suggest"  # reviews and comments only: the fix as a suggestion, no PR
    PR = "pr"  # open the fix PR; no automatic verification
    PR_VERIFY = "pr+verify"  # open the fix PR and verify it at once (the default)


DEFAULT_AUTONOMY = Autonomy.PR_VERIFY
_MODES = ", ".join(f'"{mode.value}"' for mode in Autonomy)
_REPAIRBOT_KEYS = frozenset({"enabled", "opt_out_paths"})
_AUTONOMY_KEYS = frozenset({"default", "signatures"})


@dataclass(frozen=True)
class RepoPolicy:
    """What a repository allows the bot; ``source`` says where it was read (for reasons)."""

    enabled: bool = True
    opt_out_paths: tuple[str, ...] = ()
    default: Autonomy = DEFAULT_AUTONOMY
    signatures: Mapping[str, Autonomy] = field(default_factory=dict)
    source: str = CONFIG_FILE
    errors: tuple[str, ...] = ()

    def mode_for(self, signature: str) -> Autonomy:
        """The autonomy for runs of ``signature``."""
        return self.signatures.get(signature, self.default)

    def why(self, signature: str) -> str:
        """Where the mode of ``signature`` comes from, for a run's reason."""
        mode = self.mode_for(signature)
        if signature in self.signatures:
            return f'autonomy "{mode}" for {signature} ([autonomy.signatures] in {self.source})'
        return f'autonomy "{mode}" ([autonomy] default in {self.source})'

    def opted_out(self, path: str) -> bool:
        """Whether ``path`` (relative, ``/``-separated) is under one of ``opt_out_paths``."""
        return any(fnmatchcase(path, pattern) for pattern in self.opt_out_paths)


def known_signatures() -> frozenset[str]:
    """The signature ids a ``[autonomy.signatures]`` entry may name."""
    return frozenset(s.id for s in builtin_signatures()) | {UNCLASSIFIED}


def _mode(value: object, where: str) -> Autonomy:
    if isinstance(value, str) and value in Autonomy._value2member_map_:
        return Autonomy(value)
    raise ValueError(f"{CONFIG_FILE}: {where} must be one of {_MODES}, got {value!r}")


def _unknown(table: Mapping[str, Any], allowed: frozenset[str], where: str) -> list[str]:
    extra = sorted(set(table) - allowed)
    if not extra:
        return []
    return [f"{CONFIG_FILE}: unknown keys in [{where}]: {extra}; allowed: {sorted(allowed)}"]


def _patterns(value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ValueError(f"{CONFIG_FILE}: [repairbot] opt_out_paths must be a list of patterns")
    if len(value) > MAX_PATTERNS or any(len(p) > MAX_PATTERN_CHARS for p in value):
        raise ValueError(
            f"{CONFIG_FILE}: [repairbot] opt_out_paths: at most {MAX_PATTERNS} patterns of "
            f"{MAX_PATTERN_CHARS} characters"
        )
    return tuple(p.removeprefix("./") for p in value)


def _repairbot(table: object, errors: list[str]) -> tuple[bool, tuple[str, ...]]:
    """``[repairbot]``: the whole-repository switch and the opted-out paths."""
    if table is None:
        return True, ()
    if not isinstance(table, dict):
        errors.append(f"{CONFIG_FILE}: [repairbot] must be a table")
        return True, ()
    errors += _unknown(table, _REPAIRBOT_KEYS, "repairbot")
    enabled = True
    paths: tuple[str, ...] = ()
    if "enabled" in table:
        if isinstance(table["enabled"], bool):
            enabled = table["enabled"]
        else:
            errors.append(f"{CONFIG_FILE}: [repairbot] enabled must be true or false")
    if "opt_out_paths" in table:
        try:
            paths = _patterns(table["opt_out_paths"])
        except ValueError as exc:
            errors.append(str(exc))
    return enabled, paths


def _per_signature(table: object, errors: list[str]) -> dict[str, Autonomy]:
    if not isinstance(table, dict):
        errors.append(f"{CONFIG_FILE}: [autonomy.signatures] must be a table of id = mode")
        return {}
    known, modes = known_signatures(), {}
    for signature, value in table.items():
        if signature not in known:
            errors.append(
                f"{CONFIG_FILE}: [autonomy.signatures] names unknown signature {signature!r}; "
                f"known: {sorted(known)}"
            )
            continue
        try:
            modes[signature] = _mode(value, f"[autonomy.signatures] {signature!r}")
        except ValueError as exc:
            errors.append(str(exc))
    return modes


def _autonomy(table: object, errors: list[str]) -> tuple[Autonomy, dict[str, Autonomy]]:
    """``[autonomy]``: the default mode and the per-signature ones."""
    if table is None:
        return DEFAULT_AUTONOMY, {}
    if not isinstance(table, dict):
        errors.append(f"{CONFIG_FILE}: [autonomy] must be a table")
        return DEFAULT_AUTONOMY, {}
    errors += _unknown(table, _AUTONOMY_KEYS, "autonomy")
    default = DEFAULT_AUTONOMY
    if "default" in table:
        try:
            default = _mode(table["default"], "[autonomy] default")
        except ValueError as exc:
            errors.append(str(exc))
    signatures = _per_signature(table["signatures"], errors) if "signatures" in table else {}
    return default, signatures


def parse_policy(text: str, source: str = CONFIG_FILE) -> RepoPolicy:
    """The policy in ``.repairbot.toml`` text; problems are in ``errors`` (defaults kept)."""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:  # RecursionError: arrays nested
        # a few thousand deep (a hostile file) exhaust tomllib's recursive parser
        return RepoPolicy(source=source, errors=(f"{CONFIG_FILE}: not valid TOML: {exc}",))
    # The schema's problems with this policy's own tables; the rest of the file is the
    # sweep's to report.
    problems = [
        p for p in validate_data(data, text) if p.loc[:1] in (("repairbot",), ("autonomy",))
    ]
    data = without_invalid(data, problems)
    errors: list[str] = [p.render(CONFIG_FILE) for p in problems]
    enabled, paths = _repairbot(data.get("repairbot"), errors)
    default, signatures = _autonomy(data.get("autonomy"), errors)
    return RepoPolicy(
        enabled=enabled,
        opt_out_paths=paths,
        default=default,
        signatures=signatures,
        source=source,
        errors=tuple(errors),
    )
