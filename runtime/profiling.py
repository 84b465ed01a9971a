"""Profiling annotations used by worker code (a stand-in for NVTX ranges)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import torch

P = ParamSpec("P")
R = TypeVar("R")


def nvtx_range(name: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: run the function inside a named profiler range (visible in torch.profiler)."""

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            with torch.profiler.record_function(name):
                return fn(*args, **kwargs)

        return wrapper

    return decorate
