from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from bot.runner.device import matches_gpu_type, on_requested_device
from bot.runner.selection import extra_command, find_importing_tests, import_graph, select_tests
from fixers.sandbox import Limits, clean_environment, run_isolated


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_tests_importing_changed_code_transitively_and_relatively(tmp_path):
    root = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/core.py": "X = 1\n",
            "pkg/mid.py": "from .core import X\n",
            "pkg/api.py": "from . import mid\n",
            "tests/test_api.py": "import pkg.api\n",
            "tests/test_alias.py": "import pkg.mid as m\n",
            "tests/test_unrelated.py": "import json\n",
            "tests/helpers.py": "from pkg.core import X\n",
            "broken/test_bad.py": "def (:\n",
        },
    )
    graph = import_graph(root, [str(p.relative_to(root)) for p in root.rglob("*.py")])
    assert find_importing_tests(graph, ["pkg/core.py"]) == [
        "tests/test_alias.py",
        "tests/test_api.py",
    ]


def test_selection_keeps_failed_tests_that_exist_and_reads_the_extra_command(tmp_path):
    root = _tree(
        tmp_path,
        {
            "lib/__init__.py": "",
            "lib/w.py": "from runtime.speculative.interface import SpecWorkerBase\n",
            "tests/test_w.py": "import lib.w\n",
            "tests/test_x.py": "def test_x(): pass\n",
            ".repairbot.toml": '[verify]\ncommand = "python -m lib.check --fast"\n',
        },
    )
    selection = select_tests(
        root, changed=["lib/w.py"], failed=["tests/test_x.py::test_x", "gone.py::t"]
    )
    assert selection.pytest_targets == ["tests/test_w.py", "tests/test_x.py::test_x"]
    assert selection.conformance_packages == ["lib"]
    assert selection.extra_command == ["python", "-m", "lib.check", "--fast"]
    assert selection.notes == ["1 failed test(s) from the report are not in this tree"]


def test_ids_from_a_unittest_log_find_their_file_in_a_src_layout(tmp_path):
    """A unittest name (``pkg.tests.test_mod.TestC.test_a``) says nothing of ``src/``: the
    id's file is the one file of the tree that ends with its path, and the ids stay pytest node
    ids, which the verification reruns with pytest (unittest, nose, Django and trial tests are
    unittest TestCases or plain test functions pytest collects)."""
    root = _tree(
        tmp_path,
        {
            "src/pkg/__init__.py": "",
            "src/pkg/tests/test_mod.py": "import unittest\nclass TestC(unittest.TestCase): ...\n",
            "a/test_twice.py": "def test_t(): pass\n",
            "b/test_twice.py": "def test_t(): pass\n",
        },
    )
    selection = select_tests(
        root,
        changed=[],
        failed=["pkg/tests/test_mod.py::TestC::test_a", "test_twice.py::test_t", "gone.py::x"],
        others=["pkg/tests/test_mod.py::TestC::test_b"],
    )
    assert selection.failed_tests == ["src/pkg/tests/test_mod.py::TestC::test_a"]
    assert selection.pytest_targets == ["src/pkg/tests/test_mod.py::TestC::test_a"]
    assert selection.other_tests == ["src/pkg/tests/test_mod.py::TestC::test_b"]
    assert selection.notes == [
        "2 failed test(s) from the report are not in this tree",  # one ambiguous, one gone
        "1 failed test id(s) found under another directory of this tree, e.g. "
        "pkg/tests/test_mod.py::TestC::test_a → src/pkg/tests/test_mod.py::TestC::test_a",
    ]


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ("[verify]\ncommand = 3\n", "must be a non-empty string"),
        ("[verify\n", "ignored"),
        ('[verify]\ncommand = "a \\"b"\n', "does not parse"),
    ],
)
def test_bad_extra_commands_are_reported_not_run(tmp_path, config, problem):
    (tmp_path / ".repairbot.toml").write_text(config)
    command, reason = extra_command(tmp_path)
    assert command is None and reason is not None and problem in reason


@pytest.mark.parametrize(
    ("device", "queue", "expected"),
    [
        ("NVIDIA H100 PCIe", "gpu.H100_PCIe", True),
        ("NVIDIA H100 80GB HBM3", "gpu.H100_PCIe", False),
        ("NVIDIA B200", "gpu.DGX_B200", True),
        ("cpu", "gpu.A10", False),
        ("cpu", "cpu", True),
        ("NVIDIA A10", "gpu.any", True),
        ("cpu", "gpu.any", False),
    ],
)
def test_device_matches_the_requested_queue(device, queue, expected):
    assert on_requested_device(device, queue) is expected


def test_gpu_type_matching_ignores_case_and_punctuation():
    assert matches_gpu_type("NVIDIA H200", "H200") and not matches_gpu_type("NVIDIA H20", "H200")


def test_the_sandbox_environment_carries_no_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("REPAIRBOT_GITHUB_WEBHOOK_SECRET", "s3cret")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_x")
    log = tmp_path / "log"
    result = run_isolated(
        [sys.executable, "-c", "import os; print(sorted(os.environ))"],
        cwd=tmp_path,
        run_dir=tmp_path,
        log_path=log,
        limits=Limits(timeout_s=60),
    )
    assert result.returncode == 0
    printed = log.read_text()
    assert "GITHUB_TOKEN" not in printed and "REPAIRBOT_" not in printed and "'HOME'" in printed
    assert clean_environment(tmp_path)["HOME"] == str(tmp_path / "home")
    assert os.environ["GITHUB_TOKEN"] == "ghp_x"


def test_file_size_limit_stops_runaway_writes(tmp_path):
    log = tmp_path / "log"
    code = "open('big', 'wb').write(b'x' * (2 << 20))"
    result = run_isolated(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        run_dir=tmp_path,
        log_path=log,
        limits=Limits(timeout_s=60, max_file_bytes=1 << 20),
    )
    assert result.returncode != 0
    assert (tmp_path / "big").stat().st_size <= 1 << 20
