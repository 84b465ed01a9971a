"""A run dir's size as a quota counts it: real files, links not followed, empty files not free."""

from __future__ import annotations

from pathlib import Path

from fixers.sandbox.disk import ENTRY_BYTES, usage


def test_usage_counts_written_blocks_and_every_entry(tmp_path: Path) -> None:
    empty = usage(tmp_path)
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "big").write_bytes(b"x" * (1 << 20))
    for number in range(100):
        (tmp_path / "a" / f"empty-{number}").touch()
    counted = usage(tmp_path) - empty
    assert counted >= (1 << 20) + 100 * ENTRY_BYTES + ENTRY_BYTES  # the folder counts too
    assert counted < (1 << 20) + 110 * ENTRY_BYTES


def test_links_are_not_followed_out_of_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "huge").write_bytes(b"x" * (4 << 20))
    run = tmp_path / "run"
    run.mkdir()
    (run / "link").symlink_to(outside)
    (run / "file-link").symlink_to(outside / "huge")
    assert usage(run) < 3 * ENTRY_BYTES


def test_counting_stops_past_the_budget(tmp_path: Path) -> None:
    for number in range(50):
        folder = tmp_path / f"d{number}"
        folder.mkdir()
        (folder / "f").write_bytes(b"x" * 65536)
    total = usage(tmp_path)
    partial = usage(tmp_path, stop_above=100_000)
    assert 100_000 < partial < total


def test_a_folder_that_is_gone_holds_nothing(tmp_path: Path) -> None:
    assert usage(tmp_path / "missing") == 0
