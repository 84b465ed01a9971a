"""Buildkite's webhook signature and token checks (pure), against an independent HMAC (openssl)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from bot.intake.buildkite_auth import (
    Signature,
    digest,
    parse_signature,
    replay_problem,
    sign,
    signature_matches,
)
from bot.intake.webhook_auth import token_matches

SECRET = b"buildkite-webhook-token-for-tests-0123"
BODY = b'{"event":"job.finished","job":{"id":"0190"}}'


def _openssl(secret: bytes, message: bytes) -> str:
    openssl = shutil.which("openssl")
    assert openssl is not None, "openssl is part of the base system here"
    out = subprocess.run(
        [openssl, "dgst", "-sha256", "-hmac", secret.decode()],
        input=message,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return out.rsplit("= ", 1)[1].strip()


def test_the_signature_is_the_hmac_of_timestamp_dot_body_as_buildkite_documents():
    expected = _openssl(SECRET, b"1785408900." + BODY)
    assert digest(SECRET, 1785408900, BODY) == expected
    assert sign(SECRET, 1785408900, BODY) == f"timestamp=1785408900,signature={expected}"


def test_a_signature_matches_its_body_and_secret_only():
    signature = parse_signature(sign(SECRET, 1785408900, BODY))
    assert signature == Signature(1785408900, digest(SECRET, 1785408900, BODY))
    assert signature_matches(SECRET, signature, BODY)
    assert not signature_matches(SECRET, signature, BODY + b" ")
    assert not signature_matches(b"another-secret", signature, BODY)
    # The timestamp is signed too: moved, it no longer matches.
    moved = Signature(signature.timestamp + 1, signature.digest)
    assert not signature_matches(SECRET, moved, BODY)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=" + "0" * 64,
        "timestamp=1785408900",
        "timestamp=abc,signature=" + "0" * 64,
        "timestamp=1785408900,signature=" + "0" * 63,
        "timestamp=1785408900,signature=" + "G" * 64,
        "signature=" + "0" * 64 + ",timestamp=1785408900",
        "timestamp=1785408900,signature=" + "0" * 64 + ",extra=1",
        "timestamp=1785408900,signature=" + "é" * 64,
        "timestamp=" + "9" * 13 + ",signature=" + "0" * 64,
    ],
)
def test_headers_without_the_documented_shape_are_refused_before_any_hmac(header):
    assert parse_signature(header) is None


def test_the_documented_shape_is_read_with_spaces_around_it():
    header = " timestamp=1619071700, signature=" + "a" * 64 + " "
    assert parse_signature(header) == Signature(1619071700, "a" * 64)


@pytest.mark.parametrize(
    ("age_s", "problem"),
    [
        (0, None),
        (299, None),
        (-299, None),
        (301, "301s old, over the 300s replay window"),
        (86_400 * 365, "old, over the 300s replay window"),
        (-301, "301s ahead of this server's clock"),
    ],
)
def test_the_replay_window_takes_neither_old_nor_future_timestamps(age_s, problem):
    now = 1_785_408_900.0
    found = replay_problem(Signature(int(now - age_s), "0" * 64), now=now, max_age_s=300)
    assert found == problem or (problem is not None and found is not None and problem in found)


@pytest.mark.parametrize(
    ("given", "ok"),
    [
        ("buildkite-webhook-token-for-tests-0123", True),
        ("buildkite-webhook-token-for-tests-012", False),
        ("buildkite-webhook-token-for-tests-01234", False),
        ("", False),
        (None, False),
        ("bùildkite-webhook-token-for-tests-0123", False),
        ("\udcff" * 10, False),  # bytes no text decodes, as a header may carry them
    ],
)
def test_the_plain_token_is_compared_whole(given, ok):
    assert token_matches(SECRET.decode(), given) is ok
