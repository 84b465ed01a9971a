"""The launcher with real bubblewrap: what the sandbox sees, its limits, refusals, safe outputs."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fixers.sandbox import (
    Limits,
    SandboxOptions,
    SandboxUnavailable,
    open_output,
    read_output,
    run_isolated,
    start_isolated,
    stop_isolated,
    wait_isolated,
)
from fixers.sandbox.limits import rlimit_table
from fixers.sandbox.view import (
    TMPFS_BYTES,
    View,
    blocked_ancestor,
    inner_argv,
    interpreter_roots,
    outermost,
)

ROOT = Path(__file__).resolve().parents[3]


def _run(tmp_path: Path, code: str, **kwargs: object) -> tuple[int | None, str, str]:
    """Run ``code`` in the sandbox: (exit code, its output without the command line, isolation)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    log = run_dir / "log"
    command = [sys.executable, "-c", code]
    result = run_isolated(
        command,
        cwd=run_dir,
        run_dir=run_dir,
        log_path=log,
        limits=kwargs.pop("limits", Limits(timeout_s=120)),  # type: ignore[arg-type]
        **kwargs,  # type: ignore[arg-type]
    )
    echo = f"$ {' '.join(command)}\n"
    return result.returncode, log.read_text().removeprefix(echo), result.isolation


def test_the_interpreter_and_its_site_packages_resolve_inside(tmp_path: Path) -> None:
    code = (
        "import sys, pytest, runtime\n"
        "print('PREFIX', sys.prefix, sys.base_prefix)\n"
        "print('RUNTIME', runtime.__file__)\n"
    )
    returncode, log, isolation = _run(tmp_path, code)
    assert returncode == 0, log
    assert f"PREFIX {sys.prefix} {sys.base_prefix}" in log  # pyenv's, under /root here
    assert "bubblewrap" in isolation


def test_only_the_listed_paths_are_visible(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "print('ROOT', sorted(os.listdir('/')))\n"
        "print('ETC', sorted(os.listdir('/etc')))\n"
        "print('PIDS', len([p for p in os.listdir('/proc') if p.isdigit()]))\n"
        "print('HOME', os.path.exists('/home'), os.path.exists('/root/.bashrc'))\n"
    )
    returncode, log, _ = _run(tmp_path, code)
    assert returncode == 0, log
    top = eval(log.split("ROOT ", 1)[1].splitlines()[0])
    system = {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "tmp"}
    # the interpreter, its venv and this checkout's editable packages: wherever CI put them
    interpreters = {root.parts[1] for root in interpreter_roots([]) if len(root.parts) > 1}
    assert set(top) <= system | {"usr"} | interpreters
    etc = eval(log.split("ETC ", 1)[1].splitlines()[0])
    assert "passwd" not in etc and "shadow" not in etc and "environment" not in etc
    assert int(log.split("PIDS ", 1)[1].split()[0]) < 5  # its own pid namespace
    assert "HOME False False" in log


def test_the_process_limit_counts_the_sandbox_user_not_the_service(tmp_path: Path) -> None:
    """Without cgroups (the fallback, here a cgroup root that does not exist), RLIMIT_NPROC
    counts per real user: as root it would never apply, as the service's own user it would
    count the service's processes too. The sandbox user has only its own."""
    code = (
        "import os, time\n"
        "kids = []\n"
        "try:\n"
        "    for _ in range(200):\n"
        "        pid = os.fork()\n"
        "        if pid == 0:\n"
        "            time.sleep(2); os._exit(0)\n"
        "        kids.append(pid)\n"
        "except OSError:\n"
        "    pass\n"
        "print('FORKED', len(kids))\n"
        "for pid in kids: os.waitpid(pid, 0)\n"
    )
    own = subprocess.run(["ps", "-e", "-o", "user="], capture_output=True, text=True, check=True)
    service_user_processes = own.stdout.split().count("root")
    limits = Limits(timeout_s=120, max_processes=64)
    returncode, log, _ = _run(tmp_path, code, limits=limits, options=_no_cgroups(tmp_path))
    assert returncode == 0, log
    forked = int(log.split("FORKED ", 1)[1].split()[0])
    assert 40 <= forked < 64
    if os.geteuid() == 0:
        assert service_user_processes > 64  # so root's own processes did not count


def _no_cgroups(tmp_path: Path) -> SandboxOptions:
    """Options whose cgroup root does not exist: the per-process rlimits' fallback. No GPU
    devices, so these tests mean the same on a GPU host: with devices exposed memory is capped
    as data, not address space (``test_with_gpu_devices_memory_is_capped_as_data_...``)."""
    return SandboxOptions(cgroup_root=tmp_path / "no-cgroups", gpu_devices=False)


def test_without_cgroups_memory_limit_refuses_a_huge_allocation(tmp_path: Path) -> None:
    """Per process, memory is address space: a mapping past it is refused at once (with a
    cgroup, the tree's pages are counted instead: test_launch_tree_limits.py)."""
    code = (
        "import mmap\n"
        "try:\n"
        "    mmap.mmap(-1, 20 << 30)\n"
        "    print('ALLOCATED')\n"
        "except OSError as exc:\n"
        "    print('REFUSED', exc)\n"
    )
    returncode, log, _ = _run(tmp_path, code, options=_no_cgroups(tmp_path))  # default limits
    assert returncode == 0, log
    assert "REFUSED" in log and "ALLOCATED" not in log


def test_the_log_cannot_be_swapped_for_a_link_to_a_host_file(tmp_path: Path) -> None:
    """The service reads the log back (into the database): a link would exfiltrate a file."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret\n")
    code = (
        "import os, sys\n"
        "print('OUTPUT'); sys.stdout.flush()\n"
        "for attempt in (lambda: os.unlink('log'), lambda: os.rename('log', 'x')):\n"
        "    try:\n"
        "        attempt(); print('MOVED')\n"
        "    except OSError as exc:\n"
        "        print('REFUSED', exc.errno)\n"
        f"try:\n    os.symlink({str(secret)!r}, 'log')\nexcept OSError:\n    pass\n"
    )
    returncode, log, _ = _run(tmp_path, code)
    assert returncode == 0
    assert not (tmp_path / "run" / "log").is_symlink()
    assert log == "OUTPUT\nREFUSED 16\nREFUSED 16\n"  # EBUSY: the log is a mount point there


def test_outputs_are_read_only_when_they_are_regular_files(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("secret")
    (tmp_path / "link").symlink_to(secret)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "ok").write_text("cpu")
    assert read_output(tmp_path / "link") is None
    assert read_output(tmp_path / "fifo") is None  # and it did not block
    assert read_output(tmp_path / "missing") is None
    assert read_output(tmp_path / "ok") == "cpu"
    with pytest.raises(OSError):
        open_output(tmp_path / "link")


def _without_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A host without bubblewrap: a PATH that has everything but it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("git", "true", "sh"):
        found = subprocess.run(["which", tool], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            (bin_dir / tool).symlink_to(found.stdout.strip())
    monkeypatch.setenv("PATH", str(bin_dir))


def test_without_bwrap_target_code_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_bwrap(monkeypatch, tmp_path)
    marker = tmp_path / "ran"
    with pytest.raises(SandboxUnavailable, match="bwrap is not installed"):
        _run(tmp_path, f"open({str(marker)!r}, 'w')")
    assert not marker.exists()


def test_without_bwrap_development_may_run_it_and_it_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_bwrap(monkeypatch, tmp_path)
    options = SandboxOptions(allow_unsandboxed=True)
    returncode, log, isolation = _run(tmp_path, "print('RAN')", options=options)
    assert returncode == 0 and "RAN" in log
    assert isolation.startswith("NOT SANDBOXED (bwrap is not installed")


def test_root_can_hide_folders_a_user_cannot_search() -> None:
    def fake(path: Path) -> os.stat_result:
        mode = stat.S_IFDIR | (0o700 if path == Path("/root") else 0o755)
        return os.stat_result((mode, 0, 0, 0, 0, 0, 0, 0, 0, 0))

    assert blocked_ancestor(Path("/root/.pyenv/versions/3.11"), 65534, 65534, fake) == Path("/root")
    assert blocked_ancestor(Path("/usr/lib/python3"), 65534, 65534, fake) is None
    assert blocked_ancestor(Path("/root/x"), 0, 0, fake) is None  # the owner may search it


def test_outermost_drops_paths_inside_others() -> None:
    paths = [Path("/a/b"), Path("/a"), Path("/c"), Path("/a/b/c"), Path("/c")]
    assert outermost(paths) == [Path("/a"), Path("/c")]


def test_a_hidden_folder_masks_its_visible_parent_and_a_run_dir_inside_it_stays() -> None:
    view = View(
        cwd=Path("/repo"),
        writable=(Path("/repo/.data/run"),),
        readonly=(Path("/repo"),),
        hidden=(Path("/repo/.data"), Path("/elsewhere")),
    )
    argv = inner_argv("bwrap", ["true"], view)
    repo = argv.index("/repo")  # --ro-bind /repo /repo
    mask = argv.index("/repo/.data")  # --tmpfs /repo/.data
    run = argv.index("/repo/.data/run")  # --bind run run
    assert repo < mask < run and argv[mask - 1] == "--tmpfs" and argv[run - 1] == "--bind"
    assert "/elsewhere" not in argv  # not under anything visible: nothing to mask
    assert "--share-net" not in argv and "--unshare-all" in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"


def test_private_tmpfs_are_sized_and_a_masked_folder_is_empty_and_read_only(
    tmp_path: Path,
) -> None:
    """tmpfs is RAM that no rlimit counts; a mask must hide the folder and hold nothing new."""
    repo = tmp_path / "repo"
    (repo / ".data").mkdir(parents=True)
    (repo / ".data" / "repairbot.db").write_text("rows")
    code = (
        "import os\n"
        "for mount in ('/tmp', '/dev/shm'):\n"
        "    fs = os.statvfs(mount)\n"
        "    print('SIZE', mount, fs.f_blocks * fs.f_frsize)\n"
        f"print('MASKED', os.listdir({str(repo / '.data')!r}))\n"
        "try:\n"
        f"    open({str(repo / '.data' / 'new')!r}, 'w')\n"
        "    print('MASK WRITABLE')\n"
        "except OSError as exc:\n"
        "    print('MASK', exc.errno)\n"
    )
    options = SandboxOptions(readonly=(repo,), hidden=(repo / ".data",))
    returncode, log, _ = _run(tmp_path, code, options=options)
    assert returncode == 0, log
    sizes = [int(line.split()[2]) for line in log.splitlines() if line.startswith("SIZE")]
    assert len(sizes) == 2 and all(0 < size <= TMPFS_BYTES for size in sizes)
    assert "MASKED []" in log and "MASK 30" in log  # EROFS


@pytest.mark.parametrize("cgroups", [False, True], ids=["rlimits-only", "in-a-cgroup"])
def test_every_limit_is_set_inside_and_a_spinning_process_is_stopped(
    tmp_path: Path, cgroups: bool
) -> None:
    limits = Limits(timeout_s=120, max_cpu_s=2, max_processes=100, max_memory_bytes=3 << 30)
    code = (
        "import resource\n"
        "for name in ('RLIMIT_AS', 'RLIMIT_NPROC', 'RLIMIT_CPU', 'RLIMIT_FSIZE', 'RLIMIT_CORE'):\n"
        "    print(name, resource.getrlimit(getattr(resource, name)))\n"
        "while True:\n"
        "    pass\n"
    )
    options = SandboxOptions(gpu_devices=False) if cgroups else _no_cgroups(tmp_path)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = run_isolated(
        [sys.executable, "-c", code], cwd=run_dir, run_dir=run_dir, log_path=run_dir / "log",
        limits=limits, options=options,
    )  # fmt: skip
    log = (run_dir / "log").read_text()
    assert result.returncode not in (0, None)  # long before the wall-clock timeout
    assert result.limit == "cpu", result.hits  # SIGXCPU, or the tree's CPU time
    assert "RLIMIT_CPU (2, 3)" in log  # soft first: SIGXCPU names it, SIGKILL a second later
    if cgroups:  # the cgroup holds memory and processes for the whole tree: inherited as is
        assert f"RLIMIT_AS {resource.getrlimit(resource.RLIMIT_AS)}" in log
        assert f"RLIMIT_NPROC {resource.getrlimit(resource.RLIMIT_NPROC)}" in log
        assert "whole tree in a cgroup" in result.isolation
    else:
        assert "RLIMIT_AS (3221225472, 3221225472)" in log
        assert "RLIMIT_NPROC (100, 100)" in log
        assert "per-process rlimits" in result.isolation
    assert f"RLIMIT_FSIZE ({limits.max_file_bytes}, {limits.max_file_bytes})" in log
    assert "RLIMIT_CORE (0, 0)" in log


def test_with_gpu_devices_memory_is_capped_as_data_not_address_space() -> None:
    cpu = {which for which, _, _ in rlimit_table(Limits(), gpu=False)}
    gpu = {which for which, _, _ in rlimit_table(Limits(), gpu=True)}
    assert resource.RLIMIT_AS in cpu and resource.RLIMIT_DATA not in cpu
    assert resource.RLIMIT_DATA in gpu and resource.RLIMIT_AS not in gpu


def test_a_run_dir_inside_a_masked_folder_under_a_visible_one_still_works(tmp_path: Path) -> None:
    """The data dir inside the checkout, the run dir inside the data dir: both rules hold."""
    repo = tmp_path / "repo"
    data = repo / ".data"
    run_dir = data / "runs" / "one"
    run_dir.mkdir(parents=True)
    (data / "repairbot.db").write_text("rows")
    log = run_dir / "log"
    code = f"import os; print(sorted(os.listdir({str(data)!r}))); open('out', 'w').write('x')"
    result = run_isolated(
        [sys.executable, "-c", code],
        cwd=run_dir,
        run_dir=run_dir,
        log_path=log,
        limits=Limits(timeout_s=120),
        options=SandboxOptions(readonly=(repo,), hidden=(data,)),
    )
    assert result.returncode == 0, log.read_text()
    assert "['runs']" in log.read_text() and (run_dir / "out").read_text() == "x"


def test_a_started_command_reads_its_input_and_answers_on_a_descriptor_of_its_own(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    read_end, write_end = os.pipe()
    code = "import os, sys; os.write(int(sys.argv[1]), sys.stdin.buffer.read()[::-1])"
    running = start_isolated(
        [sys.executable, "-c", code, str(write_end)],
        cwd=run_dir,
        run_dir=run_dir,
        log_path=run_dir / "log",
        limits=Limits(timeout_s=120),
        stdin=True,
        pass_fds=(write_end,),
    )
    os.close(write_end)
    assert running.stdin is not None
    with running.stdin as stdin:
        stdin.write(b"olleh")
    result = wait_isolated(running, timeout_s=120)
    answer = os.read(read_end, 100)
    os.close(read_end)
    assert (result.returncode, answer) == (0, b"hello"), (run_dir / "log").read_text()
    assert "bubblewrap" in result.isolation


def test_a_started_command_is_stopped_with_its_whole_tree(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    marker = f"stopped-tree-{os.getpid()}-{time.monotonic_ns()}"
    code = (
        "import os, subprocess, sys, time\n"
        "sleep = [sys.executable, '-c', 'import time; time.sleep(600)', sys.argv[2]]\n"
        "child = subprocess.Popen(sleep, start_new_session=True)\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "time.sleep(600)\n"
    )
    running = start_isolated(
        [sys.executable, "-c", code, str(run_dir / "up"), marker],
        cwd=run_dir,
        run_dir=run_dir,
        log_path=run_dir / "log",
        limits=Limits(timeout_s=600),
    )
    deadline = time.monotonic() + 60
    while not (run_dir / "up").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (run_dir / "up").exists(), (run_dir / "log").read_text()
    assert running.process.poll() is None  # still running, so the stop below can fail
    assert _processes_with(marker)  # the tree runs (a grandchild in a session of its own)
    stop_isolated(running)
    assert running.process.poll() is not None
    deadline = time.monotonic() + 30  # the kernel ends the sandbox's pid namespace
    while _processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_with(marker)
    stop_isolated(running)  # safe twice


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_root_without_dac_override_is_one_clear_reason_and_leaves_no_folder(
    tmp_path: Path,
) -> None:
    # As an operator's locked-down container would run it: root, CAP_DAC_OVERRIDE dropped.
    tree = tmp_path / "proj"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    temp = tmp_path / "temp"
    temp.mkdir()
    probe = "from fixers.sandbox import sandbox_problem; print(sandbox_problem())"
    command = [sys.executable, "-c", probe]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override", *command]
    out = subprocess.run(
        command, capture_output=True, text=True, check=True, cwd=ROOT,
        env={**os.environ, "TMPDIR": str(temp)},
    ).stdout.strip()  # fmt: skip
    if os.geteuid() == 0:
        assert out.startswith("running as root without CAP_DAC_OVERRIDE: run repairbot as")
    else:
        assert out == "None"  # an unprivileged service needs no capability
    assert list(temp.iterdir()) == []
