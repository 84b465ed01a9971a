"""Jenkins ``testReport`` JSON (``suites[].cases[]``) → failures."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fixers.classify.failures import Failure
from fixers.intake.errors import IntakeError, describe_validation_error
from fixers.intake.stages import gpu_type_of
from fixers.intake.testids import node_id

FAILING_STATUSES = frozenset({"FAILED", "REGRESSION"})


class TestCase(BaseModel):
    """One case of a Jenkins test report (only the fields repairbot reads)."""

    model_config = ConfigDict(extra="ignore")

    class_name: str = Field(default="", alias="className")
    name: str
    status: str
    error_details: str | None = Field(default=None, alias="errorDetails")
    error_stack_trace: str | None = Field(default=None, alias="errorStackTrace")
    stdout: str | None = None
    stderr: str | None = None


class TestSuite(BaseModel):
    """One suite of a Jenkins test report."""

    model_config = ConfigDict(extra="ignore")

    name: str | None = None
    cases: list[TestCase] = Field(default_factory=list)


class TestReport(BaseModel):
    """Jenkins' ``/testReport/api/json`` document."""

    model_config = ConfigDict(extra="ignore")

    suites: list[TestSuite]


def failures_from_testreport(document: Any, *, stage: str | None = None) -> list[Failure]:
    """Failures of every FAILED or REGRESSION case."""
    try:
        report = TestReport.model_validate(document)
    except ValidationError as exc:
        raise IntakeError(f"invalid Jenkins testReport: {describe_validation_error(exc)}") from exc
    return [
        Failure(
            test_id=node_id(case.class_name, case.name),
            error_text=case.error_details or "",
            stack_trace=case.error_stack_trace or "",
            stage=stage,
            gpu_type=gpu_type_of(stage),
            log_excerpt="\n".join(text for text in (case.stdout, case.stderr) if text),
        )
        for suite in report.suites
        for case in suite.cases
        if case.status.upper() in FAILING_STATUSES
    ]
