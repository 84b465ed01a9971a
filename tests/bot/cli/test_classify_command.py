"""`repairbot classify` as a user runs it: the real console script in a subprocess."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LOGS = Path(__file__).parents[2] / "fixtures" / "logs"
REPAIRBOT = shutil.which("repairbot", path=str(Path(sys.executable).parent)) or "repairbot"


def _run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([REPAIRBOT, *args], input=stdin, capture_output=True, timeout=120)


def test_json_output_for_a_real_log():
    result = _run(
        "classify",
        str(LOGS / "py311" / "combined.junit.xml"),
        "--json",
        "--stage",
        "H100_PCIe-PyTorch-1",
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["format"] == "junit"
    signatures = [f["signature"] for f in document["findings"]]
    assert signatures.count("contract-forward-override") == 1
    contract = next(
        f for f in document["findings"] if f["signature"] == "contract-forward-override"
    )
    assert contract["class_name"] == "DSparkWorker" and contract["gpu_types"] == ["H100_PCIe"]


def test_table_output_from_stdin():
    data = (LOGS / "py313" / "contract_override.console.txt").read_bytes()
    result = _run("classify", "-", stdin=data)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert "contract-forward-override" in out and "root cause(s)" in out


def test_forced_format():
    data = (LOGS / "py312" / "abstract_stub.console.txt").read_bytes()
    result = _run("classify", "-", "--format", "junit", stdin=data)
    assert result.returncode == 2
    assert b"malformed JUnit XML at line 1" in result.stderr


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"\x00\x00\x00", b"looks binary"), (b'{"pipeline": ', b"malformed JSON at line 1")],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path, data, message):
    path = tmp_path / "input"
    path.write_bytes(data)
    result = _run("classify", str(path))
    assert result.returncode == 2
    assert message in result.stderr


def test_missing_file():
    result = _run("classify", "/nonexistent/log.txt")
    assert result.returncode == 2 and b"No such file" in result.stderr
