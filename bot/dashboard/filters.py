"""Query-string filters of the list pages, parsed leniently: a bad value means "no filter"."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any
from urllib.parse import urlencode

from bot.db.models import FixState, Verdict
from fixers.repo.input_rules import MAX_SQL_INT

PAGE_SIZE = 50
UNVERIFIED = "unverified"
FIX_STATES = tuple(state.value for state in FixState)
VERDICTS = (*(verdict.value for verdict in Verdict), UNVERIFIED)
FAILURE_KINDS = ("classified", "unclassified")
MAX_SEARCH = 200


def _cursor(raw: str | None) -> int:
    try:
        value = int(raw or 0)
    except ValueError:
        return 0
    return value if 0 < value <= MAX_SQL_INT else 0


def _choice(raw: str | None, allowed: tuple[str, ...]) -> str:
    return raw if raw in allowed else ""


def _text(raw: str | None) -> str:
    return (raw or "").strip()[:MAX_SEARCH]


def _query_string(filters: Any, changes: dict[str, str | int]) -> str:
    if any(name not in ("before", "after") for name in changes):
        changes = {"before": 0, "after": 0, **changes}
    values = asdict(replace(filters, **changes))
    return urlencode({k: v for k, v in values.items() if v not in ("", None, 0)})


@dataclass(frozen=True)
class FixFilters:
    """Filters of ``/``: repository, state, signature, verdict, free-text search, and where the
    page starts: ``before`` an id (older rows, newest first) or ``after`` one (newer rows).
    Pages are keyed by id, not numbered: each costs the same however deep it is."""

    repository: str = ""
    state: str = ""
    signature: str = ""
    verdict: str = ""
    q: str = ""
    before: int = 0
    after: int = 0

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> FixFilters:
        """Parse a query string; unknown states and verdicts are ignored, not errors."""
        after = _cursor(params.get("after"))
        return cls(
            repository=_text(params.get("repository")),
            state=_choice(params.get("state"), FIX_STATES),
            signature=_text(params.get("signature"))[:64],
            verdict=_choice(params.get("verdict"), VERDICTS),
            q=_text(params.get("q")),
            before=0 if after else _cursor(params.get("before")),
            after=after,
        )

    @property
    def active(self) -> bool:
        """Whether any filter (not counting where the page starts) is set."""
        return any((self.repository, self.state, self.signature, self.verdict, self.q))

    def query(self, **changes: str | int) -> str:
        """The query string for these filters with ``changes`` applied (empty values dropped).
        Changing a filter starts again at the newest rows."""
        return _query_string(self, changes)


@dataclass(frozen=True)
class FailureFilters:
    """Filters of ``/failures``: classified or not, free-text search, and where the page
    starts (``before`` / ``after`` an id, as on ``/``)."""

    kind: str = ""
    q: str = ""
    before: int = 0
    after: int = 0

    @classmethod
    def from_params(cls, params: Mapping[str, str]) -> FailureFilters:
        """Parse a query string leniently."""
        after = _cursor(params.get("after"))
        return cls(
            kind=_choice(params.get("kind"), FAILURE_KINDS),
            q=_text(params.get("q")),
            before=0 if after else _cursor(params.get("before")),
            after=after,
        )

    def query(self, **changes: str | int) -> str:
        """The query string for these filters with ``changes`` applied (empty values dropped).
        Changing a filter starts again at the newest rows."""
        return _query_string(self, changes)
