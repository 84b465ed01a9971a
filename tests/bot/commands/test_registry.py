"""The registry: each module of bot.commands with a COMMAND is a command, and one new file
(plus its test) is all a new command needs — it parses, is listed and is documented or fails."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from bot.commands.grammar import HELP_FLAGS, ParsedCommand, no_options
from bot.commands.registry import (
    CommandSpec,
    Permission,
    Registry,
    Scope,
    discover,
    help_text,
    parser,
    registry,
)
from tests.bot.commands.drop_in import PING, dropped_in

ROOT = Path(__file__).resolve().parents[3]


def _reply(ctx, parsed):
    return "ok"


def test_discovery_finds_every_command_module_in_order():
    assert registry().names == (
        "run",
        "kill",
        "skip",
        "reuse-pipeline",
        "apply-fix",
        "unsuppress",
        "opt-out",
        "opt-in",
        "help",
    )
    assert discover() is registry() is discover("bot.commands")  # the default package, cached


def test_the_usage_line_lists_the_argparse_subcommands_as_before():
    assert parser().format_usage().strip() == "usage: /bot [-h] {run,kill,skip,reuse-pipeline} ..."
    assert [spec.name for spec in registry().subcommands()] == [
        "run",
        "kill",
        "skip",
        "reuse-pipeline",
    ]


def test_who_may_use_each_command_is_declared_by_its_spec():
    who = {spec.name: (spec.permission, spec.needs_open_pr, spec.outcome) for spec in registry()}
    assert who == {
        "run": (Permission.WRITE, True, "accepted"),
        "kill": (Permission.WRITE, True, "accepted"),
        "skip": (Permission.WRITE, True, "accepted"),
        "reuse-pipeline": (Permission.WRITE, True, "accepted"),
        "apply-fix": (Permission.WRITE, False, "queued"),
        "unsuppress": (Permission.WRITE, False, "accepted"),
        "opt-out": (Permission.AUTHOR, False, "accepted"),
        "opt-in": (Permission.AUTHOR, False, "accepted"),
        "help": (Permission.ANYONE, False, "help"),
    }


def _options(spec: CommandSpec) -> set[str]:
    if spec.configure is None:
        return set()
    child = argparse.ArgumentParser(add_help=False)
    spec.configure(child)
    return {flag for action in child._actions for flag in action.option_strings}


@pytest.mark.parametrize("spec", list(registry()), ids=lambda spec: spec.name)
def test_the_usage_line_names_exactly_the_options_of_the_grammar(spec):
    assert set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", spec.usage)) - set(HELP_FLAGS) == _options(
        spec
    )


EXAMPLES = [(spec.name, example.line) for spec in registry() for example in spec.examples]


@pytest.mark.parametrize(("name", "line"), EXAMPLES, ids=[e[1] for e in EXAMPLES])
def test_every_example_parses_to_its_command(name, line):
    assert registry().parse(line).name == name


def test_every_command_has_an_example():
    assert [spec.name for spec in registry() if not spec.examples] == []


def test_no_module_imports_the_commands_for_their_side_effects():
    side_effects = re.compile(r"^\s*import bot\.commands\.\w+\s+# noqa: F401", re.MULTILINE)
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("bot", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if side_effects.search(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert offenders == []


def test_a_new_module_is_discovered_parsed_listed_and_given_help(tmp_path):
    with dropped_in(tmp_path):
        commands = registry()
        assert commands.names == (
            "run",
            "kill",
            "skip",
            "reuse-pipeline",
            "ping",
            "apply-fix",
            "unsuppress",
            "opt-out",
            "opt-in",
            "help",
        )
        assert commands.parse("/bot ping --times 2") == ParsedCommand("ping", {"times": 2})
        assert commands.parse("/bot ping -h") == ParsedCommand("help", help_for="ping")
        assert "{run,kill,skip,reuse-pipeline,ping}" in help_text()
        assert "- `/bot ping`: answer pong" in help_text()
        assert "--times TIMES  how many pongs" in help_text("ping")
    assert "ping" not in registry()


def test_a_command_declared_twice_is_refused(tmp_path):
    twin = PING.replace('"ping"', '"kill"').replace("/bot ping", "/bot kill")
    with dropped_in(tmp_path, twin), pytest.raises(ValueError, match="/bot kill is declared twice"):
        registry()


def test_a_command_constant_that_is_not_a_spec_is_refused(tmp_path):
    with dropped_in(tmp_path, "COMMAND = 'ping'\n"), pytest.raises(TypeError, match="is a str"):
        registry()


def test_a_module_without_a_command_constant_is_not_a_command(tmp_path):
    with dropped_in(tmp_path, "HELPER = 1\n", name="shared_helpers"):
        assert registry().names == (
            "run",
            "kill",
            "skip",
            "reuse-pipeline",
            "apply-fix",
            "unsuppress",
            "opt-out",
            "opt-in",
            "help",
        )


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "Deploy"}, "not a command name"),
        ({"configure": None}, "neither options"),
        ({"usage": "/bot other"}, "must start with its name"),
    ],
)
def test_a_malformed_spec_is_refused_when_declared(fields, message):
    declared = {
        "name": "deploy",
        "summary": "s",
        "usage": "/bot deploy",
        "permission": Permission.WRITE,
        "handle": _reply,
        "configure": no_options,
    }
    with pytest.raises(ValueError, match=message):
        CommandSpec(**{**declared, **fields})


def test_a_registry_can_be_built_from_any_specs():
    only = Registry(
        [CommandSpec("deploy", "ship it", "/bot deploy", Permission.WRITE, _reply, no_options)]
    )
    assert only.parser().format_usage().strip() == "usage: /bot [-h] {deploy} ..."
    assert only.parse("/bot deploy") == ParsedCommand("deploy", {})
    assert "- `/bot deploy`: ship it" in only.help_text()


def test_each_scope_has_its_prefix_its_parser_and_its_help():
    commands = registry()
    assert [spec.name for spec in commands.in_scope(Scope.ANY_PR)] == [
        "apply-fix",
        "unsuppress",
        "opt-out",
        "opt-in",
        "help",
    ]
    assert commands.parser(Scope.ANY_PR).format_usage().strip() == (
        "usage: /repairbot [-h] {apply-fix,unsuppress,opt-out,opt-in} ..."
    )
    assert commands.parser(Scope.ANY_PR, "/rb").format_usage().startswith("usage: /rb [-h]")
    assert commands.parse("/rb apply-fix", prefix="/rb") == ParsedCommand(
        "apply-fix", {"confirm_fork": None}
    )
    assert commands.parse("/repairbot") == ParsedCommand("help")
    listing = help_text(scope=Scope.ANY_PR)
    assert "- `/repairbot apply-fix`: " in listing and "/bot run" not in listing
    assert "`/repairbot help` lists repairbot's own commands" in help_text()
    assert commands.help_text(scope=Scope.ANY_PR, prefix="/rb").startswith("```\nusage: /rb")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"scopes": ()}, "read nowhere"),
        ({"scopes": (Scope.ANY_PR,)}, "usage of /repairbot deploy must start with its name"),
    ],
)
def test_a_spec_must_be_read_somewhere_under_its_own_prefix(fields, message):
    declared = {
        "name": "deploy",
        "summary": "s",
        "usage": "/bot deploy",
        "permission": Permission.WRITE,
        "handle": _reply,
        "configure": no_options,
    }
    with pytest.raises(ValueError, match=message):
        CommandSpec(**{**declared, **fields})
