"""The quality figures in Debian's Chromium, against a live ``repairbot serve`` over a database
seeded with known outcomes (``tests.bot.dashboard.seed.outcomes``): the header of ``/`` links the
landed-unchanged rate to ``/quality``, whose tables show the counts, the median failure →
verified fix and the device-minutes per device, and a fix merged after human edits shows their
diff, highlighted and escaped. Screenshot: ``build/screenshots/quality.png``."""

from __future__ import annotations

import re

import pytest

from bot.dashboard.formatting import duration_text
from bot.db.session import session_scope
from bot.db.tally_parts import duration_bucket, histogram_median
from tests.bot.dashboard import seed
from tests.e2e.test_dashboard_browser import _shot, browser_page

pytestmark = pytest.mark.e2e
__all__ = ["browser_page"]  # the fixture, shared with the dashboard's browser test

from playwright import sync_api  # noqa: E402 - a dev dependency; missing it is an error


def _cells(row) -> list[str]:
    return [text.strip() for text in row.locator("td").all_inner_texts()]


def test_quality_figures_in_chromium(make_service, browser_page):
    service = make_service()
    service.start_api()  # migrates the database
    url = f"sqlite:///{(service.data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        fixes = seed.outcomes(session)
        edited = fixes[3].id
    page = browser_page

    # The header of /: the headline figure, linked to the page that defines it.
    page.goto(service.url + "/")
    landed = page.locator(".funnel a.landed")
    sync_api.expect(landed).to_contain_text("29%")
    sync_api.expect(landed).to_contain_text("2/7 decided")
    landed.click()
    page.wait_for_url("**/quality")

    # /quality: the headline with its definition, and each table's known figures.
    sync_api.expect(page.locator("#landed-rate")).to_have_text("29%")
    sync_api.expect(page.locator(".headline .definition")).to_contain_text(
        "merged exactly as the bot pushed them and not reverted"
    )
    # Medians read off the 2%-wide histogram: fixes 1-3 took 106, 107, 108 s (107 s exact).
    median = duration_text(histogram_median([(duration_bucket(s), 1) for s in (106, 107, 108)]))
    every = duration_text(histogram_median([(duration_bucket(s), 1) for s in (106, 107, 108, 113)]))
    sync_api.expect(page.locator(".headline")).to_contain_text(f"failure → verified fix {every}")
    row = page.locator('tr[data-signature="contract-forward-override"]')
    # signature, opened, open, unchanged, edited, not recorded, closed, superseded, reverted,
    # landed, failure → verified fix, device-minutes
    assert _cells(row)[:11] == [
        "contract-forward-override", "7", "1", "2", "1", "1", "1", "1", "1", "17%", median
    ]  # fmt: skip
    sync_api.expect(row.locator("td.devices")).to_contain_text("cpu 3.8 min")
    sync_api.expect(row.locator("td.devices")).to_contain_text(f"{seed.H100} ")
    other = _cells(page.locator('tr[data-codemod="add_hook_stub"]'))
    assert other[:10] == ["add_hook_stub", "2", "1", "1", "0", "0", "0", "0", "0", "100%"]
    devices = page.locator("table.devices tbody tr")
    assert [_cells(devices.nth(i)) for i in range(devices.count())] == [
        ["cpu", "4", "3.8"],
        [seed.H100, "2", "1.9"],
    ]
    assert page.locator("ul.edited a").count() == 1
    _shot(page, "quality")

    # The edited fix's page: the human's diff, highlighted, its hostile text inert.
    page.locator("ul.edited a").click()
    page.wait_for_url(re.compile(rf".*/fixes/{edited}$"))
    edits = page.locator("#human-edits")
    sync_api.expect(edits.locator("h2")).to_contain_text("Merged after human edits")
    assert edits.locator(".diff .gd").count() > 0  # highlighted like the fix's own diff
    sync_api.expect(edits.locator(".diff .gi").last).to_contain_text("<script>alert(1)</script>")
    assert page.evaluate("document.scripts.length") == 1  # live.js alone
    assert page.dialogs == [], page.dialogs
    assert page.errors == [], page.errors
