"""``X-Hub-Signature-256``: HMAC-SHA256 of the raw body, compared in constant time."""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: bytes, body: bytes) -> str:
    """The header value GitHub would send for ``body``."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def is_valid(secret: bytes, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` under ``secret``."""
    if not header or not header.startswith(PREFIX) or not header.isascii():
        # compare_digest raises TypeError on non-ASCII text; such a header is simply wrong.
        return False
    return hmac.compare_digest(sign(secret, body), header.strip())
