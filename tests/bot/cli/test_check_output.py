"""Escaping for ``repairbot check``'s output: GitHub workflow commands and plain lines."""

from __future__ import annotations

from bot.cli.check_output import command_data, command_property, visible, workflow_command


def test_data_escapes_percent_and_line_breaks_only() -> None:
    assert command_data("50% done\r\nnext: a,b") == "50%25 done%0D%0Anext: a,b"


def test_properties_also_escape_colon_and_comma() -> None:
    assert command_property("a,b:c%d\ne") == "a%2Cb%3Ac%25d%0Ae"


def test_percent_is_escaped_first_so_escapes_are_not_doubled_or_forged() -> None:
    # A name that already looks like an escape must come back as itself, not as a comma.
    assert command_property("x%2Cy") == "x%252Cy"


def test_a_hostile_file_name_cannot_add_a_property_or_end_the_command() -> None:
    line = workflow_command("error", "w,line=1::x.py", 7, "repairbot forbidden-override", "m::n")
    assert line == (
        "::error file=w%2Cline=1%3A%3Ax.py,line=7,title=repairbot forbidden-override::m::n"
    )
    props, message = line.removeprefix("::error ").split("::", 1)
    assert [p.split("=", 1)[0] for p in props.split(",")] == ["file", "line", "title"]
    assert message == "m::n"


def test_visible_shows_control_characters_as_escapes() -> None:
    assert visible("a\nb\x1b[31mc\x7f") == "a\\x0ab\\x1b[31mc\\x7f"
    assert visible("plain: é ü [red]x[/red]") == "plain: é ü [red]x[/red]"
