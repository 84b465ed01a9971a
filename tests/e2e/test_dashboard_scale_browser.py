"""The dashboard in Debian's Chromium over 100,000 fix PRs, seeded by the dashboard bench's own
seeder (``bench/dashboard_seed.py``): every feature still works at that size — the header's figures,
the pages keyed by id (older, newer), the filter form, search, a fix's page and ``/quality``.
Screenshot: ``build/screenshots/dashboard-100k.png``."""

from __future__ import annotations

import re

import pytest

from bench.dashboard_seed import seed as seed_like_the_bench
from bot.db.tally_fold import fold_backlog
from tests.e2e.test_dashboard_browser import _shot, browser_page

pytestmark = pytest.mark.e2e
__all__ = ["browser_page"]  # the fixture, shared with the dashboard's browser test

from playwright import sync_api  # noqa: E402 - a dev dependency; missing it is an error

FIXES = 100_000


def _ids(page) -> list[int]:
    return [int(i) for i in page.locator("tr[data-fix-id]").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-fix-id'))"
    )]  # fmt: skip


def test_every_feature_at_100000_fix_prs(make_service, browser_page):
    service = make_service()
    service.start_api()  # migrates the database
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    seed_like_the_bench(url, FIXES)
    fold_backlog(url, budget_s=3600)  # what the reconciler does over its next turns
    page = browser_page

    page.goto(service.url + "/")
    sync_api.expect(page.locator("p.counts b").first).to_have_text(f"{FIXES}")
    assert _ids(page) == list(range(FIXES, FIXES - 50, -1))
    sync_api.expect(page.locator(".funnel .step-received .count")).to_have_text(f"{FIXES}")
    sync_api.expect(page.locator(".funnel a.landed")).to_contain_text("30%")
    assert page.locator(".charts svg").count() >= 2
    _shot(page, "dashboard-100k")

    page.click("nav.pager a[rel=next]")
    page.wait_for_url(f"**/?before={FIXES - 49}")
    assert _ids(page) == list(range(FIXES - 50, FIXES - 100, -1))
    page.click("nav.pager a[rel=prev]")
    page.wait_for_url(f"**/?after={FIXES - 50}")
    assert _ids(page) == list(range(FIXES, FIXES - 50, -1))

    page.goto(service.url + "/")
    page.select_option("select[name=state]", "merged")
    page.select_option("select[name=repository]", "/repos/target-3")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/?*state=merged*")
    rows = page.locator("tr[data-fix-id]")
    sync_api.expect(rows).to_have_count(50)
    assert set(rows.locator("td:nth-child(3)").all_inner_texts()) == {"merged"}  # State
    assert set(rows.locator(".repo").all_inner_texts()) == {"/repos/target-3"}
    sync_api.expect(page.locator("p.counts")).to_contain_text("match")

    page.goto(service.url + "/")
    page.fill("input[name=q]", "Worker77777")
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/?q=*")
    assert _ids(page) == [77777]
    page.locator("tr[data-fix-id] a.title").click()
    page.wait_for_url(re.compile(r".*/fixes/77777$"))
    sync_api.expect(page.locator("h1")).to_contain_text("Worker77777")

    page.goto(service.url + "/quality")
    sync_api.expect(page.locator("#landed-rate")).to_have_text("30%")
    row = page.locator('tr[data-signature="contract-forward-override"] td')
    sync_api.expect(row.nth(1)).to_have_text("75000")  # opened: three in four of the seeds
    assert page.dialogs == [], page.dialogs
    assert page.errors == [], page.errors
