#!/usr/bin/env bash
# Install the Debian packages repairbot needs when they are missing: bubblewrap (the sandbox for
# target code; setpriv, from util-linux, drops root before it) and, unless called with
# `sandbox`, Chromium (the dashboard's browser tests); with `bench`, also wrk (the load
# generator of bench/webhooks.py). Does nothing when all are present.
#   scripts/install_system_deps.sh            # everything the tests need (.ci/run)
#   scripts/install_system_deps.sh sandbox    # only the sandbox (scripts/run.sh)
#   scripts/install_system_deps.sh bench      # the tests' packages and wrk
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
if [ "${1:-}" != "sandbox" ]; then
    [ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
fi
if [ "${1:-}" = "bench" ]; then
    command -v wrk >/dev/null 2>&1 || missing+=(wrk)
fi
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]} (run this script as root to install them)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    apt-get update -q >/dev/null
    apt-get install -y -q "${missing[@]}" >/dev/null
}
