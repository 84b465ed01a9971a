"""What this process may do beyond its user's rights: read from its own status in ``/proc``.

Running as root, the launcher hands each run dir to the sandbox user and reads it back (and
removes it) afterwards, which needs CAP_DAC_OVERRIDE; a container that drops it must run the
service as an unprivileged user instead (the sandbox then runs as that user).
"""

from __future__ import annotations

from pathlib import Path

NO_DAC_OVERRIDE = (
    "running as root without CAP_DAC_OVERRIDE: run repairbot as an unprivileged user "
    "(the sandbox then runs as that user) or keep that capability"
)

CAP_DAC_OVERRIDE = 1  # bit of the capability sets in /proc/self/status


def has_dac_override(status: Path = Path("/proc/self/status")) -> bool:
    """Whether this process's effective capabilities hold CAP_DAC_OVERRIDE (True when unknown)."""
    try:
        text = status.read_text(encoding="ascii", errors="replace")
    except OSError:
        return True
    for line in text.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_DAC_OVERRIDE & 1)
    return True
