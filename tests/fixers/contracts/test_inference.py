"""Contract inference walks only the statements of a module, in ``ast.walk``'s order."""

from __future__ import annotations

import ast
import textwrap

from fixers.contracts.inference import class_statements

NESTED = textwrap.dedent(
    """
    class A:
        class B:
            pass
    if x:
        class C:
            def f(self):
                class D: ...
    try:
        pass
    except E:
        class F: ...
    match y:
        case 1:
            class G: ...
    value = [lambda: 1 for _ in range(3)]
    """
)


def test_class_statements_are_those_of_a_full_walk_in_its_order() -> None:
    tree = ast.parse(NESTED)
    walked = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert [node.name for node in class_statements(tree)] == walked
    assert sorted(walked) == ["A", "B", "C", "D", "F", "G"]
