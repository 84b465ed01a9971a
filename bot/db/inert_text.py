"""Untrusted text made inert where it lands: Markdown, commit messages, HTML comments.

Paths, class names, test ids, log excerpts and command text come from repositories, logs and
comments that anyone may write. On GitHub a path like ``a`b @acme/team [x](https://evil)``
written as plain Markdown pings a team and carries a link from the bot's own account; a newline
in a commit message line forges a trailer. So each such value is written as a **code span**
whose fence is longer than any run of backticks inside it (nothing inside a code span is a
mention, a link or HTML), on one line (control characters shown as ``\\xNN`` escapes). It lives
at the bottom of ``bot/`` because the stored violation lines (``bot.db.rows``) are Markdown.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BACKTICKS = re.compile(r"`+")


def visible(text: str) -> str:
    r"""``text`` on one line: every control, separator or bidi character as an escape.

    >>> visible("a\nb\u202ec")
    'a\\x0ab\\u202ec'
    """

    def escape(found: re.Match[str]) -> str:
        code = ord(found.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _CONTROL.sub(escape, text)


def code_span(text: str) -> str:
    """``text`` as a Markdown code span that no content can close early.

    >>> code_span("a.py")
    '`a.py`'
    >>> code_span("a`b @team")
    '``a`b @team``'
    >>> code_span("`x`")
    '`` `x` ``'
    """
    shown = visible(text)
    longest = max((len(run) for run in _BACKTICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def comment_safe(text: str) -> str:
    """``text`` for the inside of an HTML comment: one line, no ``--`` or ``>`` to end it.

    >>> comment_safe("x --> <b>")
    'x - -&gt; &lt;b&gt;'
    """
    flat = visible(text).replace("<", "&lt;").replace(">", "&gt;")
    while "--" in flat:
        flat = flat.replace("--", "- -")
    return flat


_MENTION = re.compile(r"@(?=[A-Za-z0-9])")
_PLAIN_URL = re.compile(r"^https?://[A-Za-z0-9._~:/?#!$&'*+,;=%-]+$")


def no_mentions(text: str) -> str:
    """``text`` with every ``@name`` broken by a word joiner, for prose outside code spans.

    >>> no_mentions("ping @acme/team") == "ping @\u2060acme/team"
    True
    """
    return _MENTION.sub("@\u2060", text)


def link_text(url: str) -> str:
    """A URL shown as a plain autolink when it holds nothing Markdown reads (no brackets,
    parentheses, backticks, spaces or ``@``), else as a code span.

    >>> link_text("https://ci.example/job/1/")
    'https://ci.example/job/1/'
    >>> link_text("https://x/)[y](https://evil")
    '`https://x/)[y](https://evil`'
    """
    return url if _PLAIN_URL.match(url) else code_span(url)


def within(items: list[str], limit: int, separator: str = "; ") -> str:
    """``items`` joined while the text stays within ``limit`` characters, then how many were
    left out: never cut inside an item (a cut code span would leave its rest live Markdown).

    >>> within(["`a`", "`b`", "`c`"], 8)
    '`a`; `b` and 1 more'
    """
    shown: list[str] = []
    size = 0
    for item in items:
        size += len(item) + (len(separator) if shown else 0)
        if size > limit and shown:
            break
        shown.append(item)
    left = len(items) - len(shown)
    return separator.join(shown) + (f" and {left} more" if left else "")
