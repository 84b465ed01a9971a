"""Row 15a of issue 17: the README's first command installs the sandbox before anything runs.

``scripts/run.sh`` used to start the service without bubblewrap, so the demo's verification ran
the target's tests unconfined. The install itself needs root and the network, so this reads the
scripts; what happens without bubblewrap is tested in tests/fixers/sandbox/test_launch.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_run_sh_installs_bubblewrap_before_it_starts_the_service() -> None:
    lines = (ROOT / "scripts" / "run.sh").read_text().splitlines()
    install = next(i for i, line in enumerate(lines) if "install_system_deps.sh sandbox" in line)
    serve = next(i for i, line in enumerate(lines) if line.startswith(".venv/bin/repairbot serve"))
    assert install < serve
    script = (ROOT / "scripts" / "install_system_deps.sh").read_text()
    assert "missing+=(bubblewrap)" in script and "missing+=(util-linux)" in script


def test_with_everything_present_the_sandbox_install_does_nothing() -> None:
    # This machine has bubblewrap and setpriv: the step must succeed without installing.
    result = subprocess.run(
        [str(ROOT / "scripts" / "install_system_deps.sh"), "sandbox"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout == ""
