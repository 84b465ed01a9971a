"""The signature data file: every example is a test, and malformed files are refused clearly."""

from __future__ import annotations

import pytest

from fixers.classify.signatures import (
    SignatureError,
    builtin_signatures,
    known_fixers,
    parse_signatures,
)

EXAMPLES = [
    pytest.param(signature, example, id=f"{signature.id}-{index}")
    for signature in builtin_signatures()
    for index, example in enumerate(signature.examples)
]


@pytest.mark.parametrize(("signature", "example"), EXAMPLES)
def test_every_example_matches_with_its_captures(signature, example):
    match = signature.search(example.text)
    assert match is not None, f"{signature.id} does not match its own example"
    captured = {k: v for k, v in match.groupdict().items() if k in example.captures}
    assert captured == dict(example.captures)


@pytest.mark.parametrize(("signature", "example"), EXAMPLES)
def test_no_earlier_signature_steals_an_example(signature, example):
    ordered = builtin_signatures()
    first = next(s for s in ordered if s.search(example.text))
    assert first.id == signature.id


def test_contract_and_abstract_signatures_map_to_fixers():
    by_id = {s.id: s for s in builtin_signatures()}
    assert by_id["contract-forward-override"].fixer
    assert by_id["abstract-method-missing"].fixer
    assert by_id["cuda-out-of-memory"].fixer is None


@pytest.mark.parametrize(
    ("document", "complaint"),
    [
        ("not toml [[[", "not valid TOML"),
        ("", "at least one"),
        (
            '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "(unclosed"',
            "does not compile",
        ),
        ('[[signature]]\nid = "x"\nexception = "E"\npattern = "a"', "'anchor' must be"),
        (
            '[[signature]]\nid = "x"\nexception = "E"\nanchor = "zz"\npattern = "a"\n'
            '[[signature.example]]\ntext = "a"',
            "anchor 'zz' is missing",
        ),
        (
            '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a"\n'
            '[[signature.example]]\ntext = "a"\ncaptures = { nope = "a" }',
            "unknown groups ['nope']",
        ),
        (
            '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a"\n'
            '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a"\n',
            "unique",
        ),
        ('[[signature]]\nid = "x"\nanchor = "a"\npattern = "a"\nscan = "no"', "'scan' must be"),
        ('[[signature]]\nid = "x"\nanchor = "a"\npattern = "a"', "'exception' must be"),
    ],
)
def test_malformed_signature_files_are_refused_with_the_reason(document, complaint):
    with pytest.raises(SignatureError, match=None) as raised:
        parse_signatures(document)
    assert complaint in str(raised.value)


@pytest.mark.parametrize(
    ("text", "signature", "fixer"),
    [
        (
            "TypeError: Can't instantiate abstract class _Worker without an implementation for "
            "abstract methods 'max_draft_len', '_forward_impl'",
            "abstract-method-missing",
            "add-hook-stub",
        ),
        (
            "TypeError: Can't instantiate abstract class FLALayer without an implementation for "
            "abstract method 'get_max_length'",
            "abstract-class-instantiation",
            "learn-migration",
        ),
        (
            "TypeError: Can't instantiate abstract class Impl with abstract method _forward_impl_v2",
            "abstract-class-instantiation",
            "learn-migration",
        ),
    ],
)
def test_the_abstract_class_signature_is_the_contracts_only_when_its_hook_is_missing(
    text, signature, fixer
):
    first = next(s for s in builtin_signatures() if s.search(text))
    assert (first.id, first.fixer) == (signature, fixer)


SIGNATURE = '[[signature]]\nid = "sig-x"\nexception = "E"\nanchor = "a"\npattern = "a"\n'


def test_every_builtin_fixer_is_a_registered_codemod():
    fixers = {s.fixer for s in builtin_signatures() if s.fixer is not None}
    assert fixers and fixers <= set(known_fixers())


def test_a_signature_naming_a_registered_fixer_loads():
    (signature,) = parse_signatures(SIGNATURE + 'fixer = "add-hook-stub"\n')
    assert signature.fixer == "add-hook-stub"


def test_an_unknown_fixer_is_refused_naming_the_signature_the_value_and_the_known_fixers():
    with pytest.raises(SignatureError) as raised:
        parse_signatures(SIGNATURE + 'fixer = "rename-forbiden-override"\n')
    message = str(raised.value)
    assert "signature #1 (sig-x)" in message
    assert "unknown fixer 'rename-forbiden-override'" in message
    assert all(fixer in message for fixer in known_fixers())
    assert "rename-forbidden-override" in message


def test_a_fixer_must_be_a_string():
    with pytest.raises(SignatureError, match="'fixer' must be a string"):
        parse_signatures(SIGNATURE + "fixer = 3\n")


def test_requires_hook_must_name_a_group():
    document = (
        '[[signature]]\nid = "x"\nexception = "E"\nanchor = "a"\npattern = "a(?P<m>b)"\n'
        'requires_hook = "methods"'
    )
    with pytest.raises(SignatureError, match="'requires_hook' must name a group"):
        parse_signatures(document)


def test_contract_breaks_to_learn_are_one_finding_per_root_cause_whatever_class_fails():
    from fixers.classify.failures import Failure
    from fixers.classify.root_causes import classify_failures

    def abstract(cls: str, method: str) -> str:
        return (
            f"TypeError: Can't instantiate abstract class {cls} without an implementation "
            f"for abstract method '{method}'"
        )

    failures = [
        Failure(test_id="tests/test_b.py::test_rail", error_text=abstract("RailCarrier", "ship")),
        Failure(test_id="tests/test_a.py::test_fake", error_text=abstract("FakeCarrier", "ship")),
        Failure(test_id="tests/test_c.py::test_rail", error_text=abstract("RailCarrier", "load")),
    ]
    ship, load = sorted(classify_failures(failures), key=lambda f: f.missing_methods)[::-1]
    assert ship.missing_methods == ("ship",) and load.missing_methods == ("load",)
    # One root cause: the tests of both classes; the class and message of the first test.
    assert ship.tests == ["tests/test_a.py::test_fake", "tests/test_b.py::test_rail"]
    assert ship.class_name == "FakeCarrier" and "FakeCarrier" in ship.message
    assert load.tests == ["tests/test_c.py::test_rail"]


def test_job_signatures_are_never_scanned_and_never_a_tests():
    from fixers.classify.failures import Failure
    from fixers.classify.root_causes import classify_failures

    (job,) = parse_signatures(
        '[[signature]]\nid = "lint"\nanchor = ".py"\nscan = false\n'
        'pattern = "(?m)^[a-z/]+\\\\.py:[0-9]+:[0-9]+: [A-Z][0-9]+"'
    )
    assert job.scan is False and job.exception is None
    line = "pkg/a.py:1:1: F401 'os' imported but unused"
    (for_the_job,) = classify_failures([Failure(None, line)], signatures=[job])
    (for_a_test,) = classify_failures([Failure("tests/test_a.py::t", line)], signatures=[job])
    assert (for_the_job.signature, for_the_job.kind) == ("lint", "job")
    assert (for_a_test.signature, for_a_test.kind) == ("unclassified", "test")
