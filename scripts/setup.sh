#!/usr/bin/env bash
# Create .venv and install repairbot with its dev extras. Safe to rerun: it reinstalls only when
# pyproject.toml changed since the last successful install.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

stamp=.venv/.repairbot-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/repairbot ]; then
    exit 0
fi

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch is pinned to 2.13.0 in pyproject.toml: pip takes the CPU wheel from its find-links
# folder instead of downloading a CUDA build.
.venv/bin/python -m pip install --quiet -e '.[dev]'
echo "$want" > "$stamp"
