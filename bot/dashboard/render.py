"""Jinja2 rendering with autoescape everywhere, and responses with a strict CSP and an ETag."""

from __future__ import annotations

import hashlib
import time
from functools import cache
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined

from bot.dashboard.formatting import age_text, duration_text, http_link, iso
from bot.dashboard.markdown import render_markdown
from bot.version import __version__

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def _label(value: object) -> str:
    return str(value or "").replace("_", " ")


@cache
def environment() -> Environment:
    """The template environment: autoescaping on for every template, undefined names fail."""
    env = Environment(
        loader=PackageLoader("bot.dashboard", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        duration=duration_text, iso=iso, label=_label, http_link=http_link, markdown=render_markdown
    )
    env.globals.update(age=age_text, version=__version__)
    return env


def render(name: str, **context: Any) -> str:
    """Render template ``name`` with ``context``."""
    return environment().get_template(name).render(**context)


def _headers(etag: str, started: float) -> dict[str, str]:
    return {
        **SECURITY_HEADERS,
        "ETag": etag,
        "Server-Timing": f"app;dur={(time.perf_counter() - started) * 1000:.1f}",
    }


def not_modified(etag: str, *, started: float) -> Response:
    """304 with ``etag``: what the live refresh gets when its page's data did not move."""
    return Response(status_code=304, headers=_headers(etag, started))


def page(
    request: Request,
    name: str,
    *,
    started: float,
    status_code: int = 200,
    etag: str | None = None,
    **context: Any,
) -> Response:
    """An HTML response with the security headers, an ETag, and the server time it took.

    A request whose ``If-None-Match`` equals the ETag gets 304 and no body: the live refresh
    polls with it, so an unchanged page costs no bytes on the wire and no DOM work. The ETag
    is the body's hash unless the caller knows the data's version (``etag``).
    """
    body = render(name, **context).encode()
    etag = etag or f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    if status_code == 200 and request.headers.get("if-none-match") == etag:
        return not_modified(etag, started=started)
    return HTMLResponse(body, status_code=status_code, headers=_headers(etag, started))
