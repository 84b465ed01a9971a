"""Dashboard routes: full pages, and the ``/partials/...`` fragments the live refresh polls."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.orm import Session

from bot.dashboard import charts
from bot.dashboard.detail import load_fix
from bot.dashboard.failures import list_failures
from bot.dashboard.filters import FIX_STATES, VERDICTS, FailureFilters, FixFilters
from bot.dashboard.formatting import aware
from bot.dashboard.highlight import highlight_diff
from bot.dashboard.quality import headline, quality
from bot.dashboard.queries import LIST_TOTALS, facets, list_fixes, state_counts
from bot.dashboard.render import not_modified, page
from bot.dashboard.stats import OVERVIEW_TOTALS, chart_start, overview
from bot.db.models import Verdict, utcnow
from bot.db.request_scope import get_read_session
from bot.db.tally_fold import data_version, read_totals
from bot.version import __version__
from fixers.repo.input_rules import MAX_SQL_INT

router = APIRouter(include_in_schema=False)
SessionDep = Annotated[Session, Depends(get_read_session)]
STATIC_DIR = Path(__file__).parent / "static"
VERDICT_ORDER = tuple(verdict.value for verdict in Verdict)


def install(app: FastAPI) -> None:
    """Add the dashboard's routes and its static files (CSS, the live-refresh script)."""
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")


def _fixes_context(session: Session, filters: FixFilters) -> dict[str, Any]:
    now = utcnow()
    today = (aware(now) or now).date()
    totals = read_totals(
        session,
        (*OVERVIEW_TOTALS, *LIST_TOTALS, "quality:all"),
        since={"fix_day": chart_start(today).isoformat()},
    )
    summary = overview(session, now=now, figures=totals.figures)
    return {
        "now": now,
        "filters": filters,
        "listing": list_fixes(session, filters=filters, figures=totals.figures),
        "overview": summary,
        "state_counts": state_counts(totals.figures),
        "quality": headline(totals.figures),
        "behind": totals.behind,
        "facets": facets(totals.figures),
        "charts": [
            charts.fixes_per_day(summary.days, summary.per_day, FIX_STATES),
            charts.verdict_split(summary.verdicts, VERDICT_ORDER),
            charts.time_to_pr(summary.pr_times),
        ],
    }


@router.get("/")
def fixes_page(request: Request, session: SessionDep) -> Response:
    """Every fix PR: funnel, charts, filters, search and pagination."""
    started = time.perf_counter()
    filters = FixFilters.from_params(request.query_params)
    context = _fixes_context(session, filters)
    context.update(states=FIX_STATES, verdicts=VERDICTS)
    return page(request, "fixes.html", started=started, **context)


def list_etag(session: Session, request: Request) -> str:
    """The live list's ETag from the data's version (one statement), the minute (ages and the
    chart move with the clock), the build and the query: equal when the fragment would be."""
    minute = utcnow().replace(second=0, microsecond=0).isoformat()
    query = hashlib.sha256(str(request.query_params).encode()).hexdigest()[:12]
    return f'W/"{data_version(session)}-{minute}-{__version__}-{query}"'


@router.get("/partials/fixes")
def fixes_partial(request: Request, session: SessionDep) -> Response:
    """The live part of ``/`` for the same filters (polled by the live refresh). A poll whose
    data did not move costs one statement (``data_version``) and gets 304."""
    started = time.perf_counter()
    etag = list_etag(session, request)
    if request.headers.get("if-none-match") == etag:
        return not_modified(etag, started=started)
    filters = FixFilters.from_params(request.query_params)
    context = _fixes_context(session, filters)
    return page(request, "_fixes_live.html", started=started, etag=etag, **context)


def _fix_or_404(request: Request, session: SessionDep, fix_id: int, name: str) -> Response:
    started = time.perf_counter()
    # An id no column can hold names no fix: the 404 page, before the driver overflows on it.
    detail = load_fix(session, fix_id) if 1 <= fix_id <= MAX_SQL_INT else None
    if detail is None:
        return page(
            request,
            "not_found.html",
            started=started,
            status_code=404,
            now=utcnow(),
            what=f"fix #{fix_id}",
        )
    files, truncated = highlight_diff(detail.fix.diff or "") if name == "fix.html" else ([], False)
    edits = detail.fix.human_edit_diff if name == "fix.html" else None
    edit_files, _ = highlight_diff(edits) if edits else ([], False)  # capped when recorded
    return page(
        request,
        name,
        started=started,
        now=utcnow(),
        d=detail,
        fix=detail.fix,
        diff_files=files,
        diff_truncated=truncated,
        edit_files=edit_files,
    )


@router.get("/fixes/{fix_id}")
def fix_page(request: Request, session: SessionDep, fix_id: int) -> Response:
    """One fix PR: timeline, diff, findings, violations, verifications, /bot commands."""
    return _fix_or_404(request, session, fix_id, "fix.html")


@router.get("/partials/fixes/{fix_id}")
def fix_partial(request: Request, session: SessionDep, fix_id: int) -> Response:
    """The live part of ``/fixes/{id}``: state, timeline and verifications."""
    return _fix_or_404(request, session, fix_id, "_fix_live.html")


@router.get("/quality")
def quality_page(request: Request, session: SessionDep) -> Response:
    """How the fix PRs landed, per signature and codemod: the bot's quality figures."""
    started = time.perf_counter()
    return page(request, "quality.html", started=started, now=utcnow(), q=quality(session))


@router.get("/failures")
def failures_page(request: Request, session: SessionDep) -> Response:
    """Every failure received, unclassified included, with the top error line."""
    started = time.perf_counter()
    filters = FailureFilters.from_params(request.query_params)
    listing = list_failures(session, filters=filters)
    return page(
        request, "failures.html", started=started, now=utcnow(), filters=filters, listing=listing
    )


@router.get("/partials/failures")
def failures_partial(request: Request, session: SessionDep) -> Response:
    """The live part of ``/failures``."""
    started = time.perf_counter()
    filters = FailureFilters.from_params(request.query_params)
    listing = list_failures(session, filters=filters)
    return page(
        request,
        "_failures_live.html",
        started=started,
        now=utcnow(),
        filters=filters,
        listing=listing,
    )
