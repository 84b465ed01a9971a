"""The normalised records every intake format produces and the classifier consumes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Failure:
    """One failed test or collection error, as reported by CI.

    ``test_id`` is None for failures that belong to no test (a crash in the log outside pytest).
    """

    test_id: str | None
    error_text: str
    stack_trace: str = ""
    stage: str | None = None
    gpu_type: str | None = None
    log_excerpt: str = ""
    # The log line the failure was found on, as the CI printed it (timestamp, branch, ...
    # included): evidence for a reader of the raw log, never matched against signatures.
    log_line: str = ""

    @property
    def full_text(self) -> str:
        """Everything the classifier may search, root causes included."""
        parts = [self.stack_trace]
        if self.error_text not in self.stack_trace:
            parts.append(self.error_text)
        parts.append(self.log_excerpt)
        return "\n".join(part for part in parts if part)


@dataclass(frozen=True)
class Frame:
    """One traceback frame: where the code ran."""

    path: str
    line: int
    function: str | None = None
    source: str | None = None

    def location(self) -> str:
        """``path:line``, as editors and reviewers read it."""
        return f"{self.path}:{self.line}"


JOB = "job"
TEST = "test"


@dataclass
class Finding:
    """One root cause: a signature match plus every test, stage and GPU type it broke."""

    signature: str
    fixer: str | None
    exception_type: str | None
    message: str
    class_name: str | None = None
    captures: dict[str, str] = field(default_factory=dict)
    missing_methods: tuple[str, ...] = ()
    frame: Frame | None = None
    class_frame: Frame | None = None
    tests: list[str] = field(default_factory=list)
    stages: list[str] = field(default_factory=list)
    gpu_types: list[str] = field(default_factory=list)
    evidence: str = ""
    log_line: str = ""

    @property
    def kind(self) -> str:
        """``test`` when the finding names the tests that failed; ``job`` when no test id
        belongs to it: the job failed for it with no test failing (lint errors, a full disk,
        pytest running no test, a crash outside any test)."""
        return TEST if self.tests else JOB
