"""Fault injection: make the draft model, or any named step, raise at a chosen call.

Workers mark interesting places with `fault_point("eagle.draft_step")`; any `nn.Module` (the draft
model, the target) can be watched with `FaultInjector.attach(module, "draft_model")`, which counts
its calls through a forward pre-hook. With no active injector a fault point costs one lookup.

    with FaultInjector("draft_model", at_call=2) as faults:
        faults.attach(draft_model, "draft_model")
        worker(...)          # raises InjectedFault on the second draft-model call

An injector created without a point only records: `faults.hits` lists every (name, call) seen,
which is how the conformance suite enumerates the injection points of an unknown worker.
"""

from __future__ import annotations

from collections import Counter
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from torch import nn
from torch.utils.hooks import RemovableHandle

_ACTIVE: ContextVar[FaultInjector | None] = ContextVar("runtime_fault_injector", default=None)


class InjectedFault(RuntimeError):
    """The failure raised at an armed injection point (stands in for an OOM or a kernel error)."""

    def __init__(self, point: str, call: int) -> None:
        super().__init__(f"injected fault at {point!r}, call {call}")
        self.point = point
        self.call = call


class FaultInjector:
    """Counts hits per point name and raises `InjectedFault` at `(point, at_call)` if armed."""

    def __init__(self, point: str | None = None, at_call: int = 1) -> None:
        if at_call < 1:
            raise ValueError("at_call counts from 1")
        self.point = point
        self.at_call = at_call
        self.counts: Counter[str] = Counter()
        self.hits: list[tuple[str, int]] = []
        self.fired = False
        self._handles: list[RemovableHandle] = []
        self._token: Token[FaultInjector | None] | None = None

    def hit(self, name: str) -> None:
        """Record one pass through `name`; raise if this is the armed call."""
        self.counts[name] += 1
        call = self.counts[name]
        self.hits.append((name, call))
        if name == self.point and call == self.at_call:
            self.fired = True
            raise InjectedFault(name, call)

    def attach(self, module: nn.Module, name: str) -> None:
        """Count every call of `module` as a hit of `name` (until the injector exits)."""

        def pre_hook(_module: nn.Module, _args: Any) -> None:
            self.hit(name)

        self._handles.append(module.register_forward_pre_hook(pre_hook))

    def __enter__(self) -> FaultInjector:
        self._token = _ACTIVE.set(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()
        if self._token is not None:
            _ACTIVE.reset(self._token)
            self._token = None


def fault_point(name: str) -> None:
    """Mark a named step; raises `InjectedFault` when the active injector is armed for it."""
    injector = _ACTIVE.get()
    if injector is not None:
        injector.hit(name)
