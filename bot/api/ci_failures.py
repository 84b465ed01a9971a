"""``POST /api/v1/ci-failures``: a CI failure report in any supported format."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError
from sqlalchemy.orm import Session

from bot.api.body import read_capped_body
from bot.api.group_write import committed
from bot.config import Settings
from bot.db.group_commit import WriteKind
from bot.db.models import CiFailure
from bot.intake.ci_reports import (
    CiReport,
    RecordedReport,
    Recording,
    ReportSource,
    record_ci_reports,
)
from bot.intake.webhook_auth import could_be_valid, is_valid
from fixers.intake import FailureReport, Format, IntakeError, screen_report, screens_in_place
from fixers.intake.analysis import json_schema as analysis_schema
from fixers.repo.input_rules import MAX_SQL_INT, GitRefName, HttpLink

router = APIRouter()


class ReportMetadata(BaseModel):
    """Query parameters that describe a raw log (console, JUnit, testReport)."""

    format: Format | None = None
    pipeline: str | None = Field(default=None, max_length=200)
    build_number: int | None = Field(default=None, ge=0, le=MAX_SQL_INT)
    build_url: HttpLink | None = Field(default=None, max_length=2000)
    repository: str | None = Field(default=None, max_length=2000)
    pr_number: int | None = Field(default=None, ge=1, le=MAX_SQL_INT)
    head_sha: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,64}$")
    base_ref: GitRefName | None = Field(default=None, max_length=200)
    base_sha: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,64}$")
    stage: str | None = Field(default=None, max_length=200)


MAX_IDEMPOTENCY_KEY = 200


def report_metadata(request: Request) -> ReportMetadata:
    """The query's metadata, validated; 422 as FastAPI words it (each error located in the
    query). Read here rather than declared as a ``Query()`` model: FastAPI's per-field
    resolution of the ten parameters cost about 0.8 ms of CPU per report under wrk."""
    try:
        return ReportMetadata.model_validate(dict(request.query_params))
    except ValidationError as exc:
        errors = [{**error, "loc": ("query", *error["loc"])} for error in exc.errors()]
        raise RequestValidationError(errors) from exc


def _parameters_doc() -> dict[str, Any]:
    """The OpenAPI parameters the route reads itself: the query's fields and the headers."""
    schema = ReportMetadata.model_json_schema()
    query = [
        {"name": name, "in": "query", "required": False, "schema": _inlined(field, schema)}
        for name, field in schema["properties"].items()
    ]
    headers = [
        {"name": name, "in": "header", "required": False, "schema": {"type": "string"}}
        for name in ("Authorization", "X-Repairbot-Signature-256", "Idempotency-Key")
    ]
    return {"parameters": query + headers, "requestBody": _body_doc()}


def _body_doc() -> dict[str, Any]:
    """The bodies the route reads itself: a failure analysis (JSON, its published schema), a
    console log (text) or a JUnit report (XML)."""
    analysis = analysis_schema()
    analysis.pop("$schema", None)
    analysis.pop("$id", None)
    return {
        "required": True,
        "description": "One CI failure: a failure analysis document, a console log or JUnit XML "
        "(the format is detected from the body).",
        "content": {
            "application/json": {"schema": _inlined(analysis, analysis)},
            "text/plain": {"schema": {"type": "string", "description": "a CI console log"}},
            "application/xml": {"schema": {"type": "string", "description": "JUnit XML"}},
        },
    }


def _inlined(field: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """``field`` with its ``$ref``s to the model's ``$defs`` replaced by what they name: in an
    operation's parameters they would resolve against the whole OpenAPI document."""
    defs = schema.get("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/$defs/"):
                return resolve(defs[ref.removeprefix("#/$defs/")])
            return {key: resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(field)
    return resolved


# What CI tools send a report as. ``application/x-www-form-urlencoded`` is curl's default for
# ``--data-binary`` and ``octet-stream`` that of most upload steps: both carry the raw report.
ACCEPTED_MEDIA = frozenset(
    {
        "",
        "application/json",
        "application/xml",
        "text/xml",
        "application/x-www-form-urlencoded",
        "application/octet-stream",
    }
)


def media_type_problem(content_type: str) -> str | None:
    """Why a report cannot be read with this ``Content-Type`` (None: it can)."""
    media = content_type.split(";")[0].strip().lower()
    if media in ACCEPTED_MEDIA or media.startswith("text/") or media.endswith(("+json", "+xml")):
        return None
    return (
        f"unsupported content type {media!r}: send text/plain, application/json or application/xml"
    )


def _bearer_is_valid(settings: Settings, pipeline: str | None, authorization: str | None) -> bool:
    """Whether ``authorization`` carries the pipeline's own token (when it has one) or else the
    shared CI token; compared in constant time."""
    if not authorization or not authorization.startswith("Bearer "):
        return False
    token = authorization.removeprefix("Bearer ").strip().encode()
    candidate = settings.ci_token
    if pipeline and pipeline in settings.ci_pipeline_tokens:
        candidate = settings.ci_pipeline_tokens[pipeline]
    return hmac.compare_digest(token, candidate.get_secret_value().encode())


def _unauthorized() -> HTTPException:
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED,
        "missing or wrong CI credentials",
        # Mostly answered before the body is read: what is left of it is never read, so the
        # connection is closed rather than drained (or reused mid-body).
        headers={"WWW-Authenticate": "Bearer", "Connection": "close"},
    )


def _hmac_to_check(settings: Settings, request: Request) -> str | None:
    """Authenticate what can be before the body is read: None for a valid bearer token, the
    ``X-Repairbot-Signature-256`` to check once the body is in when there is one and an HMAC
    key is configured, else 401 now, without reading a byte of the body.

    Before this, every post was read whole (up to ``max_report_bytes``) before its credentials
    were looked at: 24 concurrent 60 MiB posts with no token took the API from 141 MiB to 1 GB.
    """
    headers = request.headers
    # The same value ``report_metadata`` validates (a repeated parameter: the last one).
    pipeline = request.query_params.get("pipeline")
    if _bearer_is_valid(settings, pipeline, headers.get("authorization")):
        return None
    body_hmac = headers.get("x-repairbot-signature-256")
    if body_hmac and could_be_valid(body_hmac) and settings.ci_hmac_secret is not None:
        return body_hmac
    raise _unauthorized()


def _hmac_is_valid(settings: Settings, body: bytes, body_hmac: str) -> bool:
    key = settings.ci_hmac_secret
    return key is not None and is_valid(key.get_secret_value().encode(), body, body_hmac)


@router.post(
    "/api/v1/ci-failures", status_code=status.HTTP_202_ACCEPTED, openapi_extra=_parameters_doc()
)
async def post_ci_failure(request: Request) -> JSONResponse:
    """Store a failure report and queue its triage; a repeated report answers with the first one."""
    settings: Settings = request.app.state.settings
    body_hmac = _hmac_to_check(settings, request)
    meta = report_metadata(request)
    headers = request.headers
    idempotency_key = headers.get("idempotency-key")
    if idempotency_key is not None and len(idempotency_key) > MAX_IDEMPOTENCY_KEY:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"Idempotency-Key longer than {MAX_IDEMPOTENCY_KEY} characters",
        )
    body = await read_capped_body(
        request, settings.max_report_bytes, settings.read_timeout_s, request.app.state.body_budget
    )
    if body_hmac is not None and not _hmac_is_valid(settings, body, body_hmac):
        raise _unauthorized()
    if not body.strip():
        # `curl --data @missing-file` posts nothing: a report that says nothing is refused, not
        # stored as a failure without failures.
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "the report is empty")
    media_problem = media_type_problem(headers.get("content-type", ""))
    if media_problem is not None:
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, media_problem)
    try:
        parsed = await _screened(body, meta)
    except IntakeError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from exc
    source = _report_source(parsed, meta, idempotency_key)
    if meta.pipeline and source.pipeline != meta.pipeline:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "the token's pipeline and the report's differ"
        )
    report = CiReport(source, body, parsed)
    answer, code = await committed(settings, STORE_REPORTS, report)
    if code == status.HTTP_409_CONFLICT:
        raise HTTPException(code, answer["detail"])
    return JSONResponse(answer, code)


async def _screened(body: bytes, meta: ReportMetadata) -> FailureReport:
    """The report screened before it is stored: console text in place (a scan for NUL; triage
    reads its failures from the stored body), a document parsed in the thread pool.

    In place because the thread pool's round trip, under wrk with 1 MB logs, kept each request
    waiting ~18 ms for a scan that takes 0.02 ms."""
    if screens_in_place(body, meta.format):
        return screen_report(body, format=meta.format, stage=meta.stage)
    return await run_in_threadpool(screen_report, body, format=meta.format, stage=meta.stage)


def _store_all(session: Session, reports: list[CiReport]) -> list[tuple[dict[str, Any], int]]:
    """Record a batch of reports (one query, one INSERT, one flush); each one's answer: 202 when
    new, 200 with the first one when repeated, 409 while another request is storing it."""
    return [_answer_for(recorded) for recorded in record_ci_reports(session, reports)]


STORE_REPORTS = WriteKind("ci reports", _store_all)
IN_FLIGHT = "the same report is being stored right now; retry"


def _answer_for(recorded: RecordedReport) -> tuple[dict[str, Any], int]:
    if recorded.report is None:
        return {"detail": IN_FLIGHT}, status.HTTP_409_CONFLICT
    if recorded.outcome is Recording.DUPLICATE:
        return _answer(recorded.report, duplicate=True), status.HTTP_200_OK
    return _answer(recorded.report, duplicate=False), status.HTTP_202_ACCEPTED


def _report_source(
    parsed: FailureReport, meta: ReportMetadata, idempotency_key: str | None
) -> ReportSource:
    """The report's own metadata (an analysis document's) first, then the query's."""
    doc = parsed.analysis
    return ReportSource(
        idempotency_key=idempotency_key,
        pipeline=doc.pipeline if doc else meta.pipeline,
        build_number=doc.build_number if doc else meta.build_number,
        build_url=(doc.build_url if doc else None) or meta.build_url,
        repository=(doc.repository if doc else None) or meta.repository,
        pr_number=(doc.pr_number if doc else None) or meta.pr_number,
        head_sha=(doc.head_sha if doc else None) or meta.head_sha,
        base_ref=(doc.base_ref if doc else None) or meta.base_ref,
        base_sha=(doc.base_sha if doc else None) or meta.base_sha,
        stage=meta.stage,
    )


def _answer(report: CiFailure, *, duplicate: bool) -> dict[str, Any]:
    return {"report_id": report.id, "url": f"/api/v1/reports/{report.id}", "duplicate": duplicate}
