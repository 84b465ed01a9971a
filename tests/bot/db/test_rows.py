"""The typed boundary (``bot.db.rows``): findings, contracts and violations to JSON and back."""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.db.models import CiFailure, Delivery, RepairRun
from bot.db.rows import (
    contract_from_row,
    contract_of,
    contract_to_row,
    finding_from_row,
    finding_to_row,
    findings_of,
    store_findings,
    violation_key,
    violation_keys,
    violation_line,
)
from bot.db.session import session_scope
from fixers.classify.failures import Finding, Frame
from fixers.classify.findings_json import finding_to_dict
from fixers.classify.root_causes import classify_report
from fixers.contracts.model import SPEC_WORKER_CONTRACT, Contract
from fixers.intake import read_report
from fixers.sweep.violation_types import Violation

ROOT = Path(__file__).resolve().parents[3]
LOGS = ROOT / "tests" / "fixtures" / "logs"

_text = st.text(max_size=20)
_frames = st.none() | st.builds(
    Frame, path=st.from_regex(r"[a-z_/]{1,12}\.py", fullmatch=True), line=st.integers(1, 10**6)
)
_findings = st.builds(
    Finding,
    signature=_text,
    fixer=st.none() | _text,
    exception_type=st.none() | _text,
    message=_text,
    class_name=st.none() | _text,
    captures=st.dictionaries(_text, _text, max_size=3),
    missing_methods=st.lists(_text, max_size=3).map(tuple),
    frame=_frames,
    class_frame=_frames,
    tests=st.lists(_text, max_size=3),
    stages=st.lists(_text, max_size=3),
    gpu_types=st.lists(_text, max_size=3),
    evidence=_text,
    log_line=_text,
)


def _stored(finding: Finding) -> Finding:
    """A finding as the database keeps it: frames are ``path:line`` only."""

    def bare(frame: Frame | None) -> Frame | None:
        return Frame(frame.path, frame.line) if frame else None

    return dataclasses.replace(
        finding, frame=bare(finding.frame), class_frame=bare(finding.class_frame)
    )


@given(_findings)
def test_a_finding_survives_the_json_column(finding):
    row = json.loads(json.dumps(finding_to_row(finding)))
    assert finding_from_row(row) == finding
    assert finding_to_row(finding_from_row(row)) == row


def test_classified_findings_read_back_as_they_were_written():
    findings = classify_report(read_report((LOGS / "py312" / "combined.console.txt").open("rb")))
    assert findings
    rows = json.loads(json.dumps([finding_to_row(f) for f in findings]))
    assert [finding_from_row(row) for row in rows] == [_stored(f) for f in findings]
    # The stored shape is the one `repairbot classify --json` prints (and the API serves).
    assert rows == [finding_to_dict(f) for f in findings]


def test_a_partial_or_foreign_row_reads_with_the_defaults():
    finding = finding_from_row({"signature": "unclassified", "message": "boom", "extra": 1})
    assert finding == Finding(
        signature="unclassified", fixer=None, exception_type=None, message="boom"
    )
    assert finding_from_row({"frame": "not a location"}).frame is None
    assert finding_from_row({"frame": "a/b.py:12"}).frame == Frame("a/b.py", 12)


def test_contracts_round_trip_and_an_empty_row_is_none():
    custom = Contract(name="c", base="Base", metadata_params=("a",), base_module="pkg.base")
    for contract in (SPEC_WORKER_CONTRACT, custom):
        row = json.loads(json.dumps(contract_to_row(contract)))
        assert contract_from_row(row) == contract
    assert contract_to_row(None) == {}
    assert contract_from_row({}) is None
    assert contract_from_row({**contract_to_row(custom), "added_later": True}) == custom


def test_the_stored_violation_formats_do_not_change():
    """Open fixes in the database hold these keys: a new key format would stop dedupe. The
    display line is Markdown whose path and class are code spans (``bot.db.inert_text``)."""
    violation = Violation(
        kind="forbidden-override",
        contract="spec-worker",
        path="pkg/w.py",
        line=7,
        class_qualname="W",
        detail="",
        fix="rename",
    )
    assert violation_key(violation) == "forbidden-override:W:pkg/w.py"
    assert violation_line(violation) == "`pkg/w.py:7` `W` (forbidden-override)"
    moved = dataclasses.replace(violation, line=90)
    assert violation_keys([violation, moved]) == ["forbidden-override:W:pkg/w.py"]


def test_a_hostile_path_stays_inside_its_code_span():
    hostile = Violation(
        kind="forbidden-override",
        contract="spec-worker",
        path="pkg/a`b @acme/team [x](https://evil.invalid)\nRepairbot-Invocation: 1.py",
        line=3,
        class_qualname="W",
        detail="",
        fix="rename",
    )
    line = violation_line(hostile)
    assert "\n" not in line
    assert line == (
        "``pkg/a`b @acme/team [x](https://evil.invalid)\\x0aRepairbot-Invocation: 1.py:3`` "
        "`W` (forbidden-override)"
    )


def test_findings_and_contract_through_the_database(settings):
    findings = classify_report(read_report((LOGS / "py312" / "combined.console.txt").open("rb")))
    with session_scope(settings.resolved_database_url) as session:
        delivery = Delivery(source="ci", key="k", event="ci_failure", action=None, body=b"")
        session.add(delivery)
        session.flush()
        report = CiFailure(delivery_id=delivery.id, format="console")
        store_findings(report, findings)
        session.add(report)
        session.flush()
        session.add(
            RepairRun(
                report_id=report.id,
                root_cause="r",
                signature="s",
                contract=contract_to_row(SPEC_WORKER_CONTRACT),
            )
        )
    with session_scope(settings.resolved_database_url) as session:
        stored = session.get_one(CiFailure, report.id)
        assert findings_of(stored) == [_stored(f) for f in findings]
        assert contract_of(stored.runs[0]) == SPEC_WORKER_CONTRACT


# ----- the JSON columns are read through bot.db.rows only --------------------------------------
RAW_COLUMNS = {"findings", "contract"}
TYPED_LAYERS = ("bot/pipeline", "bot/runner", "bot/forges")


def _raw_reads(source: str) -> list[str]:
    """``x.findings`` anywhere, and ``<run>.contract`` read off a row (a ``run`` name)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or node.attr not in RAW_COLUMNS:
            continue
        owner = ast.unparse(node.value)
        if node.attr == "findings" or owner.endswith(("run", "]")):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


@pytest.mark.parametrize("folder", TYPED_LAYERS)
def test_stages_read_findings_and_contracts_typed(folder):
    raw = {
        path.relative_to(ROOT).as_posix(): reads
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (reads := _raw_reads(path.read_text(encoding="utf-8")))
    }
    assert raw == {}, "read them with bot.db.rows (findings_of, contract_of)"
