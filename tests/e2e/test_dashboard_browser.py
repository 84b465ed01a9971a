"""Debian's Chromium, driven by Playwright, against a live `repairbot serve` after a real repair.

The pages render, the filters work (by submitting the real forms), a PR opened while the page is
open appears without a reload, and hostile text (a failure log and a PR title) renders as text.
Screenshots go to ``build/screenshots/`` (git-ignored).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from bot.cli.demo_target import build_target, post_failure, run_tests, wait_for_runs
from bot.db.models import Fix, FixComment
from bot.db.session import session_scope
from tests.conftest import CI_TOKEN

pytestmark = pytest.mark.e2e

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "build" / "screenshots"
XSS_TITLE = "<img src=x onerror=alert(1)>"
XSS_LOG_LINE = "FAILED tests/test_ui.py::test_banner - AssertionError: <script>alert(1)</script>"
# Markdown as a hostile PR body or comment would write it: every way in that a sanitiser must
# close (raw HTML with handlers, script and style, javascript: and data: links, an iframe), next
# to formatting that must survive (a table, code, a link).
XSS_MARKDOWN = (
    f"{XSS_TITLE}\n\n<script>alert(2)</script><style>body{{display:none}}</style>\n\n"
    "[click](javascript:alert(3)) [data](data:text/html,<script>alert(4)</script>) "
    '<a href="jav&#x09;ascript:alert(5)">tab</a> <iframe src="https://example.com"></iframe>\n\n'
    "<svg onload=alert(6)></svg><b onmouseover=alert(7)>bold</b>\n\n"
    "| payload | kept |\n|---|---|\n| `<img src=x>` | [safe](https://example.com) |\n"
)
XSS_LOG = (
    "============================= test session starts ==============================\n"
    "tests/test_ui.py F\n"
    "=========================== short test summary info ============================\n"
    f"{XSS_LOG_LINE}\n"
    "========================= 1 failed in 0.05s =========================\n"
).encode()
LIVE_WAIT_MS = 240_000

from playwright import sync_api  # noqa: E402 - a dev dependency; missing it is an error

if not CHROMIUM.exists():  # a missing browser fails the run: CI installs it, nothing is skipped
    pytest.fail(
        "Debian's chromium is not installed: run scripts/install_system_deps.sh", pytrace=False
    )


@pytest.fixture(scope="module")
def targets(tmp_path_factory):
    """Two legacy targets (two repositories: two root causes) and their real failing output."""
    made = []
    for name in ("first", "second"):
        repo = tmp_path_factory.mktemp(name) / "repo"
        head = build_target(repo)
        made.append((repo, head))
    console = run_tests(made[0][0]).console
    assert b"must not override SpecWorkerBase.forward" in console
    return made, console


@pytest.fixture
def browser_page(tmp_path):
    """A fresh headless Chromium profile; dialogs and console errors are recorded."""
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"),
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1360, "height": 900},
        )
        page = context.new_page()
        page.dialogs = []
        page.errors = []
        page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        page.on(
            "console",
            lambda message: page.errors.append(message.text) if message.type == "error" else None,
        )
        try:
            yield page
        finally:
            context.close()


def _shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def _seed_hostile_fix(data_dir: Path, like: dict[str, Any]) -> int:
    """A fix PR whose title is an XSS payload, written as a forge sync would store it."""
    url = f"sqlite:///{(data_dir / 'repairbot.db').resolve()}"
    with session_scope(url) as session:
        fix = Fix(
            forge="github",
            repository="attacker/fork",
            number=666,
            url="https://github.invalid/attacker/fork/pull/666",
            dedupe_key="hostile",
            signature=like["signature"],
            base_sha=like["base_sha"],
            branch="attacker/xss",
            head_sha=like["head_sha"],
            title=XSS_TITLE,
            body=XSS_MARKDOWN,
            files=["x.py"],
            violations=[f"x.py:1 `{XSS_TITLE}` (forward-override)"],
            diff=f"diff --git a/x.py b/x.py\n+{XSS_TITLE}\n",
            state="closed",
        )
        session.add(fix)
        session.flush()
        session.add(FixComment(fix_id=fix.id, kind="comment", author=XSS_TITLE, body=XSS_MARKDOWN))
        return fix.id


def test_dashboard_in_chromium(make_service, targets, browser_page):
    (first, second), console = targets
    service = make_service(verify_fallback_after_s="1")
    service.start_api()
    page = browser_page
    with service.client() as client:
        answer = post_failure(
            client,
            token=CI_TOKEN,
            repo=first[0],
            head_sha=first[1],
            console=console,
            build_number=1,
        )
        report = wait_for_runs(client, answer["url"], timeout_s=180)
        assert [run["state"] for run in report["runs"]] == ["pr_opened"], service.logs()
        (fix,) = client.get("/api/v1/fixes").json()
        hostile = client.post(
            "/api/v1/ci-failures",
            params={"pipeline": "attacker", "build_number": 7, "stage": "A10-PyTorch-1"},
            content=XSS_LOG,
            headers={"Authorization": f"Bearer {CI_TOKEN}"},
        )
        assert hostile.status_code == 202, hostile.text
        wait_for_runs(client, hostile.json()["url"], timeout_s=60)
    hostile_id = _seed_hostile_fix(service.data_dir, fix)

    # The list: the real fix, its state and signature; the funnel; the charts.
    page.goto(service.url + "/")
    row = page.locator(f'tr[data-fix-id="{fix["id"]}"]')
    sync_api.expect(row).to_contain_text(fix["title"])
    sync_api.expect(row.locator(".badge.s-open")).to_have_text("open")
    sync_api.expect(row).to_contain_text("contract-forward-override")
    sync_api.expect(page.locator(".funnel .step-received .count")).to_have_text("2")
    assert page.locator(".charts svg").count() >= 2
    sync_api.expect(page.locator("#live-status")).to_have_text("live")
    _shot(page, "fixes")

    # Hostile text renders as text: no element is created from it and no script runs.
    hostile_row = page.locator(f'tr[data-fix-id="{hostile_id}"]')
    sync_api.expect(hostile_row.locator("a.title")).to_have_text(XSS_TITLE)
    assert page.locator("img").count() == 0
    page.goto(service.url + "/failures")
    sync_api.expect(page.locator("td.top-error code").first).to_contain_text(
        "<script>alert(1)</script>"
    )
    assert page.evaluate("document.scripts.length") == 1  # live.js alone
    _shot(page, "failures")
    page.goto(f"{service.url}/fixes/{hostile_id}")
    sync_api.expect(page.locator("h1")).to_have_text(XSS_TITLE)
    assert page.locator("img").count() == 0
    # Its body and comment render as Markdown: the table and the https link stay, nothing active.
    for markdown in (page.locator(".markdown.body"), page.locator(".markdown.reply").last):
        sync_api.expect(markdown.locator("table td code")).to_have_text("<img src=x>")
        sync_api.expect(
            markdown.locator('a[href="https://example.com/"], a[href="https://example.com"]')
        ).to_have_count(1)
    active = ", ".join(f".markdown {tag}" for tag in ("iframe", "svg", "style", "img", "[onload]"))
    assert page.locator(active + ", [onmouseover]").count() == 0
    hrefs = page.eval_on_selector_all(".markdown a[href]", "links => links.map(a => a.href)")
    assert all(href.startswith("https://") for href in hrefs), hrefs
    assert page.evaluate("document.scripts.length") == 1  # live.js alone

    # Filters, through the real form (no JavaScript needed for them).
    page.goto(service.url + "/")
    page.select_option("select[name=state]", "closed")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/?*state=closed*")
    sync_api.expect(page.locator("tr[data-fix-id]")).to_have_count(1)
    sync_api.expect(page.locator(f'tr[data-fix-id="{hostile_id}"]')).to_have_count(1)
    page.select_option("select[name=state]", "merged")
    page.click("form.filters button[type=submit]")
    sync_api.expect(page.locator("td.empty")).to_contain_text("No fix PR matches")
    page.goto(service.url + "/")
    page.fill("input[name=q]", Path(fix["files"][0]).stem)
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**/?q=*")
    sync_api.expect(page.locator("tr[data-fix-id]")).to_have_count(1)
    sync_api.expect(page.locator(f'tr[data-fix-id="{fix["id"]}"]')).to_have_count(1)
    _shot(page, "filtered")

    # The fix page: timeline, highlighted diff, findings with evidence.
    page.goto(f"{service.url}/fixes/{fix['id']}")
    sync_api.expect(page.locator(".markdown.body h2").first).to_be_visible()
    timeline = page.locator("ol.timeline")
    for step in ("Failure received", "Classified", "Swept the repository", "PR opened"):
        sync_api.expect(timeline).to_contain_text(step)
    assert page.locator(".diff .gi").count() > 0 and page.locator(".diff .gd").count() > 0
    sync_api.expect(page.locator(".finding pre.log").first).to_contain_text(
        "must not override SpecWorkerBase.forward"
    )
    sync_api.expect(page.locator("section", has_text="Verifications").first).to_be_visible()
    _shot(page, "fix")

    # Live: a second failure while the list is open; its PR appears without a reload.
    page.goto(service.url + "/")
    page.evaluate("window.__sameDocument = true")
    before = page.locator("tr[data-fix-id]").count()
    with service.client() as client:
        post_failure(
            client,
            token=CI_TOKEN,
            repo=second[0],
            head_sha=second[1],
            console=console,
            build_number=2,
        )
    new_row = page.locator("tr[data-fix-id].fresh")
    new_row.wait_for(timeout=LIVE_WAIT_MS)
    sync_api.expect(new_row).to_contain_text("contract-forward-override")
    assert page.locator("tr[data-fix-id]").count() == before + 1
    assert page.evaluate("window.__sameDocument") is True, "the page was reloaded"
    sync_api.expect(page.locator(".funnel .step-received .count")).to_have_text("3")
    _shot(page, "live")

    assert page.dialogs == [], page.dialogs
    assert page.errors == [], page.errors
    shutil.copy(SCREENSHOTS / "live.png", SCREENSHOTS / "latest.png")
