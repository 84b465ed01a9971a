"""The bubblewrap command line for a container image's view, and the host driver libraries."""

from __future__ import annotations

from pathlib import Path

from fixers.sandbox.view import DRIVER_DIR, View, host_driver_libraries, inner_argv


def _pairs(argv: list[str], flag: str) -> list[tuple[str, str]]:
    return [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == flag]


def test_an_image_replaces_the_hosts_system_folders(tmp_path: Path) -> None:
    image = tmp_path / "rootfs"
    for folder in ("usr", "etc", "opt", "proc", "home"):
        (image / folder).mkdir(parents=True)
    (image / "lib").symlink_to("usr/lib")
    lib = tmp_path / "libcuda.so.1"
    lib.write_bytes(b"")
    view = View(cwd=tmp_path, writable=(tmp_path,), readonly=(), image=image, driver_libs=(lib,))
    argv = inner_argv("bwrap", ["python3"], view)
    binds = _pairs(argv, "--ro-bind")
    assert (str(image / "usr"), "/usr") in binds and (str(image / "etc"), "/etc") in binds
    assert (str(image / "opt"), "/opt") in binds
    assert ("/usr", "/usr") not in binds and ("/etc/ld.so.cache", "/etc/ld.so.cache") not in binds
    assert not any(target in ("/proc", "/home") for _, target in binds)  # the sandbox's own
    assert ("usr/lib", "/lib") in _pairs(argv, "--symlink")
    assert (str(lib), f"{DRIVER_DIR}/libcuda.so.1") in binds
    assert ("LD_LIBRARY_PATH", DRIVER_DIR) in _pairs(argv, "--setenv")


def test_without_an_image_the_hosts_usr_is_the_system(tmp_path: Path) -> None:
    argv = inner_argv("bwrap", ["python3"], View(cwd=tmp_path, writable=(tmp_path,), readonly=()))
    assert ("/usr", "/usr") in _pairs(argv, "--ro-bind")
    assert "--setenv" not in argv


def test_driver_libraries_are_found_by_name(tmp_path: Path) -> None:
    for name in ("libcuda.so.1", "libnvidia-ml.so.550.54", "libc.so.6"):
        (tmp_path / name).write_bytes(b"")
    found = {p.name for p in host_driver_libraries([str(tmp_path)])}
    assert found == {"libcuda.so.1", "libnvidia-ml.so.550.54"}
