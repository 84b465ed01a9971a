"""Which device a verification really ran on, and whether it is the GPU type that was asked for."""

from __future__ import annotations

import re
from pathlib import Path

_PROBE = (
    "import sys, torch\n"
    "name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else 'cpu'\n"
    "open(sys.argv[1], 'w').write(name)\n"
)


def probe_command(python: str, out: Path) -> list[str]:
    """A command that writes the device the test subprocesses will see into ``out``."""
    return [python, "-c", _PROBE, str(out)]


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()).removeprefix("dgx").removeprefix("nvidia")


def matches_gpu_type(device: str, gpu_type: str) -> bool:
    """Whether a CUDA device name (``NVIDIA H100 PCIe``) is of a CI GPU type (``H100_PCIe``)."""
    if device == "cpu":
        return False
    return _key(gpu_type) in _key(device)


def on_requested_device(device: str, requested_queue: str) -> bool:
    """Whether the run satisfied the queue it was requested on (``gpu.H100_PCIe``, ``cpu``...)."""
    if requested_queue == "cpu":
        return True
    if requested_queue == "gpu.any":
        return device != "cpu"
    return matches_gpu_type(device, requested_queue.removeprefix("gpu."))
