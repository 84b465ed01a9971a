"""Every codemod's EXAMPLES, run through LibCST's own runner: the examples are the tests."""

from __future__ import annotations

import ast
import textwrap

import pytest
from libcst.codemod import (
    Codemod,
    CodemodContext,
    TransformSkip,
    TransformSuccess,
    transform_module,
)

from fixers.codemods.examples import Example
from fixers.codemods.registry import builtin_codemods

CODEMODS = builtin_codemods()


def _command(module_name: str) -> type[Codemod]:
    module = CODEMODS.modules[module_name]
    spec = module.CODEMOD
    commands = [
        v
        for k, v in vars(module).items()
        if k.endswith("Command") and getattr(v, "__module__", "") == module.__name__
    ]
    assert commands == [spec.command], commands
    assert module.DESCRIPTION and spec.command.DESCRIPTION == module.DESCRIPTION
    assert spec.description == module.DESCRIPTION and spec.examples == module.EXAMPLES
    return spec.command


def test_every_codemod_carries_examples():
    assert CODEMODS.codemods
    assert all(spec.examples for spec in CODEMODS.codemods)


CASES = [
    pytest.param(spec.name, example, id=f"{spec.name}: {example.name}")
    for spec in CODEMODS.codemods
    for example in spec.examples
]


@pytest.mark.parametrize(("module_name", "example"), CASES)
def test_example(module_name: str, example: Example) -> None:
    command = _command(module_name)
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
