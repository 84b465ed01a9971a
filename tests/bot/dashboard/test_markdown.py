"""``bot.dashboard.markdown``: GitHub-flavoured formatting survives, and nothing a PR body or
comment says becomes a script, a handler, a style, a frame, a remote image or a non-web link."""

from __future__ import annotations

import re

import pytest

from bot.dashboard.markdown import render_markdown


def test_tables_code_links_and_details_render() -> None:
    html = render_markdown(
        "## Test Coverage\n\n| test | result |\n|---|:-:|\n| `tests/a.py` | **passed** |\n\n"
        "```python\ndef _forward_impl(self):\n    return 1\n```\n\n"
        "See [the run](https://ci.example/job/1) and ~~old~~.\n\n"
        "<details><summary>patch</summary>\n\n```diff\n-a\n+b\n```\n\n</details>\n"
    )
    assert "<h2>Test Coverage</h2>" in html
    assert "<table>" in html and "<td><code>tests/a.py</code></td>" in html
    assert '<pre><code class="language-python">' in html or "<pre><code>" in html
    assert '<a href="https://ci.example/job/1" rel="noopener noreferrer nofollow">' in html
    assert "<s>old</s>" in html and "<details><summary>patch</summary>" in html


@pytest.mark.parametrize(
    "hostile",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        "<svg onload=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        '<a href="jav&#x09;ascript:alert(1)">x</a>',
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
        '<iframe src="https://evil.example"></iframe>',
        "<style>body{display:none}</style>",
        '<b style="position:fixed;inset:0" onclick="alert(1)">x</b>',
        '<form action="https://evil.example"><input name=a></form>',
        "![tracker](https://evil.example/pixel.png)",
        '<details open ontoggle="alert(1)"><summary>x</summary></details>',
        "<!-- <script>alert(1)</script> -->",
    ],
)
def test_nothing_active_survives(hostile: str) -> None:
    html = str(render_markdown(f"before\n\n{hostile}\n\nafter"))
    lowered = html.lower()
    for forbidden in ("<script", "<img", "<svg", "<iframe", "<style", "<form", "<input"):
        assert forbidden not in lowered, html
    assert not re.search(r"\son\w+\s*=", lowered), html
    assert " style=" not in lowered and "<!--" not in html, html
    for href in re.findall(r'href="([^"]*)"', html):
        assert href.startswith(("https://", "http://", "mailto:")), html


def test_relative_links_do_not_point_into_the_dashboard() -> None:
    html = render_markdown("[pr](/owner/repo/pull/1)")
    assert "href" not in html and ">pr</a>" in html


def test_empty_and_missing_text() -> None:
    assert render_markdown(None) == "" == render_markdown("")
