"""Failure signatures as ordered data (``signatures.toml``), loaded and validated once."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from fixers.codemods.registry import builtin_codemods
from fixers.contracts.model import BUILTIN_CONTRACTS

UNCLASSIFIED = "unclassified"


class SignatureError(ValueError):
    """A signatures file that is malformed; the message names the entry and the problem."""


@dataclass(frozen=True)
class SignatureExample:
    """A text the signature must match, with the captures it must produce."""

    text: str
    captures: Mapping[str, str]


@dataclass(frozen=True)
class Signature:
    """One recognisable failure: a pattern with named groups and the fixer it maps to."""

    id: str
    exception: str | None
    pattern: re.Pattern[str]
    anchor: str
    description: str
    fixer: str | None
    examples: tuple[SignatureExample, ...]
    # A group naming methods: the signature counts only when one of them is a known contract's
    # hook (a missing `_forward_impl` is the contract's; a missing `get_max_length` is not).
    requires_hook: str | None = None
    # False: a failure of the job, not of a test (lint errors, pytest running no test), read
    # from the end of a log with no failed test (``fixers.intake.log_errors``); its anchor only
    # prefilters its own search, the console reader never scans a log for it.
    scan: bool = True

    def search(self, text: str) -> re.Match[str] | None:
        """First match in ``text``, skipping the regex when the anchor literal is absent."""
        if self.anchor not in text:
            return None
        if self.requires_hook is None:
            return self.pattern.search(text)
        for match in self.pattern.finditer(text):
            if names_a_contract_hook(match[self.requires_hook] or ""):
                return match
        return None


def names_a_contract_hook(methods: str) -> bool:
    """Whether a ``'a', 'b'`` / ``a, b`` method list names the hook of a built-in contract."""
    names = {name.strip().strip("'\"") for name in methods.split(",")}
    return any(contract.hook in names for contract in BUILTIN_CONTRACTS)


def known_fixers() -> tuple[str, ...]:
    """The ``fixer`` values a signature may name: each registered codemod's ``fixer``."""
    return builtin_codemods().fixers()


def _parse_fixer(entry: Mapping[str, Any], where: str) -> str | None:
    fixer = entry.get("fixer")
    if fixer is None:
        return None
    if not isinstance(fixer, str):
        raise SignatureError(f"{where}: 'fixer' must be a string when present")
    known = known_fixers()
    if fixer not in known:
        raise SignatureError(
            f"{where}: unknown fixer {fixer!r}; known fixers: {', '.join(known)} "
            "(each codemod's CODEMOD.fixer in fixers/codemods/)"
        )
    return fixer


def _require(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise SignatureError(f"{where}: '{key}' must be a non-empty string")
    return value


def _parse_example(raw: Any, where: str) -> SignatureExample:
    if not isinstance(raw, Mapping):
        raise SignatureError(f"{where}: an example must be a table")
    captures = raw.get("captures", {})
    if not isinstance(captures, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in captures.items()
    ):
        raise SignatureError(f"{where}: 'captures' must map group names to strings")
    return SignatureExample(text=_require(raw, "text", where), captures=dict(captures))


def parse_signature(entry: Mapping[str, Any], position: int) -> Signature:
    """Build one signature from its TOML table, checking its pattern and examples."""
    where = f"signature #{position} ({entry.get('id', '?')})"
    sig_id = _require(entry, "id", where)
    try:
        pattern = re.compile(_require(entry, "pattern", where))
    except re.error as exc:
        raise SignatureError(f"{where}: pattern does not compile: {exc}") from exc
    fixer = _parse_fixer(entry, where)
    raw_examples = entry.get("example", [])
    if not isinstance(raw_examples, Sequence):
        raise SignatureError(f"{where}: 'example' must be an array of tables")
    examples = tuple(_parse_example(raw, where) for raw in raw_examples)
    anchor = _require(entry, "anchor", where)
    for example in examples:
        if anchor not in example.text:
            raise SignatureError(
                f"{where}: anchor {anchor!r} is missing from example {example.text!r}"
            )
        unknown = set(example.captures) - set(pattern.groupindex)
        if unknown:
            raise SignatureError(f"{where}: example names unknown groups {sorted(unknown)}")
    requires_hook = entry.get("requires_hook")
    if requires_hook is not None and requires_hook not in pattern.groupindex:
        raise SignatureError(f"{where}: 'requires_hook' must name a group of the pattern")
    scan = entry.get("scan", True)
    if not isinstance(scan, bool):
        raise SignatureError(f"{where}: 'scan' must be true or false")
    exception = _require(entry, "exception", where) if "exception" in entry or scan else None
    return Signature(
        id=sig_id,
        exception=exception,
        pattern=pattern,
        anchor=anchor,
        description=str(entry.get("description", "")),
        fixer=fixer,
        examples=examples,
        requires_hook=requires_hook,
        scan=scan,
    )


def _tables(document: str, source: str) -> list[dict[str, Any]]:
    try:
        data = tomllib.loads(document)
    except tomllib.TOMLDecodeError as exc:
        raise SignatureError(f"{source} is not valid TOML: {exc}") from exc
    entries = data.get("signature", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise SignatureError(f"{source}: 'signature' must be an array of tables")
    return entries


def _ordered(entries: Sequence[Mapping[str, Any]]) -> tuple[Signature, ...]:
    signatures = tuple(parse_signature(entry, i) for i, entry in enumerate(entries, start=1))
    ids = [s.id for s in signatures]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates or UNCLASSIFIED in ids:
        raise SignatureError(f"signature ids must be unique and not '{UNCLASSIFIED}': {duplicates}")
    return signatures


def parse_signatures(document: str) -> tuple[Signature, ...]:
    """Parse a signatures TOML document into its ordered signatures."""
    entries = _tables(document, "signatures file")
    if not entries:
        raise SignatureError("signatures file must hold at least one [[signature]] table")
    return _ordered(entries)


def declared_signature_tables() -> list[dict[str, Any]]:
    """The ``[[signature]]`` tables codemods declare (``CodemodSpec.signatures``), in registry
    order, each naming its codemod's ``fixer`` unless it names one itself."""
    tables = []
    for spec in builtin_codemods().codemods:
        if spec.signatures:
            source = f"codemod {spec.name}'s signatures"
            tables += [{"fixer": spec.fixer, **t} for t in _tables(spec.signatures, source)]
    return tables


@cache
def builtin_signatures() -> tuple[Signature, ...]:
    """The signatures shipped with repairbot, then those codemods declare, in match order."""
    data = resources.files("fixers.classify").joinpath("signatures.toml")
    shipped = _tables(data.read_text(encoding="utf-8"), "signatures.toml")
    return _ordered([*shipped, *declared_signature_tables()])
