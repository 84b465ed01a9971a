"""Seconds per stage of a repair attempt, as the run's timeline records them.

The repair stage appends them to the reasons of its ``swept`` and ``pr_opened`` transitions, e.g.
``(worktree 0.03 s, sweep 0.02 s, fix 0.25 s, import evidence 0.34 s)``: a person reading the
timeline sees where an attempt spent its time, and ``bench/e2e.py`` reads them back with
``parse_stage_seconds``.

>>> clock = StageClock({"sweep": 0.02})
>>> clock.summary()
'(sweep 0.02 s)'
>>> parse_stage_seconds("6 violation(s) at 0123abcd (worktree 0.03 s, import evidence 0.34 s)")
{'worktree': 0.03, 'import evidence': 0.34}
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

_SUMMARY = re.compile(r"\(((?:[a-z][a-z ]*? \d+\.\d+ s(?:, )?)+)\)\s*$")
_STAGE = re.compile(r"([a-z][a-z ]*?) (\d+\.\d+) s")


@dataclass
class StageClock:
    """Laps of named stages: ``lap(name)`` records the seconds since the previous lap."""

    seconds: dict[str, float] = field(default_factory=dict)
    _since: float = field(default_factory=time.perf_counter)

    def lap(self, name: str) -> None:
        """Record the time since the last lap (or the start) as stage ``name``."""
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self._since
        self._since = now

    def add(self, seconds: Mapping[str, float]) -> None:
        """Record stages measured elsewhere, and start the next lap now."""
        for name, value in seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + value
        self.restart()

    def restart(self) -> None:
        """Start the next lap now (the time since the last one belongs to no stage)."""
        self._since = time.perf_counter()

    def summary(self) -> str:
        """``(name 0.12 s, ...)`` for the stages recorded since the last summary."""
        text = ", ".join(f"{name} {value:.2f} s" for name, value in self.seconds.items())
        self.seconds = {}
        return f"({text})" if text else ""


def parse_stage_seconds(reason: str) -> dict[str, float]:
    """The stages' seconds at the end of a transition's reason (empty when it has none)."""
    match = _SUMMARY.search(reason)
    if match is None:
        return {}
    return {name: float(value) for name, value in _STAGE.findall(match.group(1))}
