"""``.repairbot.toml``'s policy keys: each valid shape read as written, each invalid one an error
naming the key, with that key's default kept (the rest of the file still counts)."""

from __future__ import annotations

import pytest

from fixers.repo.policy import (
    DEFAULT_AUTONOMY,
    Autonomy,
    RepoPolicy,
    known_signatures,
    parse_policy,
)


def test_no_policy_keys_is_every_default():
    policy = parse_policy('python = "3.10"\n[[contract]]\nbase = "RunnerBase"\n')
    assert policy == RepoPolicy()
    assert policy.enabled and policy.opt_out_paths == () and not policy.errors
    assert policy.mode_for("contract-forward-override") is Autonomy.PR_VERIFY is DEFAULT_AUTONOMY


def test_every_key_read_as_written():
    policy = parse_policy(
        "[repairbot]\n"
        "enabled = true\n"
        'opt_out_paths = ["legacy/**", "./vendor/*.py"]\n'
        "[autonomy]\n"
        'default = "pr"\n'
        "[autonomy.signatures]\n"
        '"contract-forward-override" = "report"\n'
        '"abstract-method-missing" = "suggest"\n'
        '"abstract-class-instantiation" = "pr+verify"\n',
        source=".repairbot.toml on main at abc",
    )
    assert policy.errors == ()
    assert policy.opt_out_paths == ("legacy/**", "vendor/*.py")
    assert [
        policy.mode_for(s) for s in ("contract-forward-override", "abstract-method-missing")
    ] == [
        Autonomy.REPORT,
        Autonomy.SUGGEST,
    ]
    assert policy.mode_for("abstract-class-instantiation") is Autonomy.PR_VERIFY
    assert policy.mode_for("cuda-out-of-memory") is Autonomy.PR  # the default
    assert policy.why("contract-forward-override") == (
        'autonomy "report" for contract-forward-override ([autonomy.signatures] in '
        ".repairbot.toml on main at abc)"
    )
    assert policy.why("cuda-out-of-memory") == (
        'autonomy "pr" ([autonomy] default in .repairbot.toml on main at abc)'
    )


def test_the_repository_switch():
    assert parse_policy("[repairbot]\nenabled = false\n").enabled is False


@pytest.mark.parametrize(
    ("path", "opted_out"),
    [
        ("legacy/a.py", True),
        ("legacy/deep/b.py", True),
        ("src/legacy/a.py", False),
        ("vendor/x.py", True),
        ("vendor/x.pyi", False),
        ("tests/test_a.py", False),
    ],
)
def test_opt_out_paths_are_fnmatch_patterns(path, opted_out):
    policy = parse_policy('[repairbot]\nopt_out_paths = ["legacy/**", "vendor/*.py"]\n')
    assert policy.opted_out(path) is opted_out


INVALID = [
    ("not toml [", "not valid TOML"),
    ('repairbot = "off"\n', "repairbot: must be a table"),
    ('[repairbot]\nenabled = "no"\n', "repairbot.enabled: must be true or false, got 'no'"),
    ("[repairbot]\nenable = false\n", "repairbot.enable: unknown key (did you mean 'enabled'?)"),
    ('[repairbot]\nopt_out_paths = "legacy/**"\n', "repairbot.opt_out_paths: must be a list"),
    ('[repairbot]\nopt_out_paths = [""]\n', "opt_out_paths must be a list of patterns"),
    ("[repairbot]\nopt_out_paths = [1]\n", "repairbot.opt_out_paths[1]: must be a string"),
    ('[repairbot]\nopt_out_paths = ["' + "a" * 301 + '"]\n', "at most 200 patterns"),
    ('autonomy = "report"\n', "autonomy: must be a table"),
    ('[autonomy]\ndefault = "yolo"\n', "autonomy.default: must be one of"),
    ("[autonomy]\ndefault = 3\n", "autonomy.default: must be one of"),
    ('[autonomy]\nmode = "pr"\n', "autonomy.mode: unknown key"),
    ('[autonomy]\nsignatures = "report"\n', "autonomy.signatures: must be a table"),
    ('[autonomy.signatures]\n"no-such-signature" = "report"\n', "unknown signature"),
    ('[autonomy.signatures]\n"contract-forward-override" = "merge"\n', "must be one of"),
]


@pytest.mark.parametrize(("text", "error"), INVALID, ids=[e for _, e in INVALID])
def test_each_invalid_shape_is_an_error_and_the_default(text, error):
    policy = parse_policy(text)
    assert len(policy.errors) == 1 and error in policy.errors[0], policy.errors
    assert policy.errors[0].startswith(".repairbot.toml")
    assert policy.enabled and policy.opt_out_paths == ()
    assert policy.mode_for("contract-forward-override") is DEFAULT_AUTONOMY


def test_a_bad_key_keeps_the_good_ones():
    policy = parse_policy(
        '[repairbot]\nenabled = 1\nopt_out_paths = ["old/**"]\n'
        '[autonomy]\ndefault = "suggest"\n[autonomy.signatures]\n'
        '"typo" = "report"\n"contract-forward-override" = "report"\n'
    )
    assert len(policy.errors) == 2
    assert policy.enabled and policy.opt_out_paths == ("old/**",)
    assert policy.default is Autonomy.SUGGEST
    assert policy.signatures == {"contract-forward-override": Autonomy.REPORT}


def test_the_unclassified_signature_may_be_named():
    assert "unclassified" in known_signatures()
    assert "contract-forward-override" in known_signatures()


def test_arrays_nested_thousands_deep_are_an_error_not_a_crash() -> None:
    # tomllib parses arrays recursively: a hostile file nesting 5,000 deep raises RecursionError.
    policy = parse_policy("a = " + "[" * 5000 + "]" * 5000)
    assert policy.errors and "not valid TOML" in policy.errors[0]
    defaults = parse_policy("")
    assert (policy.enabled, policy.default, policy.signatures, policy.opt_out_paths) == (
        defaults.enabled,
        defaults.default,
        defaults.signatures,
        defaults.opt_out_paths,
    )
