"""Reading this process's capabilities from its status."""

from __future__ import annotations

from pathlib import Path

from fixers.sandbox.capabilities import has_dac_override


def test_capabilities_are_read_from_the_process_status(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tx\nCapEff:\t000001ffffffffff\n")
    assert has_dac_override(status)
    status.write_text("Name:\tx\nCapEff:\t000001fffffffffd\n")  # bit 1 cleared
    assert not has_dac_override(status)
    assert has_dac_override(tmp_path / "missing")  # unknown: assume the usual root
