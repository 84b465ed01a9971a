"""The standing rules as tests: ruff (lint and format) and strict mypy stay clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        ["mypy", "bot", "fixers", "runtime", "bench", "scripts"],
        # The runtime's tests ship with it (the GPU check runs them alone): typed like it.
        ["mypy", "--explicit-package-bases", "tests/runtime"],
    ],
    ids=["ruff-check", "ruff-format", "mypy", "mypy-runtime-tests"],
)
def test_tool_is_clean(command):
    result = subprocess.run(
        [str(BIN / command[0]), *command[1:]], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
