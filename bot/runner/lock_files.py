"""Pinned requirements from a target's lock file: ``uv.lock``, ``poetry.lock`` or ``pylock.toml``
(PEP 751), for this runner's platform and Python.

A lock names exact versions, so a verification builds the environment the target's own CI
installs, not whatever its loose requirements resolve to today. Only the index's packages are
pinned: the project itself is skipped, and a package from git, a URL or a local path is
refused (building it would run its code, and reach beyond the package index). Markers are
evaluated for the interpreter that builds the environment (the runner's own); ``uv.lock``
records them on its dependency edges, so its graph is walked from the project with every
extra and dependency group (a verification runs the tests, so the test group is wanted).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from typing import Any

from packaging.markers import (
    InvalidMarker,
    Marker,
    UndefinedComparison,
    UndefinedEnvironmentName,
)

LOCK_FILES = ("uv.lock", "poetry.lock", "pylock.toml")


class LockProblem(Exception):
    """The lock file cannot give plain pins; the message says why."""


def _applies(
    marker: object, where: str, lock_env: Mapping[str, frozenset[str]] | None = None
) -> bool:
    """Whether ``marker`` holds for this interpreter (``lock_env``: a PEP 751 lock's extras and
    dependency groups, every one it names: the tests need them)."""
    if not marker:
        return True
    try:
        if lock_env is None:
            return Marker(str(marker)).evaluate({"extra": ""})
        return Marker(str(marker)).evaluate({"extra": "", **lock_env}, context="lock_file")
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise LockProblem(f"{where}: marker {str(marker)[:80]!r} cannot be read: {exc}") from exc


def _refuse_source(name: str, kinds: Sequence[str], lock: str) -> None:
    """Refuse a package that comes from anything but the index (``kinds``: what it comes from
    instead, if anything)."""
    kind = next(iter(kinds), None)
    if kind is not None:
        raise LockProblem(
            f"{lock}: {name} comes from a {kind} source, not the package index: refused "
            "(building it would run its code)"
        )


def _packages(data: Mapping[str, Any], key: str, lock: str) -> list[Mapping[str, Any]]:
    found = data.get(key, [])
    if not isinstance(found, list) or not all(isinstance(p, dict) for p in found):
        raise LockProblem(f"{lock}: [[{key}]] is not a list of tables")
    return found


def _pin(package: Mapping[str, Any], lock: str) -> str:
    name, version = package.get("name"), package.get("version")
    if not isinstance(name, str) or not isinstance(version, str):
        raise LockProblem(f"{lock}: a package without a name and version: {dict(package)!r:.120}")
    return f"{name}=={version}"


def _is_project(package: Mapping[str, Any]) -> bool:
    """The project or a workspace member: its own code, in the repository (the tests import
    it from there), never built; its dependencies are walked."""
    source = package.get("source", {})
    if not isinstance(source, dict):
        return False
    where = source.get("editable", source.get("virtual"))
    return isinstance(where, str) and not where.startswith(("/", "..")) and "://" not in where


def _edges(package: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Every dependency edge of a ``uv.lock`` package: its own, its extras', its groups'."""
    edges = list(package.get("dependencies", []))
    for table in ("optional-dependencies", "dev-dependencies"):
        for group in package.get(table, {}).values():
            edges += group
    return [e for e in edges if isinstance(e, dict)]


def uv_lock_pins(text: str) -> list[str]:
    """The pins of ``uv.lock`` reachable from its project(s) for this interpreter."""
    data = tomllib.loads(text)
    packages = _packages(data, "package", "uv.lock")
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for package in packages:
        by_name.setdefault(str(package.get("name", "")).lower(), []).append(package)
    roots = [p for p in packages if _is_project(p)] or packages
    seen: set[int] = set()
    queue = list(roots)
    pins: list[str] = []
    while queue:
        package = queue.pop()
        if id(package) in seen:
            continue
        seen.add(id(package))
        if not _is_project(package):
            source = package.get("source", {})
            kinds = [k for k in ("git", "url", "path", "directory", "editable") if k in source]
            _refuse_source(str(package.get("name")), kinds, "uv.lock")
            pins.append(_pin(package, "uv.lock"))
        for edge in _edges(package):
            if not _applies(edge.get("marker"), f"uv.lock: {package.get('name')}"):
                continue
            choices = by_name.get(str(edge.get("name", "")).lower(), [])
            if "version" in edge:
                choices = [c for c in choices if c.get("version") == edge["version"]]
            queue.extend(choices[:1])
    return sorted(set(pins))


def poetry_lock_pins(text: str) -> list[str]:
    """The pins of ``poetry.lock`` whose markers hold here (an old lock without markers pins
    every package it lists)."""
    pins = []
    for package in _packages(tomllib.loads(text), "package", "poetry.lock"):
        source = package.get("source", {})
        if isinstance(source, dict) and source.get("type") in ("git", "url", "file", "directory"):
            _refuse_source(str(package.get("name")), [str(source["type"])], "poetry.lock")
        if _applies(package.get("markers"), f"poetry.lock: {package.get('name')}"):
            pins.append(_pin(package, "poetry.lock"))
    return sorted(set(pins))


def pylock_pins(text: str) -> list[str]:
    """The pins of a PEP 751 ``pylock.toml`` whose markers hold here."""
    data = tomllib.loads(text)
    lock_env = {
        "extras": frozenset(str(e) for e in data.get("extras", [])),
        "dependency_groups": frozenset(str(g) for g in data.get("dependency-groups", [])),
    }
    pins = []
    for package in _packages(data, "packages", "pylock.toml"):
        kinds = [k for k in ("vcs", "directory", "archive") if k in package]
        _refuse_source(str(package.get("name")), kinds, "pylock.toml")
        if _applies(package.get("marker"), f"pylock.toml: {package.get('name')}", lock_env):
            pins.append(_pin(package, "pylock.toml"))
    return sorted(set(pins))


def lock_pins(name: str, text: str) -> list[str]:
    """The pins of the lock file called ``name`` (one of ``LOCK_FILES``, or ``pylock.*.toml``)."""
    reader = {"uv.lock": uv_lock_pins, "poetry.lock": poetry_lock_pins}.get(name.rsplit("/", 1)[-1])
    if reader is None:
        reader = pylock_pins
    try:
        return reader(text)
    except tomllib.TOMLDecodeError as exc:
        raise LockProblem(f"{name} is not valid TOML: {exc}") from exc


def is_lock_file(name: str) -> bool:
    """Whether ``name`` names a lock file this module reads."""
    base = name.rsplit("/", 1)[-1]
    return base in LOCK_FILES or (base.startswith("pylock.") and base.endswith(".toml"))


def first_lock(names: Sequence[str]) -> str | None:
    """The first of ``LOCK_FILES`` among ``names`` (the files a repository's root holds)."""
    return next((lock for lock in LOCK_FILES if lock in names), None)
