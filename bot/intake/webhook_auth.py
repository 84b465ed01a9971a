"""``X-Hub-Signature-256``: HMAC-SHA256 of the raw body, compared in constant time; and the plain
shared tokens other CIs send (GitLab's ``X-Gitlab-Token``, Buildkite's ``X-Buildkite-Token``)."""

from __future__ import annotations

import hashlib
import hmac
import re

PREFIX = "sha256="
_WELL_FORMED = re.compile(r"sha256=[0-9a-fA-F]{64}")


def sign(secret: bytes, body: bytes) -> str:
    """The header value GitHub would send for ``body``."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def is_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` under ``secret``."""
    if not header or not header.startswith(PREFIX) or not header.isascii():
        # compare_digest raises TypeError on non-ASCII text; such a header is simply wrong.
        return False
    return hmac.compare_digest(sign(secret, body), header.strip())


def could_be_valid(header: str | None) -> bool:
    """Whether ``header`` has a signature's shape (``sha256=`` and 64 hex digits): one that
    cannot match any body is refused before the body is read."""
    return header is not None and _WELL_FORMED.fullmatch(header.strip()) is not None


def token_matches(expected: str, given: str | None) -> bool:
    """Whether ``given`` is the webhook's token (constant time, whatever bytes it holds)."""
    if given is None:
        return False
    return hmac.compare_digest(expected.encode(), given.encode("utf-8", "surrogateescape"))
