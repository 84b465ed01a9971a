"""A 200 MB console log is streamed: the classifier's own peak RSS stays bounded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REAL_LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "py312" / "combined.console.txt"

# The child reads VmHWM from /proc/self/status: its own high-water mark since exec. (wait4's
# ru_maxrss would also count the pytest parent's pages that a fork copies before exec.)
CHILD = """
import json, sys
from pathlib import Path
from fixers.classify.root_causes import classify_report
from fixers.intake import read_report
with open(sys.argv[1], "rb") as stream:
    findings = classify_report(read_report(stream))
hwm = next(int(l.split()[1]) for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:"))
print(json.dumps({"signatures": sorted(f.signature for f in findings), "peak_kib": hwm}))
"""


@pytest.mark.slow
def test_200_mb_log_is_streamed_with_bounded_memory(tmp_path: Path):
    noise = b"".join(
        b"[2026-11-29T14:00:%02dZ] [gw1] [ 50%%] PASSED tests/test_%d.py::test_x\n" % (i % 60, i)
        for i in range(20_000)
    )
    log = tmp_path / "huge.log"
    with log.open("wb") as out:
        while out.tell() < 100_000_000:
            out.write(noise)
        out.write(REAL_LOG.read_bytes())
        while out.tell() < 200_000_000:
            out.write(noise)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(log)], capture_output=True, check=True
    )
    measured = json.loads(result.stdout)
    assert measured["signatures"] == [
        "abstract-method-missing",
        "abstract-method-missing",
        "contract-forward-override",
    ]
    assert measured["peak_kib"] < 100 * 1024, (
        f"peak RSS {measured['peak_kib']} KiB for a 200 MB log"
    )
