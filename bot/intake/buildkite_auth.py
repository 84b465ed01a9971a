"""Buildkite's two webhook authentications, both compared in constant time.

A webhook sends its token either as it is, in ``X-Buildkite-Token``, or as the key of an
HMAC-SHA256 in ``X-Buildkite-Signature: timestamp=<unix seconds>,signature=<64 hex digits>``,
whose message is ``<timestamp>.<raw body>``. The timestamp is when Buildkite sent the request,
and it is signed: one outside the replay window (older than it, or as far ahead of our clock)
is refused, so a captured delivery cannot be replayed later. Everything that can be checked
without the body (the header's shape, the timestamp, the plain token) is checked before the
body is read.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from dataclasses import dataclass

_SIGNATURE = re.compile(
    r"timestamp=(?P<timestamp>\d{1,12}),\s*signature=(?P<signature>[0-9a-f]{64})"
)


@dataclass(frozen=True)
class Signature:
    """A well-formed ``X-Buildkite-Signature``: when it was made, and the hex digest."""

    timestamp: int
    digest: str


def parse_signature(header: str | None) -> Signature | None:
    """The header's timestamp and digest; None when it has not exactly that shape."""
    if header is None:
        return None
    match = _SIGNATURE.fullmatch(header.strip())
    if match is None:
        return None
    return Signature(int(match["timestamp"]), match["signature"])


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The ``X-Buildkite-Signature`` value Buildkite would send for ``body`` at ``timestamp``."""
    return f"timestamp={timestamp},signature={digest(secret, timestamp, body)}"


def digest(secret: bytes, timestamp: int, body: bytes) -> str:
    """HMAC-SHA256 of ``<timestamp>.<body>`` under ``secret``, in hex."""
    return hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def replay_problem(signature: Signature, *, now: float, max_age_s: float) -> str | None:
    """Why the signature's timestamp is outside the replay window, or None when it is inside."""
    age = now - signature.timestamp
    if age > max_age_s:
        return f"the signature is {age:.0f}s old, over the {max_age_s:.0f}s replay window"
    if -age > max_age_s:
        return f"the signature's timestamp is {-age:.0f}s ahead of this server's clock"
    return None


def signature_matches(secret: bytes, signature: Signature, body: bytes) -> bool:
    """Whether ``signature`` was made with ``secret`` over ``body`` (constant time)."""
    return hmac.compare_digest(digest(secret, signature.timestamp, body), signature.digest)
