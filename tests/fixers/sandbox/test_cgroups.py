"""Cgroups of this host, for real: found under this process's own, limited, counted, emptied and
removed; and each way a host can refuse them, with its reason.

The test process is root here with cgroups writable (v1 on this machine). What needs a cgroup v2
hierarchy mounts one in a private mount namespace (``unshare``), where the controllers the host
binds to v1 are missing: the v2 group's own files (``cgroup.procs``, ``cgroup.kill``) still work.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixers.sandbox.cgroups import (
    CGROUP_ROOT,
    PREFIX,
    Hierarchy,
    TreeGroup,
    TreeLimitsUnavailable,
    locate,
    make_group,
    own_cgroups,
    remove_orphans,
    settings_for,
)
from fixers.sandbox.limits import Limits, preexec

ROOT = Path(__file__).resolve().parents[3]
SMALL = Limits(max_memory_bytes=64 << 20, max_processes=8, cpus=0.5)


def _here() -> Hierarchy:
    return locate(CGROUP_ROOT, own_cgroups(Path("/proc/self/cgroup").read_text()))


@pytest.fixture
def group() -> Iterator[TreeGroup]:
    made = make_group(_here(), SMALL)
    try:
        yield made
    finally:  # even when the test failed: nothing of ours stays in the host's cgroups
        made.kill_all()
        assert made.remove()


def test_proc_self_cgroup_is_read_per_controller() -> None:
    text = "12:pids:/\n4:memory:/process_api/abc\n1:cpu,cpuacct:/x\n0::/unified/y\n"
    assert own_cgroups(text) == {
        "pids": "/",
        "memory": "/process_api/abc",
        "cpu": "/x",
        "cpuacct": "/x",
        "": "/unified/y",
    }


def test_this_process_is_found_in_the_cgroups_it_is_in() -> None:
    here = _here()
    assert here.version in (1, 2)
    for folder in here.parents.values():
        assert str(os.getpid()) in (folder / "cgroup.procs").read_text().split()


def test_each_version_gets_its_own_files_and_a_new_cgroup_is_unlimited_otherwise() -> None:
    v1 = {(s.controller, s.file): s.value for s in settings_for(1, SMALL)}
    assert v1 == {
        ("memory", "memory.limit_in_bytes"): str(64 << 20),
        ("memory", "memory.memsw.limit_in_bytes"): str(64 << 20),
        ("pids", "pids.max"): "8",
        ("cpu", "cpu.cfs_period_us"): "100000",
        ("cpu", "cpu.cfs_quota_us"): "50000",
    }
    v2 = {s.file: s.value for s in settings_for(2, SMALL)}
    assert v2 == {
        "memory.max": str(64 << 20),
        "memory.swap.max": "0",
        "pids.max": "8",
        "cpu.max": "50000 100000",
    }
    assert settings_for(1, Limits(max_memory_bytes=None, max_processes=None)) == []


def test_a_group_holds_its_limits_counts_refused_forks_and_ends_empty(group: TreeGroup) -> None:
    written = {folder.name for folder in group.distinct()}
    assert len(written) == 1 and next(iter(written)).startswith(f"{PREFIX}{os.getpid()}-")
    limits = {s.file: s.value for s in settings_for(group.version, SMALL)}
    for setting in settings_for(group.version, SMALL):
        path = group.folders[setting.controller] / setting.file
        if setting.required:
            assert path.read_text().split()[0] == limits[setting.file].split()[0]
    code = textwrap.dedent(
        """
        import os, sys, time
        kids = 0
        for _ in range(20):
            try:
                if os.fork() == 0:
                    time.sleep(60); os._exit(0)
                kids += 1
            except OSError:
                break
        print(kids, flush=True)
        time.sleep(60)
        """
    )
    enter = group.open_procs()
    try:
        child = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            preexec_fn=preexec(Limits(), gpu=False, enter=enter),
        )
    finally:
        for fd in enter:
            os.close(fd)
    assert child.stdout is not None
    forked = int(child.stdout.readline())
    assert forked < 8  # pids.max 8 counts the parent too: the ninth fork was refused
    assert child.pid in group.pids() and len(group.pids()) == forked + 1
    assert group.usage().refused_forks >= 1
    assert group.kill_all() == forked + 1
    child.wait(timeout=30)
    assert group.pids() == set()


def test_a_folder_that_is_no_cgroup_is_refused_and_left_clean(tmp_path: Path) -> None:
    with pytest.raises(TreeLimitsUnavailable, match="does not exist"):
        locate(tmp_path / "missing", {"": "/"})
    with pytest.raises(TreeLimitsUnavailable, match="no cgroup filesystem at"):
        locate(tmp_path, {"memory": "/", "pids": "/", "cpu": "/", "cpuacct": "/"})
    fake = tmp_path / "fake"  # looks like v1 hierarchies, but plain folders: writes would land
    for controller in ("memory", "pids", "cpu", "cpuacct"):  # in ordinary files, limiting nothing
        (fake / controller).mkdir(parents=True)
        (fake / controller / "cgroup.procs").write_text("")
    own = {c: "/" for c in ("memory", "pids", "cpu", "cpuacct")}
    with pytest.raises(TreeLimitsUnavailable, match="is not in a cgroup filesystem"):
        make_group(locate(fake, own), SMALL)
    assert not list(fake.glob(f"*/{PREFIX}*"))


def test_a_v1_host_missing_a_hierarchy_says_which(tmp_path: Path) -> None:
    for controller in ("memory", "pids"):
        (tmp_path / controller).mkdir()
        (tmp_path / controller / "cgroup.procs").write_text("")
    own = {c: "/" for c in ("memory", "pids", "cpu", "cpuacct")}
    with pytest.raises(TreeLimitsUnavailable, match="lacks cpu, cpuacct"):
        locate(tmp_path, own)


def test_orphans_of_a_dead_maker_are_removed_and_nothing_else(group: TreeGroup) -> None:
    parent = next(iter(group.distinct())).parent
    dead = subprocess.Popen(["true"])  # a pid that no process has any more
    dead.wait()
    old = time.time() - 3600
    orphan, young = parent / f"{PREFIX}{dead.pid}-orphan", parent / f"{PREFIX}{dead.pid}-young"
    for folder in (orphan, young):
        folder.mkdir()
    os.utime(orphan, (old, old))
    try:
        os.utime(next(iter(group.distinct())), (old, old))  # its maker (this process) lives
        assert remove_orphans(parent) == [orphan]
        assert young.is_dir() and next(iter(group.distinct())).is_dir()
    finally:
        for folder in (orphan, young):
            if folder.exists():
                folder.rmdir()


V2_PROBE = """
import json, os, subprocess, sys, time
from pathlib import Path
from fixers.sandbox.cgroups import TreeGroup, TreeLimitsUnavailable, locate
from fixers.sandbox.limits import Limits, preexec

mount = Path(sys.argv[1])
found = {"controllers": (mount / "cgroup.controllers").read_text().split()}
try:
    found["located"] = locate(mount, {"": "/"}).version
except TreeLimitsUnavailable as exc:
    found["refused"] = str(exc)
folder = mount / f"repairbot-{os.getpid()}-v2test"
folder.mkdir()
group = TreeGroup(2, {"": folder})
try:
    enter = group.open_procs()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        preexec_fn=preexec(Limits(), gpu=False, enter=enter),
    )
    for fd in enter:
        os.close(fd)
    found["inside"] = sorted(group.pids()) == [sleeper.pid]
    found["cpu_counted"] = (folder / "cpu.stat").is_file()
    found["killed"] = group.kill_all()  # through cgroup.kill first
    sleeper.wait(timeout=30)
    found["left"] = sorted(group.pids())
finally:  # the v2 hierarchy is the host's, whatever mount shows it
    group.kill_all()
    found["removed"] = group.remove() and not folder.exists()
print(json.dumps(found))
"""


def in_private_mounts(mounting: str, script: Path, *args: object) -> dict[str, object]:
    """Run ``mounting`` (shell) then the Python ``script`` in a private mount namespace (the
    host's mounts stay as they are); the JSON object it printed last."""
    command = f"{mounting} && exec {sys.executable} {script} {' '.join(map(str, args))}"
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", command],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_a_v2_group_holds_kills_and_removes_its_processes(tmp_path: Path) -> None:
    mount = tmp_path / "cgroup2"
    mount.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(V2_PROBE)
    found: dict[str, Any] = in_private_mounts(f"mount -t cgroup2 none {mount}", probe, mount)
    if {"memory", "pids", "cpu"} <= set(found["controllers"]):
        assert found["located"] == 2
    else:  # bound to v1 hierarchies, as on this machine: the reason names them
        missing = [c for c in ("memory", "pids", "cpu") if c not in found["controllers"]]
        assert f"{', '.join(missing)} not available" in found["refused"]
    assert found["inside"] and found["cpu_counted"]
    assert found["killed"] == 1 and found["left"] == [] and found["removed"]


V2_NESTING = """
import json, os, subprocess, sys
from pathlib import Path
from fixers.sandbox.cgroups import SERVICE_LEAF, TreeGroup, TreeLimitsUnavailable, delegated
from fixers.sandbox.limits import Limits, preexec

mount = Path(sys.argv[1])
root_had = "hugetlb" in (mount / "cgroup.subtree_control").read_text().split()
service = mount / f"nesting-test-{os.getpid()}"  # stands for the service's own cgroup
service.mkdir()
group = TreeGroup(2, {"": service / f"repairbot-{os.getpid()}-nested"})
found = {"root_controllers": (mount / "cgroup.controllers").read_text().split()}

def start_in(folder):
    fd = os.open(folder / "cgroup.procs", os.O_WRONLY)
    try:
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                preexec_fn=preexec(Limits(), gpu=False, enter=[fd]))
    finally:
        os.close(fd)

resident = start_in(service)  # the service's process, in its own cgroup
try:
    if not root_had:  # the root hands hugetlb down (the only v2 controller on a v1 host)
        (mount / "cgroup.subtree_control").write_text("+hugetlb")
    try:
        delegated(service, ("memory",))
    except TreeLimitsUnavailable as exc:
        found["missing"] = str(exc)
    found["parent"] = str(delegated(service, ("hugetlb",)))
    found["moved"] = (service / SERVICE_LEAF / "cgroup.procs").read_text().split()
    found["enabled"] = (service / "cgroup.subtree_control").read_text().split()
    found["from_the_leaf"] = str(delegated(service / SERVICE_LEAF, ("hugetlb",)))
    group.folders[""].mkdir()
    sandboxed = start_in(group.folders[""])
    found["sandbox_has"] = (group.folders[""] / "cgroup.controllers").read_text().split()
    found["sandboxed"] = sorted(group.pids()) == [sandboxed.pid]
    found["killed"] = group.kill_all()
    sandboxed.wait(timeout=30)
finally:
    resident.kill()
    resident.wait()
    group.kill_all()
    group.remove()
    for folder in (service / SERVICE_LEAF, service):
        if folder.exists():
            folder.rmdir()
    if not root_had:
        (mount / "cgroup.subtree_control").write_text("-hugetlb")
found["resident"] = resident.pid
print(json.dumps(found))
"""


def test_a_v2_service_cgroup_moves_its_processes_into_a_leaf_to_hand_controllers_down(
    tmp_path: Path,
) -> None:
    """Cgroup v2 refuses controllers to the children of a cgroup that holds processes: the
    service's are moved into a leaf first. Shown with hugetlb, the v2 controller this v1 host
    has; memory (bound to v1 here) is refused with the reason. On a v2 host (a GPU runner's,
    say) memory is handed down too."""
    mount = tmp_path / "cgroup2"
    mount.mkdir()
    probe = tmp_path / "nesting.py"
    probe.write_text(V2_NESTING)
    found: dict[str, Any] = in_private_mounts(f"mount -t cgroup2 none {mount}", probe, mount)
    service = f"{mount}/nesting-test-"
    assert found["parent"].startswith(service)  # its own cgroup, now holding no process
    assert found["moved"] == [str(found["resident"])]
    on_v2 = "memory" in found["root_controllers"]
    handed = ["memory", "hugetlb"] if on_v2 else ["hugetlb"]
    assert found["enabled"] == handed and found["sandbox_has"] == handed
    assert found["from_the_leaf"] == found["parent"]  # once moved, the leaf's parent
    assert found["sandboxed"] and found["killed"] == 1
    assert on_v2 or "memory not available in" in found["missing"]
