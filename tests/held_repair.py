"""Start the real service, worker or repair task with every repair held after it patched files.

Why: the crash-recovery tests kill a process in the middle of a repair, at a known point: the
fixes are written into the attempt's worktree and the run says ``patched``, but no PR exists
yet. Then they check what the next attempt makes of it (exactly one PR, the leftover worktree
pruned, a run that keeps dying there failed). Production code has no hook for holding a repair
there, so this launcher adds one, in the test process only: it wraps the step that follows the
patch, ``bot.pipeline.repair.task.already_fixed`` (looked up by ``repair_in`` at call time), with a
wait while the pause file exists, then runs the real entry point. Everything the tests check is
the real code: the CLI, the worker, the stage, git and the database.

    python -m tests.held_repair --pause FILE serve --port 8080     # any ``repairbot`` command
    python -m tests.held_repair --pause FILE --run 12              # one repair task, in-process

Run it from the repository root (or with it on ``PYTHONPATH``): see :func:`command`.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bot.pipeline.repair.task as repair_stage
from bot.cli import main as repairbot

ROOT = Path(__file__).resolve().parents[1]
HELD_STEP = "already_fixed"  # the first step after the run is recorded as patched
POLL_S = 0.05


def command(pause: Path, *args: str) -> list[str]:
    """The command line that runs ``args`` (a ``repairbot`` command, or ``--run ID``) held."""
    return [sys.executable, "-m", "tests.held_repair", "--pause", str(pause), *args]


def hold_after_patch(pause: Path) -> None:
    """Make every repair in this process wait after its patch while ``pause`` exists."""
    real: Callable[..., Any] = getattr(repair_stage, HELD_STEP)  # renamed? fail here, loudly

    @functools.wraps(real)
    def held(*args: Any, **kwargs: Any) -> Any:
        while pause.exists():
            time.sleep(POLL_S)
        return real(*args, **kwargs)

    setattr(repair_stage, HELD_STEP, held)


def main(argv: list[str] | None = None) -> None:
    """Hold repairs, then run the real ``repairbot`` command line (or one repair task)."""
    parser = argparse.ArgumentParser(prog="held_repair")
    parser.add_argument("--pause", type=Path, required=True)
    parser.add_argument("--run", type=int, help="run this repair task in-process, then exit")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="a repairbot command")
    options = parser.parse_args(argv)
    hold_after_patch(options.pause)
    if options.run is not None:
        repair_stage.repair.run(options.run)
        return
    sys.argv = ["repairbot", *options.arguments]
    repairbot()


if __name__ == "__main__":
    main()
