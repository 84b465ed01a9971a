"""``/repairbot unsuppress`` through signed ``issue_comment`` deliveries and the real
``process_delivery``: a writer lifts the suppression on a closed fix PR and its latest held run is
queued for repair again; a reader is refused and nothing changes; on a PR with nothing held the
reply says so."""

from __future__ import annotations

from sqlalchemy import select

from bot.db.models import (
    CommandInvocation,
    Fix,
    RepairRun,
    RunState,
    Suppression,
    SuppressionReason,
)
from bot.db.records.suppressions import suppress
from bot.db.session import session_scope
from bot.queue import names as task_names
from tests.bot.commands.test_dispatch_end_to_end import _replies, _say
from tests.bot.dashboard import seed
from tests.bot.intake.broker import sent_tasks


def _close_and_hold(settings, fix_id: int) -> int:
    """Close the fix as a human would have, record the suppression, and one held run."""
    with session_scope(settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        fix.state = "closed"
        suppress(
            session,
            repository=fix.repository,
            dedupe_key=fix.dedupe_key,
            reason=SuppressionReason.CLOSED_UNMERGED,
            decided_by="carol",
            fix_id=fix.id,
            violation_keys=list(fix.violation_keys),
        )
        report = seed.report(session, n=7, repository=fix.repository)
        run = RepairRun(
            report_id=report.id,
            root_cause="forward-override",
            signature="s",
            state=RunState.SUPPRESSED.value,
            fix_id=fix.id,
        )
        session.add(run)
        session.flush()
        return run.id


def _rows(settings) -> tuple[list[tuple[str | None, str | None]], list[tuple[str, str | None]]]:
    with session_scope(settings.resolved_database_url) as session:
        lifted = [(s.lifted_by, s.decided_by) for s in session.scalars(select(Suppression))]
        runs = [
            (r.state, None if r.fix_id is None else str(r.fix_id))
            for r in session.scalars(select(RepairRun))
        ]
        return lifted, runs


def test_a_writer_lifts_it_and_the_held_run_is_repaired_again(gh_settings, github_api, fix_pr):
    repo, number, fix_id, _head = fix_pr
    run_id = _close_and_hold(gh_settings, fix_id)
    repo.permissions["writer"] = "write"
    _say(gh_settings, github_api, number, "/repairbot unsuppress", login="writer")
    assert _rows(gh_settings) == ([("writer", "carol")], [("classified", None)])
    assert [args for name, args in sent_tasks(gh_settings) if name == task_names.REPAIR] == [
        [run_id]
    ]
    [reply] = _replies(repo, number)
    assert "Lifted (closed unmerged by carol) by @writer" in reply and "a new PR follows" in reply
    with session_scope(gh_settings.resolved_database_url) as session:
        audit = session.scalars(select(CommandInvocation)).one()
        assert (audit.command, audit.outcome, audit.fix_id) == ("unsuppress", "accepted", fix_id)


def test_a_reader_is_refused_and_nothing_changes(gh_settings, github_api, fix_pr):
    repo, number, fix_id, _head = fix_pr
    _close_and_hold(gh_settings, fix_id)
    repo.permissions["reader"] = "read"
    _say(gh_settings, github_api, number, "/repairbot unsuppress", login="reader")
    assert _rows(gh_settings) == ([(None, "carol")], [("suppressed", str(fix_id))])
    assert not [name for name, _ in sent_tasks(gh_settings) if name == task_names.REPAIR]
    [reply] = _replies(repo, number)
    assert "Sorry, not running `/repairbot unsuppress`" in reply and "`read` access" in reply


def test_nothing_held_says_so(gh_settings, github_api, fix_pr):
    repo, number, _fix_id, _head = fix_pr
    repo.permissions["writer"] = "write"
    _say(gh_settings, github_api, number, "/repairbot unsuppress", login="writer")
    [reply] = _replies(repo, number)
    assert "Nothing to lift: no suppression holds the violations of fix #" in reply
