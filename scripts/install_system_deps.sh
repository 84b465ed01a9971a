#!/usr/bin/env bash
# Install the Debian packages the tests need when they are missing: bubblewrap (the verification
# sandbox) and Chromium (the dashboard's browser tests). Does nothing when both are present.
set -euo pipefail
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
[ -x /usr/bin/chromium ] || missing+=(chromium fonts-dejavu-core)
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
