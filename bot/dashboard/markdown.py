"""PR bodies and comments as GitHub shows them: Markdown rendered, then sanitised.

markdown-it-py renders CommonMark with GitHub's tables and strikethrough, raw HTML passed
through as GitHub does (our own reviews use ``<details>``); nh3 (the Rust ``ammonia`` sanitiser)
then keeps only an allowlist of tags and attributes, so whatever a PR body or comment says can
be formatting and links, never a script, a style, an image fetched from elsewhere or an event
handler. The page's CSP (``bot.dashboard.render``) is the second wall.
"""

from __future__ import annotations

from functools import lru_cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

TAGS = frozenset(
    {
        "a", "blockquote", "br", "code", "del", "details", "em", "h1", "h2", "h3", "h4", "h5",
        "h6", "hr", "li", "ol", "p", "pre", "s", "strong", "summary", "table", "tbody", "td",
        "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}, "details": {"open"}}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
CACHED_TEXTS = 512

_renderer = MarkdownIt("commonmark", {"html": True, "linkify": False}).enable(
    ["table", "strikethrough"]
)


@lru_cache(maxsize=CACHED_TEXTS)
def _render(text: str) -> str:
    html = _renderer.render(text)
    return nh3.clean(
        html,
        tags=set(TAGS),
        attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        # A relative link would resolve against the dashboard, not the forge it was written on.
        url_relative="deny",
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def render_markdown(text: str | None) -> Markup:
    """``text`` as sanitised HTML, safe to put in a page as it is."""
    return Markup(_render(text or ""))  # sanitised by nh3 above: safe as it is
