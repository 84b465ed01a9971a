"""Jenkins stage names: ``<GPU>[-<n>_GPUs]-<Backend>[-Post-Merge]-<shard>``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_STAGE = re.compile(
    r"^(?P<gpu>[A-Za-z0-9_]+?)"
    r"(?:-(?P<gpus>\d+)_GPUs)?"
    r"-(?P<backend>[A-Za-z][A-Za-z0-9]*)"
    r"(?P<post_merge>-Post-Merge)?"
    r"-(?P<shard>\d+)$"
)


@dataclass(frozen=True)
class StageName:
    """The parts of one test stage's name."""

    gpu_type: str
    gpu_count: int
    backend: str
    post_merge: bool
    shard: int


def parse_stage(name: str) -> StageName | None:
    """Split a stage name into its parts, or None when it does not follow the convention.

    >>> parse_stage("DGX_B200-4_GPUs-PyTorch-Post-Merge-2")
    StageName(gpu_type='DGX_B200', gpu_count=4, backend='PyTorch', post_merge=True, shard=2)
    """
    match = _STAGE.match(name.strip())
    if match is None:
        return None
    return StageName(
        gpu_type=match["gpu"],
        gpu_count=int(match["gpus"] or 1),
        backend=match["backend"],
        post_merge=match["post_merge"] is not None,
        shard=int(match["shard"]),
    )


def gpu_type_of(stage: str | None) -> str | None:
    """The GPU type a stage ran on (``H100_PCIe`` for ``H100_PCIe-PyTorch-1``), if known."""
    if not stage:
        return None
    parsed = parse_stage(stage)
    return parsed.gpu_type if parsed else None
