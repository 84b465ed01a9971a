"""The /bot command tables in README.md and docs/github.md agree with the registry: a command
without a row fails, and so does a row for a command that does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.commands.reference import (
    COMMAND_HEADER,
    EXAMPLE_HEADER,
    command_rows,
    command_table_problems,
    example_rows,
    example_table_problems,
    read_table,
    render_table,
)
from bot.commands.registry import registry
from tests.bot.commands.drop_in import dropped_in

ROOT = Path(__file__).resolve().parents[3]
DOCUMENTS = ["README.md", "docs/github.md"]


def _text(where: str) -> str:
    return (ROOT / where).read_text(encoding="utf-8")


@pytest.mark.parametrize("where", DOCUMENTS)
def test_the_command_table_agrees_with_the_registry(where):
    problems = command_table_problems(_text(where), registry(), where)
    table = render_table(COMMAND_HEADER, command_rows(registry()))
    assert problems == [], "\n".join([*problems, "the table, from the registry:", table])


def test_the_example_table_agrees_with_the_registry():
    problems = example_table_problems(_text("docs/github.md"), registry(), "docs/github.md")
    table = render_table(EXAMPLE_HEADER, example_rows(registry()))
    assert problems == [], "\n".join([*problems, "the table, from the registry:", table])


def test_a_new_command_without_a_row_fails(tmp_path):
    with dropped_in(tmp_path):
        assert command_table_problems(_text("README.md"), registry(), "README.md") == [
            "README.md: command `ping` has no row"
        ]
        assert example_table_problems(_text("docs/github.md"), registry(), "d") == [
            "d: example `/bot ping --times 2` has no row"
        ]


def test_a_row_for_a_command_that_does_not_exist_fails():
    rows = [
        *command_rows(registry()),
        ("`deploy`", "`/bot deploy`", "write", "repairbot's PRs", "ship it"),
    ]
    problems = command_table_problems(render_table(COMMAND_HEADER, rows), registry(), "doc")
    assert problems == ["doc: documents command `deploy`, which is not one"]


def test_a_row_with_the_wrong_usage_or_permission_fails():
    rows = command_rows(registry())
    rows[1] = (rows[1][0], "`/bot kill --now`", "anyone", *rows[1][3:])
    problems = command_table_problems(render_table(COMMAND_HEADER, rows), registry(), "doc")
    assert len(problems) == 1 and problems[0].startswith("doc: command `kill` reads")


def test_rows_out_of_order_fail():
    rows = command_rows(registry())
    problems = command_table_problems(render_table(COMMAND_HEADER, rows[::-1]), registry(), "doc")
    assert problems == ["doc: the command rows are not in the registry's order"]


def test_a_document_without_the_table_fails():
    assert command_table_problems("# nothing\n", registry(), "doc") == [
        "doc: no command table (header command | usage | who | on | what it does)"
    ]


def test_the_rendered_table_reads_back_with_pipes_escaped():
    rows = command_rows(registry())
    assert any("\\|" in row[1] for row in rows)  # run's usage has alternatives
    assert (
        read_table("text\n\n" + render_table(COMMAND_HEADER, rows) + "\n\nmore", COMMAND_HEADER)
        == rows
    )
