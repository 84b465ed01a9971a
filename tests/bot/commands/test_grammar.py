"""The /bot grammar, table-driven: every form parses; hostile text is refused, never run."""

from __future__ import annotations

import pytest

from bot.commands.fix_pr.run import run_options
from bot.commands.grammar import CommandError, find_command, parse, plain_lines, prog_of
from bot.commands.registry import help_text, parser, registry

VALID = [
    ("/bot run", "run", {}),
    ("/bot run --reuse-test", "run", {"reuse_test": "latest"}),
    ("/bot run --reuse-test 1234", "run", {"reuse_test": 1234}),
    ("/bot run --disable-reuse-test", "run", {"disable_reuse_test": True}),
    ("/bot run --disable-fail-fast", "run", {"disable_fail_fast": True}),
    ("/bot run --skip-test", "run", {"skip_test": True}),
    (
        '/bot run --stage-list "A10-PyTorch-1, H100_PCIe-PyTorch-2"',
        "run",
        {"stage_list": ["A10-PyTorch-1", "H100_PCIe-PyTorch-2"]},
    ),
    ('/bot run --gpu-type "A30, H100_PCIe"', "run", {"gpu_type": ["A30", "H100_PCIe"]}),
    ('/bot run --test-backend "pytorch, cpp"', "run", {"test_backend": ["pytorch", "cpp"]}),
    ("/bot run --add-multi-gpu-test", "run", {"add_multi_gpu_test": True}),
    ("/bot run --only-multi-gpu-test", "run", {"only_multi_gpu_test": True}),
    ("/bot run --disable-multi-gpu-test", "run", {"disable_multi_gpu_test": True}),
    ("/bot run --post-merge", "run", {"post_merge": True}),
    (
        '/bot run --extra-stage "DGX_B200-4_GPUs-PyTorch-2"',
        "run",
        {"extra_stage": ["DGX_B200-4_GPUs-PyTorch-2"]},
    ),
    ("/bot run --detailed-log --debug", "run", {"detailed_log": True, "debug": True}),
    ("/bot kill", "kill", {}),
    (
        '/bot skip --comment "flaky infra, verified by hand"',
        "skip",
        {"comment": "flaky infra, verified by hand"},
    ),
    ("/bot skip --comment 'документация: 修正'", "skip", {"comment": "документация: 修正"}),
    ("/bot reuse-pipeline", "reuse-pipeline", {}),
]


@pytest.mark.parametrize(("line", "name", "expected"), VALID, ids=[v[0] for v in VALID])
def test_every_form_of_the_grammar_parses(line, name, expected):
    parsed = parse(line, parser())
    assert parsed.name == name
    set_options = {k: v for k, v in parsed.options.items() if v not in (None, False)}
    assert set_options == expected


@pytest.mark.parametrize(
    ("line", "help_for"),
    [
        ("/bot", None),
        ("/bot help", None),
        ("/bot -h", None),
        ("/bot --help", None),
        ("/bot run -h", "run"),
        ("/bot skip --help", "skip"),
        ("/bot help kill", "kill"),
    ],
)
def test_help_forms(line, help_for):
    parsed = parse(line, parser())
    assert (parsed.name, parsed.help_for) == ("help", help_for)
    text = help_text(help_for)
    assert ("--stage-list" in text) == (help_for == "run")
    if help_for is None:
        assert all(f"/bot {spec.name}" in text for spec in registry().subcommands())


INVALID = [
    ('/bot run --stage-list "$(rm -rf /)"', "invalid stage '$(rm -rf /)'"),
    ("/bot run --stage-list `reboot`", "invalid stage '`reboot`'"),
    ("/bot run --gpu-type 'H100; rm -rf ~'", "invalid GPU type"),
    ('/bot run --stage-list "A10-PyTorch-1" "; ls"', "unrecognized arguments"),
    ("/bot run --stage", "unrecognized arguments"),  # no abbreviations
    ("/bot skip", "the following arguments are required: --comment"),
    ('/bot skip --comment "   "', "the reason must not be empty"),
    ('/bot run --stage-list "unbalanced', "unbalanced quotes"),
    ("/bot deploy", "invalid choice: 'deploy'"),
    ("/bot run --reuse-test 12 --disable-reuse-test", "not allowed with argument"),
    ("/bot run --add-multi-gpu-test --only-multi-gpu-test", "not allowed with argument"),
    ("/bot run --reuse-test 1e9", "pipeline id must be a number"),
    ("/bot run \u2014stage-list A10", "unrecognized arguments"),  # an em-dash, not --
    ("/bot run --stage-list A10\u202e-PyTorch", "U+202E"),  # right-to-left override
    ("/bot run --stage-list A10\u200b", "U+200B"),  # zero-width space
    ("/bot run --stage-list A10\x00", "U+0000"),
    ("/bot run --stage-list \uff2110-PyTorch-1", "invalid stage"),  # full-width letter
    ("/bot run " + "--debug " * 1300, "at most 1000 are read"),  # 10 KB of options
    ("/bot run --stage-list " + ",".join(["A10-PyTorch-1"] * 60), "at most 50 stages"),
]


@pytest.mark.parametrize(("line", "message"), INVALID, ids=[i[0][:40] for i in INVALID])
def test_hostile_or_bad_commands_are_refused_with_the_reason_and_usage(line, message):
    with pytest.raises(CommandError) as refused:
        parse(line, parser())
    assert message in str(refused.value)
    assert refused.value.usage.startswith("usage: /bot")


def test_the_command_is_the_first_bot_line_of_the_comment():
    assert find_command("LGTM\n  /bot run --debug  \n/bot kill") == "/bot run --debug"
    assert find_command("please /bot run") is None
    assert find_command("/botany is fun") is None
    assert find_command("/bot") == "/bot"


@pytest.mark.parametrize(
    "body",
    [
        "I would run this:\n```\n/repairbot apply-fix\n```",
        "~~~~text\n```\n/repairbot apply-fix\n~~~\n```\n~~~~",  # fences of other kinds inside
        "```\n/repairbot apply-fix",  # a fence left open runs to the end of the comment
        "> /repairbot apply-fix\n>\n> said someone",
        "   > /repairbot apply-fix",
        "Before:\n\n    /repairbot apply-fix",
        "\t/repairbot apply-fix",
        "<!--\n/repairbot apply-fix\n-->",
        "<!-- /repairbot apply-fix -->",
    ],
)
def test_commands_in_code_blocks_quotes_or_comments_are_not_commands(body):
    assert find_command(body, ("/bot", "/repairbot")) is None


def test_a_command_after_a_closed_block_or_a_comment_is_one():
    after_fence = "```\n/repairbot apply-fix\n```\n/bot run"
    assert find_command(after_fence, ("/bot", "/repairbot")) == "/bot run"
    after_comment = "<!-- hidden\n-->\n   /bot kill"  # up to three spaces: still plain text
    assert find_command(after_comment) == "/bot kill"
    inline = "```python x```\n/bot run"  # backticks in the info string: inline code, not a fence
    assert find_command(inline) == "/bot run"
    assert list(plain_lines("a\n```\nb\n```\n> c\nd")) == ["a", "d"]


def test_run_options_map_to_the_verification_request():
    parsed = parse(
        '/bot run --stage-list "H100_PCIe-PyTorch-1" --only-multi-gpu-test --reuse-test 7 --debug',
        parser(),
    )
    assert run_options(parsed.options) == {
        "stage_list": ["H100_PCIe-PyTorch-1"],
        "reuse_test": 7,
        "multi_gpu": "only",
        "debug": True,
    }


def test_a_command_line_is_found_under_any_of_the_prefixes_asked_for():
    body = "thanks!\n/repairbotx no\n/repairbot apply-fix\n/bot run"
    assert find_command(body) == "/bot run"
    assert find_command(body, ("/bot", "/repairbot")) == "/repairbot apply-fix"
    assert find_command(body, ("/rb",)) is None
    assert prog_of("/repairbot", ("/bot", "/repairbot")) == "/repairbot"
    assert prog_of("/repairbot\tapply-fix", ("/repairbot",)) == "/repairbot"


@pytest.mark.parametrize(
    ("line", "message", "usage"),
    [
        ("/bot apply-fix", "invalid choice: 'apply-fix'", "usage: /bot"),
        ("/repairbot run", "invalid choice: 'run'", "usage: /repairbot"),
        ("/repairbot apply-fix --force", "unrecognized arguments: --force", "usage: /repairbot"),
    ],
)
def test_each_prefix_has_only_its_own_commands(line, message, usage):
    with pytest.raises(CommandError) as refused:
        registry().parse(line)
    assert message in str(refused.value)
    assert refused.value.usage.startswith(usage)
