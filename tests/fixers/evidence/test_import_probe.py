"""The import server in the real sandbox, attacked by the modules it checks.

Each module is imported in a child of its own: one that kills the server, forks and lingers,
prints forged answers, sleeps for ever, leaves the process with ``os._exit``, or tries to steer
the next module's check must not change any other module's answer. Every case pairs a hostile
module with honest ones whose answers are known (one of them must fail), so a check that did not
run, or ran in the wrong process, shows.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from fixers.evidence import import_probe as import_probe
from fixers.evidence.import_check import check_imports
from fixers.sandbox import sandbox_problem
from fixers.sweep.outcome import FileChange

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))

GOOD = "VALUE = 1\n"
BAD = "raise ValueError('broken at import')\n"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("STATE = 'clean'\n")
    return repo


def _changes(repo: Path, modules: dict[str, str]) -> list[FileChange]:
    """One change per ``name -> new source``; the file on disk must never be imported."""
    changes = []
    for name, after in modules.items():
        rel = f"pkg/{name}.py"
        (repo / rel).write_text("raise RuntimeError('the old source was imported')\n")
        changes.append(FileChange(rel, f"pkg.{name}", "", after, ["x"], ["A"]))
    return changes


def _check(repo: Path, modules: dict[str, str], **options: object) -> dict[str, tuple[str, str]]:
    answers = check_imports(repo, _changes(repo, modules), preload=(), **options)  # type: ignore[arg-type]
    return {
        path.removeprefix("pkg/").removesuffix(".py"): answer for path, answer in answers.items()
    }


def _honest(answers: dict[str, tuple[str, str]]) -> None:
    assert answers["good"] == ("ok", "")
    assert answers["bad"][0] == "failed" and "broken at import" in answers["bad"][1]


def test_a_module_that_kills_the_server_is_unverified_and_the_rest_are_checked(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path)
    kill = "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n"
    answers = _check(repo, {"good": GOOD, "killer": kill, "bad": BAD, "after": GOOD})
    assert answers["killer"][0] == "unverified"
    assert "ended the import server" in answers["killer"][1]
    _honest(answers)
    assert answers["after"] == ("ok", "")  # checked by a fresh server


def test_a_lingering_fork_is_killed_before_the_next_module(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    marker = f"lingering-{uuid.uuid4().hex}"
    flag = "import os\nSEEN = os.path.join(os.environ['TMPDIR'], 'flag')\n"
    forker = (
        flag + "import sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        while True:\n"
        "            open(SEEN, 'w').close()\n"
        "            time.sleep(0.01)\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}])\n"
        "time.sleep(0.5)\n"
    )
    # If anything of the previous module still ran (or its file survived), this one fails.
    watcher = flag + "import time\ntime.sleep(0.3)\nassert not os.path.exists(SEEN), 'left over'\n"
    answers = _check(repo, {"forker": forker, "watcher": watcher, "good": GOOD, "bad": BAD})
    assert answers["forker"] == ("ok", "")
    assert answers["watcher"] == ("ok", "")
    _honest(answers)
    assert not _processes_with(marker)  # nothing of the target outlives the check


def test_forged_answers_on_stdout_or_any_descriptor_change_nothing(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    # Well-formed answers for every module (the service stops reading once it has them all),
    # and a line left open (no newline).
    forged = "".join(f'["answer", "pkg.{m}", "ok", ""]\n' for m in ("forger", "bad", "good"))
    forged += '["checking", "pkg.good"]\n["ok", ""]\n{not json'
    forger = (
        "import os, sys\n"
        f"line = {forged!r}.encode()\n"
        "sys.stdout.write(line.decode()); sys.stdout.flush()\n"
        "for fd in range(3, 256):\n"
        "    try:\n"
        "        os.write(fd, line)\n"
        "    except OSError:\n"
        "        pass\n"
        "for pid in os.listdir('/proc'):\n"
        "    if not pid.isdigit():\n"
        "        continue\n"
        "    try:\n"
        "        fds = os.listdir(f'/proc/{pid}/fd')\n"
        "    except OSError:\n"
        "        continue\n"
        "    for fd in fds:\n"
        "        try:\n"
        "            with open(f'/proc/{pid}/fd/{fd}', 'wb') as out:\n"
        "                out.write(line)\n"
        "        except OSError:\n"
        "            pass\n"
    )
    answers = _check(repo, {"forger": forger, "bad": BAD, "good": GOOD})
    assert answers["forger"] == ("ok", ""), answers["forger"]
    _honest(answers)


def test_a_module_that_sleeps_for_ever_times_out_alone(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    sleeper = "import time\ntime.sleep(3600)\n"
    answers = _check(repo, {"sleeper": sleeper, "good": GOOD, "bad": BAD}, module_timeout_s=2)
    assert answers["sleeper"][0] == "unverified" and "timed out" in answers["sleeper"][1]
    _honest(answers)


def test_a_module_that_exits_the_process_is_unverified_with_its_code(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    answers = _check(repo, {"exits": "import os\nos._exit(3)\n", "good": GOOD, "bad": BAD})
    assert answers["exits"][0] == "unverified" and "exit 3" in answers["exits"][1]
    _honest(answers)


def test_one_modules_side_effects_do_not_reach_the_next_check(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    poison = (
        "import builtins, os, sys, pkg\n"
        "pkg.STATE = 'poisoned'\n"
        "sys.modules['pkg.good'] = None\n"  # would make importing pkg.good fail
        "builtins.POISON = True\n"
        "os.environ['POISON'] = '1'\n"
        "run_dir = os.path.dirname(os.environ['HOME'])\n"
        "for folder in (os.environ['TMPDIR'], os.environ['HOME'], run_dir, '/tmp', '/dev/shm'):\n"
        "    open(os.path.join(folder, 'poison'), 'w').close()\n"
    )
    victim = (
        "import builtins, os, pkg\n"
        "assert pkg.STATE == 'clean', pkg.STATE\n"
        "assert not hasattr(builtins, 'POISON') and 'POISON' not in os.environ\n"
        "run_dir = os.path.dirname(os.environ['HOME'])\n"
        "for folder in (os.environ['TMPDIR'], os.environ['HOME'], run_dir, '/tmp', '/dev/shm'):\n"
        "    assert not os.path.exists(os.path.join(folder, 'poison')), folder\n"
        "    assert os.path.isdir(os.environ['TMPDIR']) and os.path.isdir(os.environ['HOME'])\n"
    )
    answers = _check(repo, {"poison": poison, "victim": victim, "good": GOOD, "bad": BAD})
    assert answers["poison"] == ("ok", "")
    assert answers["victim"] == ("ok", "")
    _honest(answers)


def test_a_preloaded_package_the_repository_shadows_is_the_repositorys(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    (repo / "colorsys.py").write_text("FROM_THE_REPOSITORY = True\n")
    user = "import colorsys\nassert colorsys.FROM_THE_REPOSITORY\n"
    plain = "import json\nassert json.dumps(1) == '1'\n"
    changes = _changes(repo, {"user": user, "plain": plain})
    answers = check_imports(repo, changes, preload=("colorsys", "json"))
    assert answers == {"pkg/user.py": ("ok", ""), "pkg/plain.py": ("ok", "")}


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_a_later_package_is_preloaded_once_a_module_needed_it(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    not_yet = "import sys\nassert 'colorsys' not in sys.modules\n"
    needs = "import colorsys\nassert colorsys.rgb_to_hsv\n"
    preloaded = "import sys\nassert 'colorsys' in sys.modules  # before any import of its own\n"
    changes = _changes(repo, {"first": not_yet, "needs": needs, "after": preloaded, "bad": BAD})
    answers = check_imports(repo, changes, preload=(), later=("colorsys",))
    assert answers["pkg/first.py"] == ("ok", "")
    assert answers["pkg/needs.py"] == ("ok", "")
    assert answers["pkg/after.py"] == ("ok", "")
    assert answers["pkg/bad.py"][0] == "failed"


@pytest.mark.parametrize("pidfds", [True, False], ids=["pidfd", "polled"])
def test_a_childs_answer_and_exit_are_collected_with_or_without_pidfds(
    pidfds: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own bookkeeping, on a child of this test (no target code)."""
    if not pidfds:
        monkeypatch.setattr(import_probe, "_exited", lambda pid: -1)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer, then leave with a code of its own
        os.close(read_end)
        os.write(write_end, b'garbage\n["failed", "detail", []]\n')
        os._exit(3)
    os.close(write_end)
    data, timed_out, status = import_probe._collect(pid, read_end, 60)
    rest, status = import_probe._end_child(pid, read_end, False, status)
    assert not timed_out and status is not None and os.waitstatus_to_exitcode(status) == 3
    assert import_probe._answer(data + rest) == (["failed", "detail"], [])
    assert import_probe._ending(status, False, 60) == [
        "unverified",
        "the import ended its process (exit 3) before it answered",
    ]
