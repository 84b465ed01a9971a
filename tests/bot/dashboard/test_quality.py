"""The quality figures, read from the running totals the database's triggers keep, over a
seeded database with known outcomes, on SQLite and PostgreSQL (counted in memory while not
folded, then folded as the reconciler does: the same figures), and ``/quality`` and the fix page
showing them."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from bot.app import create_app
from bot.dashboard.formatting import duration_text
from bot.dashboard.quality import Outcomes, headline, quality
from bot.db.session import session_scope
from bot.db.tally_fold import fold, read_totals
from tests.bot.dashboard import seed

OTHER, H100, seed_outcomes = seed.OTHER, seed.H100, seed.outcomes  # the known outcomes


def _counts(o: Outcomes) -> tuple[int, ...]:
    return (
        o.opened,
        o.open,
        o.merged_unchanged,
        o.merged_edited,
        o.merged_unknown,
        o.closed,
        o.superseded,
        o.reverted,
        o.landed_unchanged,
        o.decided,
    )


@pytest.mark.parametrize("folded", [False, True], ids=["unfolded", "folded"])
def test_outcomes_per_signature_and_codemod_are_counted(settings, folded):
    with session_scope(settings.resolved_database_url) as session:
        seed_outcomes(session)
    if folded:
        with session_scope(settings.resolved_database_url) as session:
            assert fold(session) > 0
    with session_scope(settings.resolved_database_url) as session:
        q = quality(session)
        total = headline(read_totals(session, ("quality:all",)).figures)
        assert q.behind == 0
    assert _counts(q.total) == _counts(total)  # the header of / and /quality agree
    by_signature = {o.key: o for o in q.by_signature}
    by_codemod = {o.key: o for o in q.by_codemod}
    main = by_signature["contract-forward-override"]
    # opened, open, unchanged, edited, unknown, closed, superseded, reverted, landed, decided
    assert _counts(main) == (7, 1, 2, 1, 1, 1, 1, 1, 1, 6)
    assert _counts(by_signature[OTHER]) == (2, 1, 1, 0, 0, 0, 0, 0, 1, 1)
    assert _counts(total) == (9, 2, 3, 1, 1, 1, 1, 1, 2, 7)
    assert total.landed_rate == pytest.approx(2 / 7)
    assert main.landed_rate == pytest.approx(1 / 6) and by_signature[OTHER].landed_rate == 1.0
    # A fix with two codemods counts under each; the unopened row nowhere.
    assert _counts(by_codemod["rename_forbidden"]) == _counts(total)
    assert _counts(by_codemod["add_hook_stub"]) == _counts(by_signature[OTHER])
    assert list(by_codemod) == ["rename_forbidden", "add_hook_stub"]  # most PRs first


def test_median_failure_to_verified_fix_and_device_minutes(settings):
    with session_scope(settings.resolved_database_url) as session:
        seed_outcomes(session)
    with session_scope(settings.resolved_database_url) as session:
        q = quality(session)
    by_signature = {o.key: o for o in q.by_signature}
    main, other = by_signature["contract-forward-override"], by_signature[OTHER]
    # Fixed verdicts: fixes 1, 2, 3 (106, 107, 108 s) and 8 (113 s); 4 never verified fixed.
    # Read from 2%-wide buckets: within 1% of the exact medians.
    assert main.median_to_verified == pytest.approx(107.0, rel=0.01)
    assert other.median_to_verified == pytest.approx(113.0, rel=0.01)
    assert q.total.median_to_verified == pytest.approx(107.5, rel=0.01)  # the middle two
    # Finished verifications only (the running and the queued one have no duration).
    assert main.device_seconds == pytest.approx({"cpu": 4 * 57.0, H100: 57.0})
    assert other.device_seconds == pytest.approx({H100: 57.0})
    assert [(d.device, d.verifications) for d in q.devices] == [("cpu", 4), (H100, 2)]
    assert q.devices[0].minutes == pytest.approx(4 * 57 / 60)
    assert q.total.device_minutes == pytest.approx(6 * 57 / 60)
    assert [e.id for e in q.edited] == [3]


def test_an_empty_database_has_no_figures(settings):
    with session_scope(settings.resolved_database_url) as session:
        q = quality(session)
        assert headline(read_totals(session, ("quality:all",)).figures).landed_rate is None
    assert (q.by_signature, q.by_codemod, q.devices, q.edited) == ([], [], [], [])
    assert q.total.opened == 0 and q.total.median_to_verified is None


@pytest.fixture
def client(settings):
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def test_quality_page_and_header_show_the_figures(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        seed_outcomes(session)
    page = client.get("/quality")
    assert page.status_code == 200
    html = page.text
    assert 'id="landed-rate">29%<' in html  # 2 of 7 decided
    assert "merged exactly as the bot pushed them and not reverted" in html
    row = html[html.index('data-signature="contract-forward-override"') :]
    cells = row[: row.index("</tr>")]
    with session_scope(settings.resolved_database_url) as session:
        median = {o.key: o for o in quality(session).by_signature}[
            "contract-forward-override"
        ].median_to_verified
    for value in ("7", "2", "1", "17%", duration_text(median)):
        assert f">{value}<" in cells, (value, cells)
    assert f"{H100}" in html and "3.8 min" in html  # cpu: 4 verifications of 57 s
    assert 'href="/fixes/3"' in html
    home = client.get("/").text
    assert 'href="/quality"' in home and "29%" in home


def test_fix_page_shows_the_human_edits_escaped(settings, client):
    with session_scope(settings.resolved_database_url) as session:
        fixes = seed_outcomes(session)
        edited, unchanged = fixes[3].id, fixes[1].id
    html = client.get(f"/fixes/{edited}").text
    assert "Merged after human edits" in html
    section = html[html.index('id="human-edits"') :]
    assert "<script>alert(1)</script>" not in section and "&lt;script&gt;" in section
    assert 'class="diff"' in section
    assert "Merged as the bot pushed it" in client.get(f"/fixes/{unchanged}").text
