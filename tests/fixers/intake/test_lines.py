from __future__ import annotations

import pytest

from fixers.intake.lines import clean_line


@pytest.mark.parametrize(
    ("raw", "text", "stage"),
    [
        ("[2026-11-29T14:49:57.123Z] FAILED tests/a.py::t", "FAILED tests/a.py::t", None),
        ("14:49:57 E   TypeError: x", "E   TypeError: x", None),
        ("\x1b[31mFAILED\x1b[0m tests/a.py::t - boom\r", "FAILED tests/a.py::t - boom", None),
        ("[gw1] [ 42%] FAILED tests/a.py::t", "FAILED tests/a.py::t", None),
        (
            "[H100_PCIe-PyTorch-1] [2026-11-29T14:49:57Z] ERROR tests/a.py",
            "ERROR tests/a.py",
            "H100_PCIe-PyTorch-1",
        ),
        ("[not-a-stage] hello", "[not-a-stage] hello", None),
        ("    indented source stays indented   ", "    indented source stays indented", None),
    ],
)
def test_clean_line(raw, text, stage):
    cleaned = clean_line(raw)
    assert cleaned.text == text
    assert cleaned.branch_stage == stage
