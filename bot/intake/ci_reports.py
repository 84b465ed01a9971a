"""Recording a CI failure report: dedupe, store its delivery and row, queue its triage.

One function for every way a report arrives — posted to ``/api/v1/ci-failures``, fetched from a
Jenkins build a GitHub event links, or downloaded as a GitHub Actions job's log. Callers read
and check their input; :func:`record_ci_report` does the rest in the caller's transaction, and
triage is sent once that transaction commits.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from io import BytesIO
from uuid import uuid4

from sqlalchemy import insert
from sqlalchemy.orm import Session

from bot.db.crud import KnownReports, NewDelivery, find_report, find_reports, insert_deliveries
from bot.db.models import CiFailure
from bot.db.session import Reading, Writes
from bot.queue.starts import start_triage
from fixers.intake import FailureReport, Format, IntakeError, read_report

DELIVERY_KEY_CHARS = 200  # deliveries.key


@dataclass(frozen=True)
class ReportSource:
    """What a report says about itself besides its failures: who sent it, for which build.

    ``idempotency_key``, else ``pipeline`` with ``build_number``, identify it: a second report
    with either is a duplicate of the first. ``delivery_key`` is the key of its stored body;
    None derives one as a posted report's (:func:`delivery_key`).
    """

    pipeline: str | None = None
    build_number: int | None = None
    idempotency_key: str | None = None
    delivery_key: str | None = None
    build_url: str | None = None
    repository: str | None = None
    pr_number: int | None = None
    head_sha: str | None = None
    base_ref: str | None = None
    base_sha: str | None = None
    stage: str | None = None


@dataclass(frozen=True)
class CiReport:
    """A CI failure report to record: where it came from, its raw body, and what it says."""

    source: ReportSource
    body: bytes
    parsed: FailureReport


class Recording(StrEnum):
    """How :func:`record_ci_report` ended."""

    RECORDED = "recorded"  # a new report; triage is queued after the commit
    DUPLICATE = "duplicate"  # the same report was recorded before
    IN_FLIGHT = "in_flight"  # its body is stored, its row not yet: another request is storing it


@dataclass(frozen=True)
class RecordedReport:
    """The outcome, and the report row: the new one, the earlier one, None while in flight."""

    outcome: Recording
    report: CiFailure | None


def delivery_key(key: str) -> str:
    """The deliveries.key for a CI report key: itself, or a digest when it would not fit.

    Never a truncation: two long keys sharing a prefix must stay two deliveries.
    """
    full = f"ci:{key}"
    if len(full) <= DELIVERY_KEY_CHARS:
        return full
    return "ci:sha256:" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def known_report(session: Session, source: ReportSource) -> CiFailure | None:
    """The report recorded earlier with the same idempotency key, or pipeline and build."""
    return find_report(
        session,
        idempotency_key=source.idempotency_key,
        pipeline=source.pipeline,
        build_number=source.build_number,
    )


def record_ci_report(session: Session, report: CiReport) -> RecordedReport:
    """Record ``report`` unless it is known, and queue its triage after ``session`` commits.

    The body is stored first as a ``ci`` delivery whose unique key settles a race between two
    requests carrying the same report: the second finds the key taken (``IN_FLIGHT``).
    """
    return record_ci_reports(session, [report])[0]


def record_ci_reports(session: Session, reports: Sequence[CiReport]) -> list[RecordedReport]:
    """:func:`record_ci_report` for many at once: one query for the known ones, one INSERT for
    the bodies, one flush for the rows; one outcome each, in order.

    A report repeated within ``reports`` (the same idempotency key, or pipeline and build) is
    stored once: the later ones answer as its duplicates.
    """
    sources = [report.source for report in reports]
    known = find_reports(
        session,
        keys=[s.idempotency_key for s in sources if s.idempotency_key],
        builds=[build for s in sources if (build := _build(s)) is not None],
    )
    first_of: dict[object, int] = {}  # an identity → the first report in the batch with it
    repeats: dict[int, int] = {}  # a later report → that first one
    fresh: list[int] = []
    for i, source in enumerate(sources):
        identities = _identities(source)
        if _earlier(known, source) is None:
            first = next((first_of[k] for k in identities if k in first_of), None)
            if first is None:
                fresh.append(i)
                first_of.update(dict.fromkeys(identities, i))
            else:
                repeats[i] = first
    keys = {i: _delivery_key(sources[i]) for i in fresh}  # once: a keyless report's is random
    stored = insert_deliveries(session, [_new_delivery(reports[i], keys[i]) for i in fresh])
    values = {i: _report_row(reports[i], stored[keys[i]]) for i in fresh if keys[i] in stored}
    rows = dict(zip(values, _insert_rows(session, list(values.values())), strict=True))
    for row in rows.values():
        start_triage(session, row.id)
    return [_recorded(i, known, rows, repeats, sources[i]) for i in range(len(reports))]


def _recorded(
    i: int,
    known: KnownReports,
    rows: dict[int, CiFailure],
    repeats: dict[int, int],
    source: ReportSource,
) -> RecordedReport:
    earlier = _earlier(known, source)
    if earlier is not None:
        return RecordedReport(Recording.DUPLICATE, earlier)
    if i in repeats:
        first = rows.get(repeats[i])
        return RecordedReport(Recording.DUPLICATE if first else Recording.IN_FLIGHT, first)
    if i in rows:
        return RecordedReport(Recording.RECORDED, rows[i])
    return RecordedReport(Recording.IN_FLIGHT, None)


def _build(source: ReportSource) -> tuple[str, int] | None:
    if source.pipeline and source.build_number is not None:
        return source.pipeline, source.build_number
    return None


def _identities(source: ReportSource) -> list[object]:
    build = _build(source)
    return [
        *([("key", source.idempotency_key)] if source.idempotency_key else []),
        *([("build", build)] if build is not None else []),
    ]


def _earlier(known: KnownReports, source: ReportSource) -> CiFailure | None:
    """The stored report ``source`` repeats: by idempotency key first, then by build."""
    if source.idempotency_key and source.idempotency_key in known.by_key:
        return known.by_key[source.idempotency_key]
    build = _build(source)
    return known.by_build.get(build) if build is not None else None


def _new_delivery(report: CiReport, key: str) -> NewDelivery:
    return NewDelivery("ci", key, "ci_failure", None, report.body)


def fetch_report(
    reading: Reading,
    source: ReportSource,
    *,
    label: str,
    fetch: Callable[[], bytes],
    format: Format,
    refused: Callable[[str], Exception],
) -> Writes | str:
    """A report the bot fetches itself (a Jenkins testReport, an Actions job log), fetched and
    parsed with no write lock held: what records it, or why there is nothing to record (it is
    known: nothing is fetched). A document that does not parse raises ``refused``."""
    with reading() as session:
        if known_report(session, source) is not None:
            return f"{label} is already known"
    body = fetch()
    try:
        parsed = read_report(BytesIO(body), format=format, stage=source.stage)
    except IntakeError as exc:
        raise refused(f"{label}: {exc}") from exc
    report = CiReport(source, body, parsed)

    def record(session: Session) -> str:
        recorded = record_ci_report(session, report)
        if recorded.outcome is Recording.DUPLICATE:
            return f"{label} is already known"
        if recorded.report is None:
            return f"{label} is already stored"
        failures = len(parsed.failures)
        return (
            f"report #{recorded.report.id} from {label} ({failures} failure(s), {len(body)} bytes)"
        )

    return record


def _delivery_key(source: ReportSource) -> str:
    if source.delivery_key is not None:
        return source.delivery_key
    key = source.idempotency_key or (
        f"{source.pipeline}#{source.build_number}"
        if source.pipeline and source.build_number is not None
        else None
    )
    return delivery_key(key or str(uuid4()))


def _insert_rows(session: Session, values: list[dict[str, object]]) -> list[CiFailure]:
    """The rows inserted in one statement, in order: an ORM bulk INSERT ... RETURNING (the unit
    of work's flush cost about 0.2 ms of CPU per report)."""
    if not values:
        return []
    inserted = session.scalars(
        insert(CiFailure).returning(CiFailure, sort_by_parameter_order=True), values
    )
    return list(inserted)


def _report_row(report: CiReport, delivery_id: int) -> dict[str, object]:
    source = report.source
    return dict(
        delivery_id=delivery_id,
        idempotency_key=source.idempotency_key,
        pipeline=source.pipeline,
        build_number=source.build_number,
        build_url=source.build_url,
        repository=source.repository,
        pr_number=source.pr_number,
        head_sha=source.head_sha,
        base_ref=source.base_ref,
        base_sha=source.base_sha,
        stage=source.stage,
        format=report.parsed.format.value,
        failure_count=len(report.parsed.failures),
        findings=[],
    )
