"""The codemods also run through LibCST's own command-line runner (``python -m libcst.tool``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
CONFIG = "modules:\n- fixers.codemods\nrepo_root: .\nformatter: []\nblacklist_patterns: []\n"


def test_rename_through_libcst_tool(tmp_path: Path) -> None:
    (tmp_path / ".libcst.codemod.yaml").write_text(CONFIG)
    worker = tmp_path / "w.py"
    worker.write_text(
        'class MTPWorker(SpecWorkerBase):\n    @nvtx_range("x")\n    def forward(self, x):\n'
        "        return x\n"
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "libcst.tool",
            "codemod",
            "rename_forbidden.RenameForbiddenCommand",
            "--classes",
            "MTPWorker",
            "--no-format",
            "w.py",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert worker.read_text() == (
        'class MTPWorker(SpecWorkerBase):\n    @nvtx_range("x")\n    def _forward_impl(self, x):\n'
        "        return x\n"
    )
