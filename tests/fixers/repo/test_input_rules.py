"""The rules for report metadata that reaches git, a broker or a web page, table-driven."""

from __future__ import annotations

import pytest

from fixers.repo.input_rules import http_url_problem, ref_problem, safe_name_problem


@pytest.mark.parametrize("ref", ["main", "release/v1.2", "origin/main", "refs/heads/x", "a-b_c.d"])
def test_plain_refs_pass(ref):
    assert ref_problem(ref) is None


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("--upload-pack=x", "starts with '-'"),
        ("-b", "starts with '-'"),
        ("a b", "space"),
        ("a\x00b", "control character"),
        ("a..b", "'..'"),
        ("a@{1}", "'@{'"),
        ("x^{commit}", "~^:?*["),
        ("a.lock", "not a valid git ref name"),
        ("/abs", "not a valid git ref name"),
        ("", "empty"),
        ("x" * 201, "longer than 200"),
    ],
)
def test_refs_git_would_misread_are_refused_with_the_reason(ref, why):
    assert why in (ref_problem(ref) or "")


@pytest.mark.parametrize("name", ["H100_PCIe", "gpu.any", "DGX_B200", "A10", "cpu"])
def test_queue_names_pass(name):
    assert safe_name_problem(name) is None


@pytest.mark.parametrize("name", ["", "-Q", ".hidden", "a/b", "../x", "a b", "x" * 65, "é"])
def test_names_that_are_not_queue_safe_are_refused(name):
    assert safe_name_problem(name) is not None


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://ci.example.com/job/1/", True),
        ("http://jenkins:8080/job/L0/7/", True),
        ("javascript:alert(1)", False),
        ("  JavaScript:alert(1)", False),
        ("data:text/html,x", False),
        ("//evil.example/x", False),
        ("/relative/path", False),
        ("https://", False),
        ("http://[::1", False),
    ],
)
def test_only_absolute_http_links(url, ok):
    assert (http_url_problem(url) is None) is ok
