"""Notes on what a learned signature edit leaves in a method's body."""

from __future__ import annotations

import ast

from fixers.learned.body_notes import body_caveat, not_passed_to_super
from fixers.learned.signature_edit import Function


def _function(source: str) -> Function:
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def test_a_parameter_the_siblings_use_and_this_body_does_not_is_noted() -> None:
    function = _function("def url(self, privacy=False):\n    return self.token\n")
    note = body_caveat(function, "url", ["privacy"], {"privacy": 48}, 50)
    assert note == (
        "; note: the siblings' bodies use privacy (48 of 50), its body does not "
        "(bodies are not learned: check whether it should)"
    )
    used = _function("def url(self, privacy=False):\n    return mask(self.token, privacy)\n")
    assert body_caveat(used, "url", ["privacy"], {"privacy": 48}, 50) == ""
    assert body_caveat(function, "url", ["privacy"], {"privacy": 0}, 50) == ""


def test_super_calls_that_drop_or_forward_the_new_argument() -> None:
    dropping = _function("def get(self, ctx, call=True):\n    return super().get(ctx)\n")
    assert not_passed_to_super(dropping, "get", ["call"]) == ["call"]
    forwarding = _function(
        "def get(self, ctx, call=True):\n    return super().get(ctx, call=call)\n"
    )
    assert not_passed_to_super(forwarding, "get", ["call"]) == []
    spread = _function("def get(self, ctx, **kw):\n    return super().get(ctx, **kw)\n")
    assert not_passed_to_super(spread, "get", ["call"]) == []
