"""The ``repairbot sweep`` / ``repairbot fix`` console commands, run as real subprocesses."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN = Path(__file__).parents[2] / "fixtures" / "sweep" / "golden" / "before"
SCRIPT = Path(sys.executable).with_name("repairbot")
GUARD_LOG = (
    "ImportError while importing test module 'tests/test_x.py'.\n"
    "Traceback (most recent call last):\n"
    '  File "pkg/workers/nvtx.py", line 8, in <module>\n'
    "    class MTPWorker(SpecWorkerBase):\n"
    "TypeError: MTPWorker must not override SpecWorkerBase.forward; implement _forward_impl "
    "instead. SpecWorkerBase.forward guarantees spec-dec attn-metadata cleanup when a forward "
    "fails (https://nvbugs/6442074).\n"
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "bot.cli"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, check=False, timeout=300
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(GOLDEN, root)
    return root


def test_sweep_json(tree: Path) -> None:
    proc = _cli("sweep", str(tree), "--json")
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    kinds = {(v["class"].rsplit(".", 1)[-1], v["kind"]) for v in report["violations"]}
    assert ("NestedWorker", "forbidden-override") in kinds
    assert ("_Worker", "missing-hook") in kinds
    assert any(s["path"] == "pkg/workers/broken.py" for s in report["skips"])


def test_fix_diff_does_not_write(tree: Path) -> None:
    before = (tree / "pkg" / "workers" / "nvtx.py").read_text()
    proc = _cli("fix", str(tree), "--diff", "--no-import-check")
    assert proc.returncode == 0, proc.stderr
    assert "+++ b/pkg/workers/nvtx.py" in proc.stdout
    assert "-    def forward(self, input_ids, position_ids" in proc.stdout
    assert "not fixed pkg/workers/broken.py: syntax error" in proc.stdout
    assert (tree / "pkg" / "workers" / "nvtx.py").read_text() == before


def test_fix_write_then_sweep_is_clean_of_fixable(tree: Path) -> None:
    proc = _cli("fix", str(tree), "--write", "--json")
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)["written"]
    assert "tests/test_workers.py" in written and len(written) == 10
    report = json.loads(_cli("sweep", str(tree), "--json").stdout)
    assert {v["path"] for v in report["violations"] if v["fix"]} == {"pkg/workers/latin1.py"}


def test_fix_with_log_picks_the_contract(tree: Path, tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text(GUARD_LOG)
    proc = _cli("fix", str(tree), "--log", str(log), "--no-import-check")
    assert proc.returncode == 0, proc.stderr
    assert "log names contract SpecWorkerBase: forward -> _forward_impl" in proc.stderr
    assert "+++ b/pkg/workers/yapf_style.py" in proc.stdout  # the whole repo, not just the log


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sweep", "/no/such/dir"), "is not a directory"),
        (("sweep", ".", "--contract", "not valid!"), "expected Base"),
        (("sweep", ".", "--contract", "Shape:area"), "hook missing"),
        (("fix", ".", "--contract", "Shape"), "forbidden and hook missing"),
        (("fix", ".", "--diff", "--write"), "choose one of --diff and --write"),
    ],
)
def test_bad_arguments_exit_2_with_a_reason(args: tuple[str, ...], message: str) -> None:
    proc = _cli(*args)
    assert proc.returncode == 2
    # Click's error box wraps long lines: compare the words.
    assert message in " ".join((proc.stdout + proc.stderr).replace("│", " ").split())


def test_text_output_prints_locations_verbatim(tree: Path) -> None:
    # Rich would render ":100:" as an emoji: a location on line 100 must stay "late.py:100:".
    late = tree / "pkg" / "workers" / "late.py"
    late.write_text(
        "from pkg.base import SpecWorkerBase\n"
        + "# padding\n" * 97
        + "class LateWorker(SpecWorkerBase):\n"
        + "    def forward(self, x):\n"
        + "        return x\n"
    )
    proc = _cli("sweep", str(tree))
    assert proc.returncode == 1, proc.stderr
    assert "pkg/workers/late.py:100: forbidden-override" in proc.stdout


def test_fix_exits_4_when_the_log_names_a_break_it_leaves_for_a_human(tmp_path: Path) -> None:
    from tests.fixers.learned import history_repos as repos

    line = (
        "TypeError: Can't instantiate abstract class SmsNotifier without an implementation "
        "for abstract method 'send'"
    )
    log = repos.failure_log(tmp_path / "failure.log", line)
    fixable = repos.notifiers_repo(tmp_path / "fixable", new="body, title")
    proc = _cli("fix", str(fixable), "--log", str(log), "--no-import-check", "--explain")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fixed: SmsNotifier (notifiers/sms.py)" in proc.stdout
    renamed = repos.notifiers_repo(tmp_path / "renamed", new="body, title", missed="subject, text")
    proc = _cli("fix", str(renamed), "--log", str(log), "--no-import-check", "--explain")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "reported: SmsNotifier (notifiers/sms.py): its notify does not take body" in proc.stdout
