"""Contracts: built in, from .repairbot.toml, from --contract, from a CI log, inferred."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from fixers.classify.failures import Finding
from fixers.contracts.inference import infer_contracts
from fixers.contracts.model import (
    SPEC_WORKER_CONTRACT,
    contract_from_option,
    contracts_from_findings,
    load_config,
    parse_config,
    parse_python_floor,
)
from fixers.sweep.run import sweep


def _write(root: Path, text: str) -> Path:
    (root / ".repairbot.toml").write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def test_builtin_contract_is_the_spec_worker_one() -> None:
    c = SPEC_WORKER_CONTRACT
    assert (c.base, c.forbidden, c.hook, c.restore_hook) == (
        "SpecWorkerBase",
        "forward",
        "_forward_impl",
        "_ensure_spec_dec_state_restored",
    )
    assert c.metadata_params == ("attn_metadata", "spec_metadata")


def test_config_contracts_and_settings(tmp_path: Path) -> None:
    _write(
        tmp_path,
        """
        python = "3.10"
        test_dirs = ["qa"]
        exclude = ["third_party/*"]

        [[contract]]
        base = "RunnerBase"
        forbidden = "run"
        hook = "_run_impl"
        restore_hook = "_cleanup"
        metadata_params = ["ctx"]
    """,
    )
    config = load_config(tmp_path)
    assert config.errors == ()
    assert config.python == (3, 10) and config.test_dirs == ("qa",)
    assert config.exclude == ("third_party/*",)
    (contract,) = config.contracts
    assert (contract.base, contract.forbidden, contract.hook, contract.restore_hook) == (
        "RunnerBase",
        "run",
        "_run_impl",
        "_cleanup",
    )
    assert contract.metadata_params == ("ctx",) and contract.source == ".repairbot.toml"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("[[contract]\nbase = 1", "not valid TOML"),
        ("[[contract]]\nforbidden = 'run'", ":1: contract[1].base: required"),
        ("[[contract]]\nbase = 'not an identifier'", "identifier"),
        ("[[contract]]\nbase = 'B'\ncolour = 'red'", ":3: contract[1].colour: unknown key"),
        ("[[contract]]\nbase = 'B'\nforbidden = 'x'\nhook = 'x'", "must differ"),
        ("[[contract]]\nbase = 'Shape'", "'forbidden' and 'hook' required for Shape"),
        ("[[contract]]\nbase = 'Shape'\nforbidden = 'area'", "'hook' required for Shape"),
        ("contract = 3", "contract: must be a list"),
        ("test_dirs = 'tests'", "test_dirs: must be a list"),
        ("python = 'three'", "python: must be a string like"),
        ("python = 3.10", 'python: must be a string like "3.10" (unquoted, 3.1 is a number)'),
    ],
)
def test_bad_config_is_reported_not_raised(tmp_path: Path, text: str, fragment: str) -> None:
    config = load_config(_write(tmp_path, text))
    assert any(fragment in error for error in config.errors), config.errors
    assert config.contracts == ()


def test_config_that_is_not_utf8_is_reported(tmp_path: Path) -> None:
    (tmp_path / ".repairbot.toml").write_bytes(b"base = '\xff'")
    assert "unreadable" in load_config(tmp_path).errors[0]


def test_python_floor_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nrequires-python = ">=3.10, <4"\n')
    assert load_config(tmp_path).python == (3, 10)
    assert parse_python_floor(">3.9") == (3, 10)
    assert parse_python_floor("whatever") is None


def test_contract_option() -> None:
    assert contract_from_option("builtin") is SPEC_WORKER_CONTRACT
    c = contract_from_option("RunnerBase:run:_run_impl")
    assert (c.base, c.forbidden, c.hook, c.source) == (
        "RunnerBase",
        "run",
        "_run_impl",
        "--contract",
    )
    with pytest.raises(ValueError, match="expected Base"):
        contract_from_option("a b")
    assert contract_from_option("SpecWorkerBase") is SPEC_WORKER_CONTRACT


@pytest.mark.parametrize(
    ("option", "missing"), [("Shape", "forbidden and hook missing"), ("Shape:area", "hook missing")]
)
def test_a_partial_contract_option_names_what_is_missing(option: str, missing: str) -> None:
    with pytest.raises(ValueError, match=missing):
        contract_from_option(option)


def test_a_contract_for_another_base_inherits_none_of_the_builtin_names(tmp_path: Path) -> None:
    c = contract_from_option("Shape:area:_area_impl")
    assert (c.restore_hook, c.metadata_params) == (None, ())
    _write(tmp_path, "[[contract]]\nbase = 'Shape'\nforbidden = 'area'\nhook = '_area_impl'\n")
    [declared] = load_config(tmp_path).contracts
    assert (declared.restore_hook, declared.metadata_params) == (None, ())
    _write(tmp_path, "[[contract]]\nbase = 'SpecWorkerBase'\nbase_module = 'pkg.spec'\n")
    [builtin] = load_config(tmp_path).contracts
    assert (builtin.forbidden, builtin.hook, builtin.restore_hook) == (
        "forward", "_forward_impl", "_ensure_spec_dec_state_restored"
    )  # fmt: skip


def test_contracts_from_findings() -> None:
    guard = Finding(
        "contract-forward-override",
        "rename",
        "TypeError",
        "m",
        captures={
            "cls": "W",
            "base": "SpecWorkerBase",
            "method": "forward",
            "hook": "_forward_impl",
        },
    )
    other = Finding(
        "contract-forward-override",
        "rename",
        "TypeError",
        "m",
        captures={"cls": "W", "base": "RunnerBase", "method": "run", "hook": "_run"},
    )
    abstract = Finding(
        "abstract-method-missing",
        "stub",
        "TypeError",
        "m",
        missing_methods=("_forward_impl", "max_draft_len"),
    )
    unrelated = Finding("unclassified", None, None, "boom")
    assert contracts_from_findings([guard, abstract]) == [SPEC_WORKER_CONTRACT]
    (picked,) = contracts_from_findings([other])
    assert (picked.base, picked.forbidden, picked.hook, picked.source) == (
        "RunnerBase",
        "run",
        "_run",
        "CI log",
    )
    assert contracts_from_findings([unrelated]) == []


GUARDED = (Path(__file__).parents[2] / "fixtures" / "sweep" / "guarded_runner.py").read_text()


def test_infer_contract_from_init_subclass_guard() -> None:
    (contract,) = infer_contracts(ast.parse(GUARDED), "pkg.runner", "pkg/runner.py")
    assert (contract.base, contract.base_module, contract.forbidden, contract.hook) == (
        "RunnerBase",
        "pkg.runner",
        "run",
        "_run_impl",
    )
    assert contract.restore_hook == "_cleanup"
    assert contract.metadata_params == ("ctx", "state")
    assert contract.source == "inferred from pkg/runner.py:4"


def test_a_contract_named_by_a_log_takes_the_restore_hook_its_base_declares(
    tmp_path: Path,
) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "runner.py").write_text(GUARDED)
    finding = Finding(
        "contract-forward-override", "rename", "TypeError", "m",
        captures={"cls": "W", "base": "RunnerBase", "method": "run", "hook": "_run_impl"},
    )  # fmt: skip
    [from_log] = contracts_from_findings([finding])
    assert (from_log.restore_hook, from_log.metadata_params) == (None, ())
    [used] = sweep(tmp_path, [from_log]).contracts
    assert (used.restore_hook, used.metadata_params) == ("_cleanup", ("ctx", "state"))
    assert used.source == "inferred from pkg/runner.py:4"


@pytest.mark.parametrize(
    ("text", "command", "error"),
    [
        ("", None, None),
        ('[fan_out]\nrerun_command = "/bot run"\n', "/bot run", None),
        ('[fan_out]\nrerun_command = "  /bot run --debug "\n', "/bot run --debug", None),
        ("[fan_out]\n", None, None),
        ("fan_out = 3\n", None, "fan_out: must be a table, got 3"),
        ("[fan_out]\nrerun_command = 5\n", None, "fan_out.rerun_command: must be a string"),
        ('[fan_out]\nrerun_command = " "\n', None, "'rerun_command' must be a non-empty string"),
        ('[fan_out]\nrerun_command = "/bot run\\n/bot kill"\n', None, "must be one line"),
        (f'[fan_out]\nrerun_command = "{"x" * 201}"\n', None, "one line, 200 chars at most"),
    ],
)
def test_fan_out_rerun_command(
    tmp_path: Path, text: str, command: str | None, error: str | None
) -> None:
    config = parse_config(text, tmp_path)
    assert config.rerun_command == command
    if error is None:
        assert config.errors == ()
    else:
        [problem] = config.errors
        assert error in problem


def test_arrays_nested_thousands_deep_are_an_error_not_a_crash(tmp_path) -> None:
    config = parse_config("a = " + "[" * 5000 + "]" * 5000, tmp_path)
    assert config.errors and "not valid TOML" in config.errors[0]
    assert config.contracts == ()
