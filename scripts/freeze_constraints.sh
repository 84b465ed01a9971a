#!/usr/bin/env bash
# Regenerate docker/constraints.txt (the images' pinned versions) from the tested .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
{
    echo "# Versions the test suite ran with; regenerate with scripts/freeze_constraints.sh."
    .venv/bin/python -m pip freeze --exclude-editable --all \
        | grep -vE '^(pip|setuptools|wheel)==' \
        | sed -E 's/^torch==([0-9.]+)\+cpu$/torch==\1/'
} > docker/constraints.txt
echo "wrote docker/constraints.txt ($(grep -c '==' docker/constraints.txt) pins)"
