"""repairbot's own *failure analysis* document: what a pipeline posts when it fails.

The JSON Schema published at ``fixers/schemas/failure-analysis.schema.json`` is generated from
these models (``scripts/write_schema.py``) and checked against them by the tests.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fixers.classify.failures import Failure
from fixers.intake.errors import IntakeError, describe_validation_error
from fixers.intake.stages import gpu_type_of
from fixers.repo.input_rules import MAX_SQL_INT, SAFE_NAME, GitRefName, HttpLink, OneLine

SCHEMA_ID = "https://repairbot.dev/schemas/failure-analysis.schema.json"


class StageResult(BaseModel):
    """One stage of the pipeline run."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="Stage name, e.g. H100_PCIe-PyTorch-1")
    gpu_type: str | None = Field(
        default=None,
        description="GPU type; derived from the name if absent",
        # It becomes part of a broker queue name (gpu.<TYPE>) and of the broker's file names.
        pattern=SAFE_NAME.pattern,
    )
    result: str = Field(description="SUCCESS, FAILURE, UNSTABLE, ABORTED, ...")


class FailedTest(BaseModel):
    """One failed test or collection error."""

    model_config = ConfigDict(extra="forbid")

    test: OneLine | None = Field(
        default=None,
        description="pytest node id (no control characters); null for a non-test failure",
    )
    stage: str | None = None
    error_details: str = Field(default="", description="The exception line(s)")
    stack_trace: str = ""
    stdout: str = ""


class FailureAnalysis(BaseModel):
    """A CI run's failure analysis, as posted to ``POST /api/v1/ci-failures``."""

    model_config = ConfigDict(extra="forbid", title="repairbot failure analysis")

    pipeline: str = Field(min_length=1, description="Pipeline name, e.g. L0_MergeRequest_PR")
    build_number: int = Field(ge=0, le=MAX_SQL_INT)
    build_url: HttpLink | None = Field(default=None, description="http(s) link to the CI build")
    repository: str | None = Field(default=None, description="owner/name, a path or a file:// URL")
    pr_number: int | None = Field(default=None, ge=1, le=MAX_SQL_INT)
    head_sha: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,64}$")
    base_ref: GitRefName | None = Field(
        default=None, description="Branch the PR targets, e.g. main"
    )
    base_sha: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,64}$")
    stages: list[StageResult] = Field(default_factory=list)
    failures: list[FailedTest] = Field(default_factory=list)
    analysis_text: str = ""
    log_excerpt: str = ""


def parse_analysis(document: Any) -> FailureAnalysis:
    """Validate a decoded JSON document as a failure analysis."""
    try:
        return FailureAnalysis.model_validate(document)
    except ValidationError as exc:
        raise IntakeError(f"invalid failure analysis: {describe_validation_error(exc)}") from exc


def failures_from_analysis(analysis: FailureAnalysis) -> list[Failure]:
    """The analysis' failures, each with the GPU type of its stage."""
    stage_gpu = {stage.name: stage.gpu_type or gpu_type_of(stage.name) for stage in analysis.stages}
    return [
        Failure(
            test_id=failed.test,
            error_text=failed.error_details,
            stack_trace=failed.stack_trace,
            stage=failed.stage,
            gpu_type=stage_gpu.get(failed.stage or "") or gpu_type_of(failed.stage),
            log_excerpt=failed.stdout,
        )
        for failed in analysis.failures
    ]


def json_schema() -> dict[str, Any]:
    """The published JSON Schema of the failure analysis document."""
    schema = FailureAnalysis.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
