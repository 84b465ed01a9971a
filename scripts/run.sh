#!/usr/bin/env bash
# Set up (if needed) and run the main job on the embedded default: start `repairbot serve`
# (SQLite, filesystem broker, in-process worker, local git forge), build a target repository
# from the runtime's pre-contract workers, make its tests fail for real, post that failure and
# show the fix PR the service opened. `scripts/run.sh --serve` keeps the service up afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The sandbox is part of setup: without bubblewrap the service refuses to run target code
# (tests, import checks). REPAIRBOT_ALLOW_UNSANDBOXED=true (development only) runs it unconfined
# instead, and every report says so.
if ! scripts/install_system_deps.sh sandbox; then
    if [ "${REPAIRBOT_ALLOW_UNSANDBOXED:-}" != "true" ]; then
        echo "bubblewrap is required (Debian package bubblewrap): install it as root" >&2
        exit 1
    fi
    echo "WARNING: no bubblewrap; target code will run NOT SANDBOXED (development only)" >&2
fi

export REPAIRBOT_DATA_DIR="${REPAIRBOT_DATA_DIR:-$PWD/.repairbot}"
port="${PORT:-8000}"
.venv/bin/repairbot serve --port "$port" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT

.venv/bin/python - "$port" <<'PY'
import sys, time, httpx
url = f"http://127.0.0.1:{sys.argv[1]}/readyz"
deadline = time.monotonic() + 60
while True:
    try:
        if httpx.get(url, timeout=1).status_code == 200:
            break
    except httpx.HTTPError:
        pass
    if time.monotonic() > deadline:
        sys.exit(f"the service did not become ready at {url}")
    time.sleep(0.2)
PY

.venv/bin/repairbot demo --url "http://127.0.0.1:$port"
if [ "${1:-}" = "--serve" ]; then
    echo "serving on http://127.0.0.1:$port (Ctrl-C to stop)"
    wait "$server"
fi
