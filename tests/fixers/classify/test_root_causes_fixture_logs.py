"""The classifier on real pytest output from Python 3.10-3.13 (tests/fixtures/logs/generate.py).

Each log has its expected findings beside it, written by the generator from what it planted.
The noisy variants (Jenkins timestamps, 100k unrelated lines, a parallel-branch prefix) are
derived here from the real logs, so their expectations are the same findings.
"""

from __future__ import annotations

import io
import json
import random
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from fixers.classify.failures import Finding
from fixers.classify.findings_json import finding_to_dict
from fixers.classify.root_causes import classify_report
from fixers.intake import read_report

LOGS = Path(__file__).parents[2] / "fixtures" / "logs"
EXPECTED = sorted(LOGS.glob("py3*/*.expected.json"))
COMPARED = ("signature", "exception_type", "class_name", "captures", "frame", "tests")


def _log_path(expected_file: Path) -> Path:
    return expected_file.with_name(json.loads(expected_file.read_text())["log"])


def _comparable(finding: dict[str, Any]) -> dict[str, Any]:
    data = {key: finding.get(key) for key in COMPARED}
    data["tests"] = sorted(data["tests"] or [])
    if finding["signature"] == "abstract-method-missing":
        data["missing_methods"] = list(finding["missing_methods"])
    if finding["signature"] == "unclassified":
        data.pop("captures")
        data.pop("class_name")
    return data


def _classify(data: bytes, repo_root: str) -> list[Finding]:
    return classify_report(read_report(io.BytesIO(data)), repo_root=repo_root)


def _check(findings: list[Finding], expected: dict[str, Any]) -> None:
    got = sorted((_comparable(finding_to_dict(f)) for f in findings), key=json.dumps)
    want = sorted((_comparable(f) for f in expected["findings"]), key=json.dumps)
    assert got == want


def test_fixture_logs_exist_for_every_python():
    assert {p.parent.name for p in EXPECTED} >= {"py310", "py311", "py312", "py313"}


@pytest.mark.parametrize("expected_file", EXPECTED, ids=lambda p: f"{p.parent.name}/{p.name[:-14]}")
def test_real_log_gives_the_planted_findings(expected_file: Path):
    expected = json.loads(expected_file.read_text())
    _check(_classify(_log_path(expected_file).read_bytes(), expected["repo_root"]), expected)


NOISY_SOURCES = [p for p in EXPECTED if p.parent.name == "py312" and ".console." in p.name]


def _jenkins(data: bytes, branch: str | None = None) -> bytes:
    prefix = f"[{branch}] ".encode() if branch else b""
    return b"".join(
        prefix + b"[2026-11-29T14:%02d:%02d.%03dZ] " % (i // 60 % 60, i % 60, i % 1000) + line
        for i, line in enumerate(data.splitlines(keepends=True))
    )


@cache
def _noise_lines(lines: int) -> list[bytes]:
    rng = random.Random(7)
    words = [
        b"building",
        b"wheel",
        b"kernel",
        b"PASSED",
        b"tokens",
        b"ms",
        b"cuda",
        b"INFO",
        b"step",
    ]
    return [b" ".join(rng.choice(words) for _ in range(8)) + b"\n" for _ in range(lines)]


def _with_noise(data: bytes, lines: int = 100_000) -> bytes:
    noise = _noise_lines(lines)
    half = lines // 2
    return b"".join(noise[:half]) + data + b"".join(noise[half:])


@pytest.mark.parametrize("expected_file", NOISY_SOURCES, ids=lambda p: p.name[:-14])
@pytest.mark.parametrize("variant", ["timestamps", "noise", "timestamps+noise+branch"])
def test_noisy_variants_give_the_same_findings(expected_file: Path, variant: str):
    expected = json.loads(expected_file.read_text())
    data = _log_path(expected_file).read_bytes()
    if "noise" in variant:
        data = _with_noise(data)
    if "timestamps" in variant:
        data = _jenkins(data, branch="H100_PCIe-PyTorch-1" if "branch" in variant else None)
    findings = _classify(data, expected["repo_root"])
    _check(findings, expected)
    if "branch" in variant:
        assert all(f.gpu_types == ["H100_PCIe"] for f in findings)
