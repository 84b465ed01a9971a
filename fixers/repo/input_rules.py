"""Rules for the metadata fields of a CI report that later reach git, a broker or a web page.

Every rule is a pure function answering "what is wrong with this value" (None: nothing), so the
HTTP API (query parameters) and the failure-analysis document (JSON fields) refuse the same
values with the same words, and the code further down (``bot.git``, the verification
queues) can check again without re-stating the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator

# Columns holding these numbers are SQL INTEGER (32-bit on PostgreSQL): a larger value would
# reach the database driver and fail there as a 500 instead of being refused here.
MAX_SQL_INT = 2**31 - 1

# A queue name or a GPU type becomes part of a broker queue name and of a file name in the
# filesystem broker: letters, digits, and ``_.-`` only, never leading with ``-`` or ``.``.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")

_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
MAX_REF_LENGTH = 200


def ref_problem(ref: str) -> str | None:
    """Why ``ref`` is not a plain git ref name we will pass to git (None: it is fine).

    A subset of ``git check-ref-format``, plus the rule that matters most here: a value starting
    with ``-`` would be read by git as an option (``--upload-pack=...``).
    """
    if not ref:
        return "is empty"
    if len(ref) > MAX_REF_LENGTH:
        return f"is longer than {MAX_REF_LENGTH} characters"
    if ref.startswith("-"):
        return "starts with '-' (git would read it as an option)"
    if _REF_FORBIDDEN.search(ref):
        return "contains a space, a control character or one of ~^:?*[\\"
    if ".." in ref or "@{" in ref or "//" in ref:
        return "contains '..', '@{' or '//'"
    if ref.endswith((".", "/", ".lock")) or ref.startswith("/") or ref == "@":
        return "is not a valid git ref name"
    return None


# Characters that would break a path or a test id out of the line it is shown on, or make it
# display as something else: C0/C1 controls (newlines, escapes), line and paragraph separators,
# and the bidirectional overrides ("Trojan Source").
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def control_character_problem(text: str) -> str | None:
    r"""Why ``text`` (a path, a test id) cannot be shown or used as one line (None: it can).

    >>> control_character_problem("tests/test_a.py::test_b[x-y]") is None
    True
    >>> control_character_problem("a.py\nRepairbot-Invocation: 1")
    'contains the control character U+000A at position 5'
    """
    found = _INVISIBLE.search(text)
    if found is None:
        return None
    return f"contains the control character U+{ord(found.group()):04X} at position {found.start()}"


def safe_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a queue name or a GPU type (None: it can)."""
    if SAFE_NAME.match(name):
        return None
    return "must be 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit"


def http_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be shown as a link (None: an absolute http(s) URL with a host)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return "is not a URL"
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return "must be an absolute http:// or https:// URL"
    return None


def refuse(problem: str | None) -> None:
    """Raise ``ValueError(problem)`` when there is one (for pydantic validators)."""
    if problem is not None:
        raise ValueError(problem)


def _checked(problem_of: Callable[[str], str | None]) -> Callable[[str], str]:
    def check(value: str) -> str:
        refuse(problem_of(value))
        return value

    return check


# Field types for the intake models: a link shown on the dashboard and in PR bodies
# (``javascript:`` and friends never are), and a ref that reaches git as a plain name.
HttpLink = Annotated[str, AfterValidator(_checked(http_url_problem))]
GitRefName = Annotated[str, AfterValidator(_checked(ref_problem))]
# A test id or a path: shown on one line in PR bodies and comments, passed to pytest.
OneLine = Annotated[str, AfterValidator(_checked(control_character_problem))]
