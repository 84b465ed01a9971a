"""What the repository's save/restore bracket saves, read from its prepare helpers."""

from __future__ import annotations

import ast

from fixers.state.sources import (
    MAX_DEPTH,
    PREPARE_CALLS,
    Frame,
    MethodSource,
    Mro,
    constant_fields,
    holder_of,
    saved_value,
    self_call,
    unslice_clone,
)


class BracketReader:
    """What a prepare helper saves: ``prepare_for_spec_dec`` fields and clones it keeps on self."""

    def __init__(self, mro: Mro) -> None:
        self.mro = mro

    def fields(
        self, source: MethodSource, at: int, binding: dict[str, str], depth: int = 0
    ) -> frozenset[str] | None:
        """The fields saved by ``source`` (and the ``super()`` helpers it calls)."""
        if depth > MAX_DEPTH:
            return None
        frame = Frame(source, at, binding)
        found: set[str] = set()
        for node in ast.walk(source.func):
            if isinstance(node, ast.Call):
                target = self_call(node)
                func = node.func
                if target is not None and target[0] in PREPARE_CALLS:
                    parent = self.mro.resolve(target[0], at + 1)
                    if parent is None:
                        continue  # the base's own prepare is not in the repository
                    inner = self.fields(
                        parent[0], parent[1], self.mro.bind(parent[0], node, frame), depth + 1
                    )
                    if inner is None:
                        return None
                    found |= inner
                elif (
                    isinstance(func, ast.Attribute)
                    and func.attr in PREPARE_CALLS
                    and isinstance(func.value, ast.Name)
                    and func.value.id in binding
                ):
                    names = constant_fields(node)
                    if names is None:
                        return None
                    found |= names
            elif isinstance(node, ast.Assign) and len(node.targets) == 1:
                saved = saved_value(unslice_clone(node.value), frame)
                if saved is not None and holder_of(node.targets[0]) is not None:
                    found.add(saved[1])
        return frozenset(found)
