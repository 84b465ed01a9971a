"""The command tables of README.md and docs/github.md (the ``/bot`` commands and repairbot's own,
each row saying where it is read), rendered from the registry and checked against it
(tests/bot/commands/test_reference.py), so the docs cannot drift.

Cells are compared as markdown text: ``|`` inside a cell is written ``\\|``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.commands.registry import Registry, Scope

COMMAND_HEADER = ("command", "usage", "who", "on", "what it does")
WHERE = {Scope.FIX_PR: "repairbot's PRs", Scope.ANY_PR: "any PR"}
EXAMPLE_HEADER = ("example", "effect")
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")

Row = tuple[str, ...]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _code(text: str) -> str:
    return "`" + _cell(text) + "`"


def command_rows(commands: Registry) -> list[Row]:
    """One row per command: name, usage line, permission, where it is read, summary."""
    return [
        (
            _code(spec.name),
            _code(spec.usage),
            spec.permission.value,
            _cell(", ".join(WHERE[scope] for scope in spec.scopes)),
            _cell(spec.summary),
        )
        for spec in commands
    ]


def example_rows(commands: Registry) -> list[Row]:
    """One row per example of every command, in the registry's order."""
    return [
        (_code(example.line), _cell(example.effect))
        for spec in commands
        for example in spec.examples
    ]


def render_table(header: Sequence[str], rows: Sequence[Row]) -> str:
    """A markdown table."""
    rule = "|" + "|".join(["---"] * len(header)) + "|"
    lines = ["| " + " | ".join(line) + " |" for line in [header, *rows]]
    return "\n".join([lines[0], rule, *lines[1:]])


def _cells(line: str) -> Row:
    return tuple(cell.strip() for cell in _UNESCAPED_PIPE.split(line.strip())[1:-1])


def read_table(markdown: str, header: Sequence[str]) -> list[Row] | None:
    """The rows of the first table of ``markdown`` with this header, or None if there is none."""
    lines = markdown.splitlines()
    for at, line in enumerate(lines):
        if line.lstrip().startswith("|") and _cells(line) == tuple(header):
            rows = []
            for row in lines[at + 2 :]:
                if not row.lstrip().startswith("|"):
                    break
                rows.append(_cells(row))
            return rows
    return None


def _compare(where: str, what: str, documented: list[Row], expected: list[Row]) -> list[str]:
    have = {row[0]: row for row in documented}
    want = {row[0]: row for row in expected}
    problems = [f"{where}: {what} {key} has no row" for key in want if key not in have]
    problems += [
        f"{where}: documents {what} {key}, which is not one" for key in have if key not in want
    ]
    for key in (key for key in want if key in have):
        if have[key] != want[key]:
            problems.append(
                f"{where}: {what} {key} reads {have[key]}, the registry says {want[key]}"
            )
    shared = [key for key in have if key in want]
    if not problems and shared != [key for key in want if key in have]:
        problems.append(f"{where}: the {what} rows are not in the registry's order")
    return problems


def command_table_problems(markdown: str, commands: Registry, where: str) -> list[str]:
    """How the command table of ``markdown`` differs from the registry (empty: it agrees)."""
    documented = read_table(markdown, COMMAND_HEADER)
    if documented is None:
        return [f"{where}: no command table (header {' | '.join(COMMAND_HEADER)})"]
    return _compare(where, "command", documented, command_rows(commands))


def example_table_problems(markdown: str, commands: Registry, where: str) -> list[str]:
    """How the example table of ``markdown`` differs from the commands' examples."""
    documented = read_table(markdown, EXAMPLE_HEADER)
    if documented is None:
        return [f"{where}: no example table (header {' | '.join(EXAMPLE_HEADER)})"]
    return _compare(where, "example", documented, example_rows(commands))
