"""The learned migration codemod's parameter editing: where an added parameter goes, and the
overrides it refuses to guess for."""

from __future__ import annotations

import libcst as cst
import pytest

from fixers.codemods.parameter_edits import NotLearnable, edit_parameters
from fixers.learned.signature_edit import Param


def _edited(signature: str, *added: Param, removed: tuple[str, ...] = ()) -> str:
    function = cst.parse_statement(f"def f({signature}):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    params = edit_parameters(function.params, added, removed, ())
    return cst.Module([]).code_for_node(function.with_changes(params=params)).splitlines()[0]


def test_a_placed_positional_parameter_is_inserted_at_its_index() -> None:
    view = Param("view", "positional", position=1)
    assert _edited("self, args, kwargs", view) == "def f(self, view, args, kwargs):"
    assert _edited("self, *args", view) == "def f(self, view, *args):"


def test_a_placed_parameter_after_positional_only_ones_goes_after_the_slash() -> None:
    view = Param("view", "positional", position=2)
    assert _edited("self, a, /, b", view) == "def f(self, a, /, view, b):"


def test_a_placed_parameter_the_override_cannot_hold_there_is_refused() -> None:
    with pytest.raises(NotLearnable, match="positional parameter 3; this override has 1"):
        _edited("self, *args", Param("view", "positional", position=2))
    with pytest.raises(NotLearnable, match="positional parameter 1; this override has 2"):
        _edited("a, b, /", Param("view", "positional", position=0))


def test_a_placed_parameter_without_default_after_defaulted_ones_is_refused() -> None:
    with pytest.raises(NotLearnable, match="follows parameters that do"):
        _edited("self, a=1, b=2", Param("view", "positional", position=2))
    assert _edited("self, a, b=2", Param("view", "positional", position=1)) == (
        "def f(self, view, a, b=2):"
    )


def test_removing_every_positional_only_parameter_drops_the_slash() -> None:
    assert _edited("self, a, /, b", removed=("self", "a")) == "def f(b):"
