"""Reading a repository file: its bytes with the stat of what was read, and what is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fixers.repo.paths import FileRefused, read_repo_file, read_repo_file_stat


def test_the_bytes_come_with_the_stat_of_the_file_read(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_bytes(b"x = 1\n")
    (tmp_path / "pkg" / "link.py").symlink_to(tmp_path / "pkg" / "m.py")  # inside: fine
    data, info = read_repo_file_stat(tmp_path, "pkg/link.py")
    st = os.stat(tmp_path / "pkg" / "m.py")
    assert data == b"x = 1\n"
    assert (info.st_ino, info.st_size, info.st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)


def test_a_folder_a_link_out_and_a_file_over_the_cap_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "dir.py").mkdir(parents=True)
    (tmp_path / "secret.py").write_text("s = 1\n")
    (root / "out.py").symlink_to(tmp_path / "secret.py")
    (root / "big.py").write_bytes(b"#" * 101)
    with pytest.raises(IsADirectoryError):
        read_repo_file(root, "dir.py")
    with pytest.raises(FileRefused, match="symlink that leads outside"):
        read_repo_file(root, "out.py")
    with pytest.raises(FileRefused, match="101 bytes, over the 100-byte cap"):
        read_repo_file(root, "big.py", max_bytes=100)
    assert read_repo_file(root, "big.py", max_bytes=101) == b"#" * 101
