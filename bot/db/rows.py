"""The typed boundary: findings, contracts and violations as JSON column values, and back.

The columns stay JSON (``reports.findings``, ``repair_runs.contract``, ``fixes.violations`` and
``fixes.violation_keys``), so the API and the dashboard show what is stored as it is. Code that
acts on them (the pipeline, the runner, the forges) reads and writes them only through this
module, as ``fixers`` types: ``Finding``, ``Contract``, ``Violation``. Nothing else knows the
JSON shape.

Readers are forgiving, like the dashboard: a row written by an older release (or seeded by a
test) with keys missing reads with the dataclass defaults, and unknown keys are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, fields
from typing import Any

from bot.db.inert_text import code_span
from bot.db.models import CiFailure, RepairRun
from fixers.check.introduced import identity
from fixers.classify.failures import Finding, Frame
from fixers.classify.findings_json import finding_to_dict
from fixers.contracts.model import Contract
from fixers.sweep.violation_types import Violation

_CONTRACT_FIELDS = frozenset(f.name for f in fields(Contract))


# ----- findings (reports.findings) ---------------------------------------------------------------
def finding_to_row(finding: Finding) -> dict[str, Any]:
    """A finding as stored: the shape of ``repairbot classify --json``
    (``fixers.classify.findings_json``), frames as ``path:line``."""
    return finding_to_dict(finding)


def finding_from_row(row: Mapping[str, Any]) -> Finding:
    """Inverse of :func:`finding_to_row` (a frame keeps its ``path:line``, the only part stored)."""
    return Finding(
        signature=str(row.get("signature") or ""),
        fixer=_text_or_none(row.get("fixer")),
        exception_type=_text_or_none(row.get("exception_type")),
        message=str(row.get("message") or ""),
        class_name=_text_or_none(row.get("class_name")),
        captures={str(k): str(v) for k, v in (row.get("captures") or {}).items()},
        missing_methods=tuple(str(m) for m in row.get("missing_methods") or ()),
        frame=_frame(row.get("frame")),
        class_frame=_frame(row.get("class_frame")),
        tests=_texts(row.get("tests")),
        stages=_texts(row.get("stages")),
        gpu_types=_texts(row.get("gpu_types")),
        evidence=str(row.get("evidence") or ""),
        log_line=str(row.get("log_line") or ""),
    )


def store_findings(report: CiFailure, findings: Iterable[Finding]) -> None:
    """Set ``report.findings`` from typed findings."""
    report.findings = [finding_to_row(finding) for finding in findings]


def findings_of(report: CiFailure) -> list[Finding]:
    """``report.findings`` as typed findings (anything that is not a JSON object is skipped)."""
    return [finding_from_row(row) for row in report.findings or [] if isinstance(row, Mapping)]


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _texts(value: Any) -> list[str]:
    return [str(item) for item in value or []]


def _frame(value: Any) -> Frame | None:
    if isinstance(value, Mapping):  # an unflattened frame (asdict) reads too
        try:
            function = value.get("function")
            return Frame(str(value["path"]), int(value["line"]), _text_or_none(function))
        except (KeyError, TypeError, ValueError):
            return None
    if not isinstance(value, str):
        return None
    path, _, line = value.rpartition(":")
    return Frame(path, int(line)) if path and line.isdigit() else None


# ----- contracts (repair_runs.contract; {} for a run with nothing to fix) ------------------------
def contract_to_row(contract: Contract | None) -> dict[str, Any]:
    """A contract as stored (``{}``: none, the run of an unfixable report)."""
    if contract is None:
        return {}
    data = asdict(contract)
    data["metadata_params"] = list(contract.metadata_params)
    return data


def contract_from_row(row: Mapping[str, Any] | None) -> Contract | None:
    """Inverse of :func:`contract_to_row`."""
    if not row:
        return None
    data = {key: value for key, value in row.items() if key in _CONTRACT_FIELDS}
    data["metadata_params"] = tuple(data.get("metadata_params", ()))
    return Contract(**data)


def contract_of(run: RepairRun) -> Contract | None:
    """The contract a run repairs (None: the run has none, it was never fixable)."""
    return contract_from_row(run.contract)


# ----- violations (fixes.violation_keys and fixes.violations) ------------------------------------
def violation_key(violation: Violation) -> str:
    """A violation's identity across commits (line numbers move, these do not), as stored in
    ``fixes.violation_keys`` (one definition: :func:`fixers.check.introduced.identity`)."""
    return identity(violation)


def violation_keys(violations: Iterable[Violation]) -> list[str]:
    """The sorted, distinct identities of ``violations``."""
    return sorted({violation_key(v) for v in violations})


def violation_line(violation: Violation) -> str:
    """```path:line` `Class` (kind)``, as stored in ``fixes.violations`` and written into PR
    bodies and comments: path and class as code spans (``bot.db.inert_text``), so a hostile
    file name stays inert (the dashboard reads the class, the last span, back out of it)."""
    return (
        f"{code_span(violation.location())} {code_span(violation.class_qualname)} "
        f"({violation.kind})"
    )


def violation_lines(violations: Sequence[Violation]) -> list[str]:
    """:func:`violation_line` for each violation, in order."""
    return [violation_line(v) for v in violations]
