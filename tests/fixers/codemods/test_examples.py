"""Every codemod's EXAMPLES, run through LibCST's own runner: the examples are the tests."""

from __future__ import annotations

import ast
import importlib
import textwrap
from types import ModuleType

import pytest
from libcst.codemod import (
    Codemod,
    CodemodContext,
    TransformSkip,
    TransformSuccess,
    transform_module,
)

from fixers.codemods.examples import Example

MODULES = ("rename_forbidden", "add_hook_stub", "snapshot_state", "pending_fixup")


def _command(module_name: str) -> tuple[ModuleType, type[Codemod]]:
    module = importlib.import_module(f"fixers.codemods.{module_name}")
    commands = [
        v
        for k, v in vars(module).items()
        if k.endswith("Command") and getattr(v, "__module__", "") == module.__name__
    ]
    assert len(commands) == 1, commands
    assert module.DESCRIPTION and commands[0].DESCRIPTION == module.DESCRIPTION
    return module, commands[0]


CASES = [
    pytest.param(name, example, id=f"{name}: {example.name}")
    for name in MODULES
    for example in importlib.import_module(f"fixers.codemods.{name}").EXAMPLES
]


@pytest.mark.parametrize(("module_name", "example"), CASES)
def test_example(module_name: str, example: Example) -> None:
    _, command = _command(module_name)
    before = textwrap.dedent(example.before).lstrip("\n")
    result = transform_module(command(CodemodContext(), **example.args), before)
    if example.after is None:
        assert isinstance(result, TransformSkip), result
        assert example.skip_reason in result.skip_description
        return
    assert isinstance(result, TransformSuccess), getattr(result, "error", result)
    after = textwrap.dedent(example.after).lstrip("\n")
    assert result.code == after
    ast.parse(result.code)
    again = transform_module(command(CodemodContext(), **example.args), result.code)
    assert isinstance(again, TransformSkip), "second run must change nothing"
