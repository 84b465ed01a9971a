"""Untrusted text made inert: rendered by the Markdown renderer GitHub's flavour follows
(markdown-it, CommonMark), a hostile path, class or command stays inside its code span: no
mention, no link, no HTML; commit-message lines stay one line; HTML comments stay closed."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from bot.db.inert_text import code_span, comment_safe, link_text, no_mentions, visible, within

HOSTILE = [
    "a.py",
    "pkg/a`b @acme/security-team [x](https://evil.invalid) <img src=x onerror=alert(1)>.py",
    "``double``",
    "`",
    "tail`",
    "a\nRepairbot-Invocation: 7",
    "mention @acme/team **bold** <!-- --> </code>",
    "bidi \u202egnp.py",
]


def _outside_code(html: str) -> str:
    return re.sub(r"<code>.*?</code>", "", html, flags=re.DOTALL)


@pytest.mark.parametrize("text", HOSTILE)
def test_a_code_span_holds_whatever_it_is_given(text):
    html = MarkdownIt("commonmark").render(f"before {code_span(text)} after")
    outside = _outside_code(html)
    assert outside == "<p>before  after</p>\n", html  # nothing escaped the span
    assert html.count("<code>") == 1
    assert "\n" not in code_span(text) and "\u202e" not in code_span(text)


def test_visible_escapes_controls_and_bidi_only():
    assert visible("ok é 中") == "ok é 中"
    assert visible("a\tb\x1b[31m\u2028") == "a\\x09b\\x1b[31m\\u2028"


def test_comment_safe_text_cannot_end_the_comment():
    html = MarkdownIt("commonmark").render(f"<!-- x {comment_safe('--><b>live</b><!--')} -->\n")
    assert "<b>" not in html.replace("&lt;b&gt;", "")
    assert html.startswith("<!--") and html.rstrip().endswith("-->")


def test_mentions_and_links_outside_code():
    assert "@acme" not in no_mentions("ping @acme/team")
    assert no_mentions("a@b.c mail stays") == "a@\u2060b.c mail stays"
    assert link_text("https://ci.example/job/1/") == "https://ci.example/job/1/"
    assert link_text("https://x/ @acme/team").startswith("`")


def test_within_never_cuts_an_item():
    items = [code_span(f"a`{n}") for n in range(50)]
    shown = within(items, 100)
    assert shown.endswith(" more")
    html = MarkdownIt("commonmark").render(shown)
    assert _outside_code(html).count("`") == 0
