#!/usr/bin/env bash
# Set up (if needed) and run the main job on the embedded default. Until the service lands this
# classifies the bundled sample CI log and prints its findings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/repairbot classify fixers/samples/l0_merge_request_pr.log "$@"
