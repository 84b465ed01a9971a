"""The environment target code starts with: a few safe variables, a private HOME and TMPDIR,
no secrets (the service's own environment holds its tokens)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

_SAFE_ENV = (
    "PATH",
    "LANG",
    "LC_ALL",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "NVIDIA_VISIBLE_DEVICES",
    "LD_LIBRARY_PATH",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


def clean_environment(run_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: a few safe variables, a private HOME and TMPDIR, no secrets."""
    env = {key: os.environ[key] for key in _SAFE_ENV if key in os.environ}
    home = run_dir / "home"
    tmp = run_dir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(parents=True, exist_ok=True)
    env.update(
        {
            "HOME": str(home),
            "TMPDIR": str(tmp),
            "USER": "sandbox",  # no /etc/passwd inside: getpass.getuser() reads these first
            "LOGNAME": "sandbox",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.update(extra or {})
    return env
