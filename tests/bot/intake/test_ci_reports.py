"""``bot.intake.ci_reports``: a CI report recorded once, its triage sent after the commit
(SQLite and PostgreSQL, the real filesystem broker)."""

from __future__ import annotations

from functools import partial
from io import BytesIO
from pathlib import Path

import pytest
from sqlalchemy import func, select

from bot.db.crud import insert_delivery
from bot.db.models import CiFailure, Delivery
from bot.db.session import read_scope, session_scope
from bot.intake.ci_reports import (
    CiReport,
    Recording,
    ReportSource,
    delivery_key,
    fetch_report,
    known_report,
    record_ci_report,
    record_ci_reports,
)
from bot.queue import names as task_names
from fixers.intake import Format, read_report
from tests.bot.intake.broker import sent_tasks, tasks_to_run

LOG = (
    Path(__file__).parents[2] / "fixtures" / "logs" / "py312" / "contract_override.console.txt"
).read_bytes()
PARSED = read_report(BytesIO(LOG), format=Format.CONSOLE)


@pytest.fixture
def queued(settings, task_settings):
    """The parametrised settings; what is sent goes to their broker folder."""
    return task_settings(settings)


def _report(**source: object) -> CiReport:
    return CiReport(ReportSource(**source), LOG, PARSED)  # type: ignore[arg-type]


def _record(settings, report: CiReport):
    with session_scope(settings.resolved_database_url) as session:
        recorded = record_ci_report(session, report)
        row = recorded.report
        return recorded.outcome, (row.id if row is not None else None)


def _counts(settings) -> tuple[int, int]:
    with session_scope(settings.resolved_database_url) as session:
        reports = session.scalar(select(func.count(CiFailure.id)))
        deliveries = session.scalar(select(func.count(Delivery.id)))
    return int(reports or 0), int(deliveries or 0)


def test_a_new_report_is_stored_with_its_body_and_triage_is_sent_after_the_commit(queued):
    report = _report(
        pipeline="L0_MergeRequest_PR",
        build_number=5,
        build_url="https://ci.example/job/L0_MergeRequest_PR/5/",
        repository="acme/trt",
        pr_number=12,
        head_sha="a" * 40,
        base_ref="main",
        base_sha="b" * 40,
        stage="H100_PCIe-PyTorch-1",
    )
    with session_scope(queued.resolved_database_url) as session:
        recorded = record_ci_report(session, report)
        assert recorded.outcome is Recording.RECORDED and recorded.report is not None
        report_id = recorded.report.id
        assert sent_tasks(queued) == []  # not before the commit
    assert sent_tasks(queued) == [(task_names.TRIAGE, [report_id])]
    with session_scope(queued.resolved_database_url) as session:
        row = session.get_one(CiFailure, report_id)
        delivery = session.get_one(Delivery, row.delivery_id)
        assert (row.pipeline, row.build_number, row.pr_number, row.stage, row.base_ref) == (
            "L0_MergeRequest_PR",
            5,
            12,
            "H100_PCIe-PyTorch-1",
            "main",
        )
        assert (row.format, row.failure_count, row.findings) == (
            "console",
            len(PARSED.failures),
            [],
        )
        assert row.idempotency_key is None and row.classified_at is None
        assert (delivery.source, delivery.key, delivery.event, delivery.action) == (
            "ci",
            "ci:L0_MergeRequest_PR#5",
            "ci_failure",
            None,
        )
        assert delivery.content() == LOG and delivery.outcome == "stored"


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ({"idempotency_key": "k-1"}, {"idempotency_key": "k-1", "pipeline": "other"}),
        ({"pipeline": "L0", "build_number": 7}, {"pipeline": "L0", "build_number": 7}),
        (
            {"pipeline": "L0", "build_number": 7},
            {"idempotency_key": "new", "pipeline": "L0", "build_number": 7},
        ),
    ],
    ids=["same-idempotency-key", "same-pipeline-build", "new-key-same-build"],
)
def test_a_known_report_is_a_duplicate_of_the_first(queued, first, again):
    outcome, first_id = _record(queued, _report(**first))
    assert outcome is Recording.RECORDED
    assert _record(queued, _report(**again)) == (Recording.DUPLICATE, first_id)
    assert _counts(queued) == (1, 1)
    assert sent_tasks(queued) == [(task_names.TRIAGE, [first_id])]  # triage sent once
    with session_scope(queued.resolved_database_url) as session:
        found = known_report(session, ReportSource(**again))  # type: ignore[arg-type]
        assert found is not None and found.id == first_id


def test_a_report_whose_body_another_request_is_storing_is_in_flight(queued):
    with session_scope(queued.resolved_database_url) as session:
        insert_delivery(
            session, source="ci", key="ci:L0#9", event="ci_failure", action=None, body=b""
        )
    assert _record(queued, _report(pipeline="L0", build_number=9)) == (Recording.IN_FLIGHT, None)
    assert _counts(queued) == (0, 1) and sent_tasks(queued) == []


def test_nothing_is_sent_when_the_transaction_rolls_back(queued):
    with (
        pytest.raises(RuntimeError, match="later step failed"),
        session_scope(queued.resolved_database_url) as session,
    ):
        record_ci_report(session, _report(pipeline="L0", build_number=3))
        raise RuntimeError("a later step failed")
    assert _counts(queued) == (0, 0) and sent_tasks(queued) == []


def _stored_key(settings, report_id: int) -> str:
    with session_scope(settings.resolved_database_url) as session:
        return session.get_one(Delivery, session.get_one(CiFailure, report_id).delivery_id).key


def test_the_delivery_key_is_given_or_derived_like_a_posted_reports(queued):
    _, given = _record(queued, _report(idempotency_key="github-actions:x", delivery_key="gha:x"))
    _, keyed = _record(queued, _report(idempotency_key="idem-1", pipeline="L0", build_number=1))
    _, anonymous = _record(queued, _report())
    assert _stored_key(queued, given) == "gha:x"
    assert _stored_key(queued, keyed) == "ci:idem-1"
    assert (
        _stored_key(queued, anonymous).startswith("ci:")
        and len(_stored_key(queued, anonymous)) == 39
    )


def test_long_keys_become_digests_never_truncations():
    assert delivery_key("L0#5") == "ci:L0#5"
    long_a, long_b = "x" * 300 + "a", "x" * 300 + "b"
    assert delivery_key(long_a) != delivery_key(long_b)
    assert delivery_key(long_a).startswith("ci:sha256:") and len(delivery_key(long_a)) == 74


class Refused(ValueError):
    pass


def test_a_fetched_document_that_does_not_parse_is_refused_and_nothing_is_stored(queued):
    source = ReportSource(pipeline="L0_MergeRequest_PR", build_number=11)
    with pytest.raises(Refused, match=r"L0_MergeRequest_PR#11: "):
        fetch_report(
            partial(read_scope, queued.resolved_database_url),
            source,
            label="L0_MergeRequest_PR#11",
            fetch=lambda: b"\xff{ not a testReport",
            format=Format.TESTREPORT,
            refused=Refused,
        )
    assert _counts(queued) == (0, 0)


def test_a_known_report_is_not_fetched_again(queued):
    source = ReportSource(pipeline="L0_MergeRequest_PR", build_number=12)
    fetched: list[int] = []

    def fetch() -> bytes:
        fetched.append(1)
        return LOG

    def record() -> str:
        fetched_report = fetch_report(
            partial(read_scope, queued.resolved_database_url),
            source,
            label="#12",
            fetch=fetch,
            format=Format.CONSOLE,
            refused=Refused,
        )
        if isinstance(fetched_report, str):
            return fetched_report
        with session_scope(queued.resolved_database_url) as session:
            return fetched_report(session)

    assert record().startswith("report #")
    assert record() == "#12 is already known"
    assert fetched == [1] and _counts(queued) == (1, 1)


def test_a_batch_stores_each_report_once_and_answers_repeats_as_duplicates(queued):
    earlier = _record(queued, _report(idempotency_key="seen-before"))[1]
    batch = [
        _report(idempotency_key="k1"),
        _report(idempotency_key="k1"),  # the same key later in the batch
        _report(pipeline="L0", build_number=7),
        _report(pipeline="L0", build_number=7, idempotency_key="k2"),  # same build, other key
        _report(idempotency_key="seen-before"),  # stored by an earlier request
        _report(),  # nothing to identify it: always new
        _report(),
    ]
    with session_scope(queued.resolved_database_url) as session:
        recorded = record_ci_reports(session, batch)
        outcomes = [(r.outcome, r.report.id if r.report else None) for r in recorded]
    first, build = outcomes[0][1], outcomes[2][1]
    assert [o for o, _ in outcomes] == [
        Recording.RECORDED,
        Recording.DUPLICATE,
        Recording.RECORDED,
        Recording.DUPLICATE,
        Recording.DUPLICATE,
        Recording.RECORDED,
        Recording.RECORDED,
    ]
    assert [i for _, i in outcomes[:5]] == [first, first, build, build, earlier]
    assert len({i for _, i in outcomes}) == 5  # earlier, k1, the build, two keyless
    assert _counts(queued) == (5, 5)  # one body per stored report
    new = sorted(i for o, i in outcomes if o is Recording.RECORDED)
    # Earlier's triage, then the batch's in one dispatch message.
    assert sorted(args[0] for _, args in tasks_to_run(queued))[1:] == new
