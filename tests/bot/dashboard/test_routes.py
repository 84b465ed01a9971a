"""The dashboard's pages over real SQLite and PostgreSQL, seeded through the models."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, update

from bot.app import create_app
from bot.dashboard import routes as dashboard_routes
from bot.dashboard import search as dashboard_search
from bot.db.models import Fix
from bot.db.session import engine_for, session_scope
from bot.db.tally_fold import fold_backlog
from tests.bot.dashboard import seed

XSS_TITLE = "<img src=x onerror=alert(1)>"
XSS_LOG = "<script>alert(1)</script>"


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _rows(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-fix-id="(\d+)"', html)]


def test_empty_database_renders_every_page(client):
    home = client.get("/")
    assert home.status_code == 200
    assert "No fix PRs yet" in home.text
    assert "No failure reports" in client.get("/failures").text
    missing = client.get("/fixes/12345")
    assert missing.status_code == 404 and "no fix #12345" in missing.text


def test_list_shows_state_verdict_device_and_timings(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        verified = seed.fix(session, n=1)
        seed.verification(session, verified)
        seed.fix(session, n=2, state="merged")
    html = client.get("/").text
    assert _rows(html) == [2, 1]
    row_1 = html[html.index('data-fix-id="1"') :]
    assert "Rename MTPWorker1.forward" in row_1
    assert 'class="badge s-open"' in row_1 and 'class="badge v-fixed"' in row_1
    assert ">cpu ⚠<" in row_1  # asked for gpu.H100_PCIe, ran on the CPU
    assert ">41s<" in row_1  # failure at T0+1m, PR 41 s later
    row_2 = html[html.index('data-fix-id="2"') : html.index('data-fix-id="1"')]
    assert "not verified yet" in row_2 and 'class="badge s-merged"' in row_2
    funnel = re.findall(r'<span class="count">(\d+)</span>', html)
    assert funnel == ["2", "2", "2", "1", "1"]  # received, classified, fixed, verified, merged


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("state=merged", [3]),
        ("state=open", [4, 2, 1]),
        ("verdict=fixed", [1]),
        ("verdict=still_failing", [2]),
        ("verdict=unverified", [4, 3]),
        ("repository=/repos/other", [4]),
        ("signature=contract-abstract-instantiation", [4]),
        ("q=mtpworker3", [3]),
        ("q=%233", [3]),
        ("q=no-such-thing", []),
        ("state=bogus&verdict=bogus&page=x", [4, 3, 2, 1]),
    ],
)
def test_filters_and_search(settings, client, query, expected):
    with session_scope(settings.resolved_database_url) as session:
        first = seed.fix(session, n=1)
        seed.verification(session, first, verdict="still_failing")
        seed.verification(session, first, verdict="fixed")  # the newest verdict counts
        second = seed.fix(session, n=2)
        seed.verification(session, second, verdict="still_failing")
        seed.fix(session, n=3, state="merged")
        seed.fix(
            session, n=4, repository="/repos/other", signature="contract-abstract-instantiation"
        )
    assert _rows(client.get(f"/?{query}").text) == expected


def test_pages_are_keyed_by_id_and_links_keep_filters(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        for n in range(1, 56):
            seed.fix(session, n=n)
    first = client.get("/?state=open").text
    assert _rows(first) == list(range(55, 5, -1))
    assert "<b>55</b> fix PRs match" in first
    assert 'href="/?state=open&amp;before=6"' in first and 'rel="prev"' not in first
    older = client.get("/?state=open&before=6").text
    assert _rows(older) == [5, 4, 3, 2, 1]
    assert 'href="/?state=open&amp;after=5"' in older and 'rel="next"' not in older
    assert _rows(client.get("/?state=open&after=5").text) == list(range(55, 5, -1))
    assert _rows(client.get("/?state=open&after=40").text) == list(range(55, 40, -1))
    assert _rows(client.get("/?state=open&before=99999").text) == list(range(55, 5, -1))
    assert _rows(client.get("/?state=open&before=1").text) == []  # nothing older


def test_fix_page_has_timeline_diff_findings_verification_and_commands(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        fix = seed.fix(session, n=1)
        seed.verification(session, fix, test_log="assert worker.restored")
        seed.conversation(session, fix, text="/bot run --gpu-type H100_PCIe")
    html = client.get("/fixes/1").text
    timeline = html[html.index('class="timeline"') : html.index("</ol>")]
    steps = [
        re.sub(r"<[^>]+>", "", title)
        for title in re.findall(r'<span class="ev-title">(.*?)</span>', timeline)
    ]
    assert steps == [
        "Failure received",
        "Classified (run 1)",
        "Swept the repository (run 1)",
        "Patched (run 1)",
        "PR opened (run 1)",
        "Verification 1 requested",
        "Verification 1 started",
        "Verification 1: fixed",
        "/bot run --gpu-type H100_PCIe",
        "Status repairbot/verify: success",
    ]
    assert '<span class="gi">+    def _forward_impl(' in html  # highlighted server-side
    assert "must not override SpecWorkerBase.forward" in html  # finding evidence
    assert "workers/mtp.py:10 `MTPWorker1` (forward-override)" in html
    assert "tests/test_mtp.py::test_forward" in html and "assert worker.restored" in html
    assert "Did not run on the requested device (gpu.H100_PCIe)" in html
    assert "Verification queued on gpu.H100_PCIe." in html  # the bot's reply


def test_fix_without_verification_says_so(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        seed.fix(session, n=1)
    html = client.get("/fixes/1").text
    assert "Not verified yet" in html and "not verified yet" in html


def test_queued_verification_shows_no_results_yet(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        fix = seed.fix(session, n=1)
        seed.verification(
            session, fix, verdict=None, state="queued", device=None, on_requested_device=None
        )
    html = client.get("/fixes/1").text
    assert "No results yet: the job is queued." in html
    assert "gpu.H100_PCIe" in html


def test_everything_from_outside_is_escaped(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        fix = seed.fix(session, n=1, title=XSS_TITLE)
        seed.verification(session, fix, log=XSS_LOG, test_log=XSS_LOG)
        seed.conversation(session, fix, author=XSS_TITLE, text=f"/bot skip --comment '{XSS_LOG}'")
        seed.report(
            session,
            n=50,
            findings=[{"signature": "unclassified", "message": XSS_LOG, "evidence": XSS_LOG}],
        )
    for url in ("/", "/fixes/1", "/failures", "/partials/fixes", "/partials/fixes/1"):
        html = client.get(url).text
        assert "<img src=x" not in html and "<script>alert" not in html, url
    assert "&lt;img src=x onerror=alert(1)&gt;" in client.get("/").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get("/failures").text


def test_no_inline_scripts_and_a_strict_csp(client):
    response = client.get("/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert "'unsafe-inline'" not in response.headers["content-security-policy"]
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", response.text, re.S)
    assert scripts == [(' src="/static/live.js" defer', "")]
    assert " style=" not in response.text and "<style" not in response.text
    assert client.get("/static/live.js").status_code == 200


def test_partial_answers_304_when_nothing_changed(settings, client, monkeypatch):
    # One minute for the whole test: the ETag moves with the clock's minute (ages on the page).
    monkeypatch.setattr(dashboard_routes, "utcnow", lambda: seed.T0 + timedelta(days=1))
    url = settings.resolved_database_url
    with session_scope(url) as session:
        seed.fix(session, n=1)
    first = client.get("/partials/fixes")
    assert first.status_code == 200 and _rows(first.text) == [1]
    etag = first.headers["etag"]
    statements: list[str] = []
    event.listen(engine_for(url), "before_cursor_execute", _recorder(statements))
    assert client.get("/partials/fixes", headers={"If-None-Match": etag}).status_code == 304
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) == 1
    fold_backlog(url)  # the reconciler counting the changes moves nothing on the page
    assert client.get("/partials/fixes", headers={"If-None-Match": etag}).status_code == 304
    with session_scope(url) as session:
        session.execute(update(Fix).where(Fix.id == 1).values(title="Renamed by a human"))
    changed = client.get("/partials/fixes", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and "Renamed by a human" in changed.text
    with session_scope(url) as session:
        seed.fix(session, n=2)
    changed = client.get("/partials/fixes", headers={"If-None-Match": changed.headers["etag"]})
    assert changed.status_code == 200 and _rows(changed.text) == [2, 1]


def test_a_search_reads_the_newest_ids_first_then_the_index(settings, client, monkeypatch):
    monkeypatch.setattr(dashboard_search, "SEARCH_WINDOW", 60)
    with session_scope(settings.resolved_database_url) as session:
        for n in range(1, 71):
            seed.fix(session, n=n, title=f"{'old' if n <= 55 else 'new'} fix {n} common")
    old = client.get("/?q=old+fix").text  # 45 in the newest 60 ids, not a page: the index
    assert _rows(old) == list(range(55, 5, -1)) and 'href="/?q=old+fix&amp;before=6"' in old
    assert _rows(client.get("/?q=old+fix&before=6").text) == [5, 4, 3, 2, 1]
    assert _rows(client.get("/?q=old+fix&after=5").text) == list(range(55, 5, -1))
    common = client.get("/?q=common").text  # a page among the newest 60 ids: read there
    assert _rows(common)[:12] == list(range(70, 58, -1)) and len(_rows(common)) == 50
    assert 'rel="prev"' not in common and 'href="/?q=common&amp;before=21"' in common


@pytest.mark.parametrize(
    "q", ['say "hi" OR x', "NEAR(a b)", "100%_done", "a*", "'; DROP TABLE fixes; --", '"""']
)
def test_search_text_is_only_ever_a_literal(settings, client, q):
    with session_scope(settings.resolved_database_url) as session:
        seed.fix(session, n=1, title=f"fix about {q} here")
        seed.fix(session, n=2, title="an unrelated fix")
    page = client.get("/", params={"q": q})
    assert page.status_code == 200
    assert _rows(page.text) == [1]  # the typed text as a substring: no operator, no wildcard
    assert _rows(client.get("/", params={"q": q + "zz"}).text) == []


def test_failure_pages_are_keyed_by_id_with_totals_from_the_funnel(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        for n in range(1, 53):
            seed.report(session, n=n)
    first = client.get("/failures").text
    reports = [int(i) for i in re.findall(r'data-report-id="(\d+)"', first)]
    assert reports == list(range(52, 2, -1)) and "<b>52</b> failure reports" in first
    assert 'href="/failures?before=3"' in first
    older = client.get("/failures?before=3").text
    assert re.findall(r'data-report-id="(\d+)"', older) == ["2", "1"]
    assert 'href="/failures?after=2"' in older
    searched = client.get("/failures?q=L0_MergeRequest").text
    assert "<b>52</b> failure reports" in searched  # counted (capped), not from the totals


def _recorder(statements: list[str]) -> Callable[..., None]:
    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    return record


def test_failures_lists_unclassified_with_top_error_and_filters(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        seed.fix(session, n=1)
        seed.report(
            session,
            n=60,
            findings=[
                {
                    "signature": "unclassified",
                    "message": "RuntimeError: CUDA error: an illegal memory access\nsecond line",
                }
            ],
        )
    html = client.get("/failures").text
    assert re.findall(r'data-report-id="(\d+)"', html) == ["2", "1"]
    assert "<code>RuntimeError: CUDA error: an illegal memory access</code>" in html
    assert "second line</code>" not in html  # only the top line in the column
    unclassified = client.get("/failures?kind=unclassified").text
    assert re.findall(r'data-report-id="(\d+)"', unclassified) == ["2"]
    classified = client.get("/failures?kind=classified").text
    assert re.findall(r'data-report-id="(\d+)"', classified) == ["1"]
    assert 'href="/fixes/1"' in classified
