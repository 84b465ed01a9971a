"""The anchor scanner is shared by every request thread: concurrent scans must not collide."""

from __future__ import annotations

import threading

import pytest

from fixers.intake.anchors import build_scanner, scanner_backend

LITERALS = (b"FAILED ", b"TypeError", b"ERROR ")


def _chunk(seed: int) -> tuple[bytes, list[int]]:
    """A 4 MiB chunk (long enough for scans to overlap) with anchors at known offsets."""
    filler = b"x" * 997 + b"\n"
    parts, expected, offset = [], [], 0
    for i in range(4096):
        if i % 97 == seed % 97:
            line = b"FAILED tests/test_%d.py\n" % i
            expected.append(offset)
        else:
            line = filler
        parts.append(line)
        offset += len(line)
    return b"".join(parts), expected


@pytest.mark.parametrize("prefer_hyperscan", [True, False])
def test_concurrent_scans_from_many_threads_all_succeed(prefer_hyperscan):
    if prefer_hyperscan and scanner_backend() != "hyperscan":
        pytest.skip("hyperscan is not installed on this platform")
    scan = build_scanner(LITERALS, prefer_hyperscan=prefer_hyperscan)
    chunks = [_chunk(seed) for seed in range(16)]
    errors: list[BaseException] = []
    wrong: list[int] = []
    start = threading.Barrier(len(chunks))

    def worker(index: int) -> None:
        data, expected = chunks[index]
        start.wait()
        try:
            for _ in range(5):
                if sorted(scan(data)) != expected:
                    wrong.append(index)
        except BaseException as exc:  # the race raised hyperscan.ScratchInUseError here
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(chunks))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and wrong == []
