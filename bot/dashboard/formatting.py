"""Small pure helpers for times and durations as an on-call engineer reads them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime

from bot.db.tally_parts import seconds_between
from fixers.repo.input_rules import http_url_problem


def http_link(url: str | None) -> str | None:
    """``url`` when it is an http(s) link, else None: a ``javascript:`` or ``data:`` URL stored
    by an older version (intake refuses them now) is shown as text, never as a link."""
    if not url or http_url_problem(url) is not None:
        return None
    return url


def aware(moment: datetime | None) -> datetime | None:
    """``moment`` as an aware UTC datetime; SQLite hands back naive values stored as UTC."""
    if moment is None:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def duration_text(seconds: float | None) -> str:
    """``"4.2s"``, ``"3m 05s"``, ``"2h 10m"``, ``"3d 4h"``; an em dash when unknown."""
    if seconds is None:
        return "—"
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours}h {minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h"


def age_text(moment: datetime | None, now: datetime) -> str:
    """How long ago ``moment`` was, e.g. ``"5m ago"``."""
    elapsed = seconds_between(moment, now)
    if elapsed is None:
        return "—"
    if elapsed < 5:
        return "just now"
    text = duration_text(elapsed)
    return f"{text.split()[0]} ago"


def iso(moment: datetime | None) -> str:
    """An ISO-8601 UTC timestamp to the second (for ``title`` and ``datetime`` attributes)."""
    value = aware(moment)
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else ""


def median(values: Iterable[float]) -> float | None:
    """The median, or None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
