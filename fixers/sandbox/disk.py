"""How much a run dir holds on disk, counted the way a quota would, for the disk budget.

A run dir is the only writable place of the sandbox on the host's disk (``/tmp`` and
``/dev/shm`` inside are tmpfs, sized, and their pages count as the tree's memory). Its growth
during a command is measured by walking it (``watch`` does, between polls); no mount, quota or
filesystem feature is needed, so it works wherever the sandbox does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

# Each entry costs at least a block: a million empty files fill a disk's inodes, not free.
ENTRY_BYTES = 4096


@dataclass(frozen=True)
class Tally:
    """What a folder holds: bytes on disk (see ``usage``), and its largest file's size."""

    bytes: int
    largest: int


def usage(folder: Path, stop_above: int | None = None) -> int:
    """The bytes ``folder`` holds (allocated blocks, at least ``ENTRY_BYTES`` per entry); links
    are never followed. Counting stops once it passes ``stop_above``: the answer is then only
    known to be larger."""
    return tally(folder, stop_above).bytes


def tally(folder: Path, stop_above: int | None = None) -> Tally:
    """``usage`` and the largest file seen (a file at the size limit is named as a limit hit:
    Python ignores SIGXFSZ, so no signal says so)."""
    total = largest = 0
    pending = [str(folder)]
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:  # gone or unreadable meanwhile: it holds nothing we can count
            continue
        with entries:
            for entry in entries:
                try:
                    info = entry.stat(follow_symlinks=False)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                except OSError:
                    continue
                total += max(info.st_blocks * 512, ENTRY_BYTES)
                largest = max(largest, info.st_size)
        if stop_above is not None and total > stop_above:
            break
    return Tally(total, largest)
