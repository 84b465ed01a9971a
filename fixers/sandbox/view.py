"""What a sandboxed process sees: the bubblewrap command line, built by pure functions.

The view is deny-by-default. The sandbox root is an empty tmpfs; on it, read-only: ``/usr`` (and
the merged-usr links ``/bin``, ``/sbin``, ``/lib*``), a handful of ``/etc`` files the dynamic
linker and name lookup of ``localhost`` need, the interpreter's prefixes (venv and base install,
e.g. pyenv's under ``/root``) with their site-packages and editable installs, and any extra
read-only path the caller names. Read-write: the run directory only. Private: ``/dev`` (no host
devices except NVIDIA's when asked), ``/proc`` (this pid namespace only), ``/tmp`` and
``/dev/shm`` (sized). Never: the host's ``/proc``, ``/root``, ``/home``, ``/dev/shm``, the data
dir (masked when it lies under a visible path), other repositories, env files.
"""

from __future__ import annotations

import stat
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fixers.sandbox.cgroups import CGROUP_ROOT
from fixers.sandbox.limits import Limits

SANDBOX_UID = 65534  # "nobody": the kernel applies RLIMIT_NPROC to every user but root
SYSTEM_DIRS = ("/usr",)
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# The dynamic linker's cache and config, `update-alternatives` links into /usr, the time zone,
# and what glibc needs to resolve `localhost` on the sandbox's own loopback. Not passwd/group:
# the environment names the user instead (USER, LOGNAME, HOME).
ETC_FILES = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/hosts",
)
GPU_DEVICE_GLOB = "nvidia*"
# An image's CUDA libraries need the host's driver (its version matches the kernel module):
# these are bound read-only into DRIVER_DIR, which the image's LD_LIBRARY_PATH names.
DRIVER_LIB_GLOBS = ("libcuda.so*", "libnvidia-*.so*", "libcudadebugger.so*")
HOST_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64")
DRIVER_DIR = "/run/host-driver"
# Top-level folders of an image that are never bound: the sandbox makes its own (/proc, /dev,
# /tmp), and nothing of a home, mount point or boot folder is needed to run tests.
IMAGE_SKIPPED = frozenset(
    {"proc", "dev", "sys", "tmp", "run", "home", "root", "mnt", "media", "boot", "srv",
     "lost+found"}
)  # fmt: skip
TMPFS_BYTES = 1 << 30  # each of the private /tmp and /dev/shm


@dataclass(frozen=True)
class SandboxOptions:
    """How a caller wants target code confined (defaults: the strictest)."""

    allow_unsandboxed: bool = False  # development only: run without bubblewrap if it is missing
    interpreters: tuple[str, ...] = ()  # Pythons the service chose (never a target's command)
    hidden: tuple[Path, ...] = ()  # never visible, even under a visible path (the data dir)
    readonly: tuple[Path, ...] = ()  # extra read-only paths (the repository an import probe reads)
    gpu_devices: bool = True  # expose /dev/nvidia* (and /sys, read-only) when present
    system_root: Path | None = None  # a container image's root filesystem instead of the host's
    cgroup_root: Path = CGROUP_ROOT  # where each command's cgroup is made (under this process's)
    ceiling: Limits | None = None  # the most any command may use (the operator's settings)


STRICT = SandboxOptions()  # the default everywhere: no unconfined fallback, GPU nodes if present


@dataclass(frozen=True)
class View:
    """Every path a sandboxed command sees, already resolved."""

    cwd: Path
    writable: tuple[Path, ...]
    readonly: tuple[Path, ...]
    protected: tuple[Path, ...] = ()  # files inside writable dirs, mounted read-only over them
    hidden: tuple[Path, ...] = ()
    devices: tuple[Path, ...] = ()
    system: tuple[Path, ...] = field(default_factory=tuple)
    image: Path | None = None  # the system view comes from this root filesystem, not the host
    driver_libs: tuple[Path, ...] = ()  # the host's GPU driver libraries, bound into DRIVER_DIR


def _existing(paths: Iterable[str | Path]) -> list[Path]:
    return [Path(p) for p in paths if Path(p).exists() or Path(p).is_symlink()]


def outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without duplicates and without any path inside another one, in order."""
    unique = list(dict.fromkeys(paths))
    return [p for p in unique if not any(o != p and p.is_relative_to(o) for o in unique)]


def _venv_roots(python: Path) -> list[Path]:
    """The venv (if ``python`` is in one) and the install it was made from."""
    roots: list[Path] = []
    venv = python.parent.parent
    config = venv / "pyvenv.cfg"
    if config.is_file():
        roots.append(venv)
        for line in config.read_text(errors="replace").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home" and value.strip():
                roots.append(Path(value.strip()).parent)
    roots.append(python.resolve().parent.parent)
    return roots


def _editable_roots() -> list[Path]:
    """Package folders of setuptools editable installs in this interpreter (their finders)."""
    roots: list[Path] = []
    for finder in sys.meta_path:
        module = sys.modules.get(getattr(finder, "__module__", "") or "")
        if module is None or not module.__name__.startswith("__editable__"):
            continue
        mapping = getattr(module, "MAPPING", {})
        namespaces = getattr(module, "NAMESPACES", {})
        roots += [Path(p) for p in mapping.values()]
        roots += [Path(p) for paths in namespaces.values() for p in paths]
    return roots


def interpreter_roots(interpreters: Sequence[str]) -> list[Path]:
    """Folders the interpreters need: this one's prefixes and editable installs, and those of
    ``interpreters`` (venv and base install of each).

    Only interpreters the service chose: a path from the target (its ``[verify] command``) never
    widens the view — ``/etc/hostname`` as "interpreter" would otherwise expose ``/``.
    Everything under them is exposed read-only; ``/usr`` is exposed anyway.
    """
    roots = [Path(p) for p in {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}]
    roots += _venv_roots(Path(sys.executable))
    roots += _editable_roots()
    for python in interpreters:
        if Path(python).is_absolute() and Path(python).is_file():
            roots += _venv_roots(Path(python))
    resolved = [p.resolve() for p in _existing(roots)]
    return [p for p in outermost(resolved) if not p.is_relative_to("/usr")]


def host_driver_libraries(dirs: Sequence[str] = HOST_LIB_DIRS) -> tuple[Path, ...]:
    """The GPU driver's user-space libraries on this host (none on a CPU machine)."""
    found = [p for d in dirs for g in DRIVER_LIB_GLOBS for p in sorted(Path(d).glob(g))]
    return tuple(dict.fromkeys(p for p in found if p.is_file()))


def _host_system() -> list[str]:
    argv: list[str] = []
    for path in SYSTEM_DIRS:
        argv += ["--ro-bind", path, path]
    for link in _existing(MERGED_USR):
        if link.is_symlink():
            argv += ["--symlink", str(link.readlink()), str(link)]
        else:
            argv += ["--ro-bind", str(link), str(link)]
    for etc in _existing(ETC_FILES):
        argv += ["--ro-bind", str(etc), str(etc)]
    return argv


def _image_system(root: Path, driver_libs: Sequence[Path]) -> list[str]:
    """The image's top-level folders (read-only) and links in place of the host's, and the
    host's driver libraries in ``DRIVER_DIR``."""
    argv: list[str] = []
    for entry in sorted(root.iterdir()):
        if entry.name in IMAGE_SKIPPED:
            continue
        if entry.is_symlink():
            argv += ["--symlink", str(entry.readlink()), f"/{entry.name}"]
        elif entry.is_dir():
            argv += ["--ro-bind", str(entry), f"/{entry.name}"]
    for lib in driver_libs:
        argv += ["--ro-bind", str(lib), f"{DRIVER_DIR}/{lib.name}"]
    if driver_libs:
        argv += ["--setenv", "LD_LIBRARY_PATH", DRIVER_DIR]
    return argv


def gpu_devices(dev: Path = Path("/dev")) -> tuple[Path, ...]:
    """The NVIDIA device nodes present on this host (none on a CPU machine)."""
    return tuple(sorted(dev.glob(GPU_DEVICE_GLOB)))


def blocked_ancestor(
    path: Path, uid: int, gid: int, lstat: Callable[[Path], object]
) -> Path | None:
    """The topmost folder above ``path`` that ``uid`` cannot search (e.g. ``/root``, mode 0700)."""
    for parent in reversed(path.parents):
        info = lstat(parent)
        mode = int(getattr(info, "st_mode", 0))
        if not stat.S_ISDIR(mode):
            continue
        if getattr(info, "st_uid", -1) == uid:
            allowed = mode & stat.S_IXUSR
        elif getattr(info, "st_gid", -1) == gid:
            allowed = mode & stat.S_IXGRP
        else:
            allowed = mode & stat.S_IXOTH
        if not allowed:
            return parent
    return None


def _masks(view: View) -> list[Path]:
    """Hidden paths under a visible one: each gets an empty tmpfs over it."""
    visible = (*view.readonly, *view.writable)
    return [h for h in view.hidden if any(h.is_relative_to(p) for p in visible)]


def _mount_order(view: View) -> list[tuple[Path, list[str]]]:
    """Mount operations sorted parents first, so a child mount lands on top of its parent.

    At equal paths the later kind wins: a hidden path masks even an explicit bind of itself.
    """
    ops: list[tuple[int, int, Path, list[str]]] = []
    for path in view.readonly:
        ops.append((len(path.parts), 0, path, ["--ro-bind", str(path), str(path)]))
    for path in view.writable:
        ops.append((len(path.parts), 1, path, ["--bind", str(path), str(path)]))
    for path in _masks(view):
        ops.append((len(path.parts), 2, path, ["--perms", "0700", "--tmpfs", str(path)]))
    for path in view.protected:
        ops.append((len(path.parts), 3, path, ["--ro-bind", str(path), str(path)]))
    ops.sort(key=lambda op: (op[0], op[1]))
    return [(path, args) for _, _, path, args in ops]


def inner_argv(bwrap: str, command: Sequence[str], view: View) -> list[str]:
    """The bubblewrap command line that confines ``command`` to ``view``."""
    argv = [
        bwrap,
        "--unshare-all",  # user, pid, ipc, uts, cgroup and net: no network but its own loopback
        "--cap-drop",
        "ALL",
        "--new-session",  # no TIOCSTI into the caller's terminal
        "--die-with-parent",
        "--hostname",
        "sandbox",
    ]
    argv += _host_system() if view.image is None else _image_system(view.image, view.driver_libs)
    # tmpfs lives in RAM and no rlimit counts it: sized, so filling /tmp cannot exhaust the host.
    size = str(TMPFS_BYTES)
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", size, "--tmpfs", "/tmp", "--size", size, "--tmpfs", "/dev/shm"]
    for device in view.devices:
        argv += ["--dev-bind-try", str(device), str(device)]
    for folder in view.system:
        argv += ["--ro-bind-try", str(folder), str(folder)]
    for _, args in _mount_order(view):
        argv += args
    # Last, once every mount point exists: the masks and the root tmpfs (which holds only mount
    # points) become read-only, so a write to /root or into a mask fails instead of landing in
    # a private scratch space. Not recursive: the run dir and /tmp stay writable.
    for mask in _masks(view):
        argv += ["--remount-ro", str(mask)]
    argv += ["--remount-ro", "/", "--chdir", str(view.cwd), "--", *command]
    return argv


def outer_argv(bwrap: str, setpriv: str, view: View, uid: int, gid: int) -> list[str]:
    """As root: a mount namespace where ``uid`` can reach every path of ``view``, then drop to it.

    Folders the sandbox user cannot search (``/root`` at 0700, pytest's ``/tmp/pytest-of-root``)
    are covered with an empty tmpfs and only the needed paths bound back, so the unprivileged
    inner bubblewrap can bind them. Nothing else of those folders becomes visible.
    """
    # Its own pid namespace: when this bubblewrap dies (with the service), the kernel kills
    # every process below it, whatever the inner sandbox did with its parent-death signal.
    argv = [bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent"]
    sources = [*view.readonly, *view.writable, *view.protected, view.cwd]
    sources += [view.image] if view.image is not None else []
    blocked: dict[Path, list[Path]] = {}
    for source in outermost(sources):
        top = blocked_ancestor(source, uid, gid, lambda p: p.lstat())
        if top is not None:
            blocked.setdefault(top, []).append(source)
    for top in outermost(blocked):
        argv += ["--perms", "0755", "--tmpfs", str(top)]
        for source in [s for t, ss in blocked.items() if t.is_relative_to(top) for s in ss]:
            for folder in reversed(source.parents):
                if folder.is_relative_to(top) and folder != top:
                    argv += ["--perms", "0755", "--dir", str(folder)]
            argv += ["--bind", str(source), str(source)]
    # setpriv clears the parent-death signal when it changes user: set it again after.
    privileges = [f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs"]
    privileges += ["--pdeathsig", "KILL"]
    return [*argv, "--", setpriv, *privileges, "--"]
