"""JUnit XML, Jenkins testReport JSON and the failure-analysis document, good and bad."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fixers.intake import Format, IntakeError, detect_format, read_report, screen_report
from fixers.intake.analysis import json_schema
from fixers.intake.testids import node_id

SCHEMA_FILE = Path(__file__).parents[2] / "fixers" / "schemas" / "failure-analysis.schema.json"

JUNIT = b"""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" tests="3">
<testcase classname="" name="tests.test_mtp" time="0.000"><error message="collection failure">tests/test_mtp.py:1: in &lt;module&gt;
E   TypeError: MTPWorker must not override SpecWorkerBase.forward; implement _forward_impl instead.</error></testcase>
<testcase classname="tests.test_stub.TestStub" name="test_make[1]" time="0.001"><failure message="TypeError: Can&apos;t instantiate abstract class _Worker with abstract method _forward_impl">trace</failure><system-out>captured</system-out></testcase>
<testcase classname="tests.test_stub" name="test_ok" time="0.001"/>
</testsuite></testsuites>"""


def _read(data: bytes, **kwargs):
    return read_report(io.BytesIO(data), **kwargs)


def test_junit_collection_errors_and_failures():
    report = _read(JUNIT, stage="H100_PCIe-PyTorch-1")
    assert report.format is Format.JUNIT
    assert [(f.test_id, f.gpu_type) for f in report.failures] == [
        ("tests/test_mtp.py", "H100_PCIe"),
        ("tests/test_stub.py::TestStub::test_make[1]", "H100_PCIe"),
    ]
    assert "must not override" in report.failures[0].stack_trace
    assert report.failures[1].error_text.startswith("TypeError: Can't instantiate")
    assert report.failures[1].log_excerpt == "captured"


def _testreport(status: str = "REGRESSION") -> dict:
    return {
        "suites": [
            {
                "name": "pytest",
                "cases": [
                    {
                        "className": "tests.test_stub",
                        "name": "test_a",
                        "status": status,
                        "errorDetails": "TypeError: Can't instantiate abstract class _Worker with abstract method _forward_impl",
                        "errorStackTrace": "tests/test_stub.py:5: TypeError",
                        "stdout": None,
                        "stderr": "warn",
                    },
                    {"className": "tests.test_stub", "name": "test_b", "status": "PASSED"},
                ],
            }
        ]
    }


@pytest.mark.parametrize("status", ["FAILED", "REGRESSION"])
def test_testreport_failing_cases(status):
    report = _read(json.dumps(_testreport(status)).encode())
    assert report.format is Format.TESTREPORT
    assert [(f.test_id, f.log_excerpt) for f in report.failures] == [
        ("tests/test_stub.py::test_a", "warn")
    ]


def _analysis(**overrides) -> dict:
    document = {
        "pipeline": "L0_MergeRequest_PR",
        "build_number": 1234,
        "repository": "NVIDIA/TensorRT-LLM",
        "pr_number": 42,
        "head_sha": "0123abcd",
        "stages": [{"name": "H100_PCIe-PyTorch-1", "result": "FAILURE"}],
        "failures": [
            {
                "test": "tests/test_mtp.py",
                "stage": "H100_PCIe-PyTorch-1",
                "error_details": "TypeError: W must not override B.forward; implement _f instead.",
            }
        ],
    }
    document.update(overrides)
    return document


def test_analysis_document_carries_metadata_and_gpu_types():
    report = _read(json.dumps(_analysis()).encode())
    assert report.format is Format.ANALYSIS
    assert report.analysis is not None and report.analysis.build_number == 1234
    assert [(f.test_id, f.gpu_type) for f in report.failures] == [
        ("tests/test_mtp.py", "H100_PCIe")
    ]
    assert report.stages == ["H100_PCIe-PyTorch-1"]


def test_analysis_without_failures_reads_its_log_excerpt():
    excerpt = (
        "FAILED tests/a.py::t - TypeError: W must not override B.forward; implement _f instead.\n"
    )
    report = _read(json.dumps(_analysis(failures=[], log_excerpt=excerpt)).encode())
    assert [f.test_id for f in report.failures] == ["tests/a.py::t"]
    assert report.notes


def test_published_schema_is_generated_from_the_model():
    assert json.loads(SCHEMA_FILE.read_text()) == json_schema()


@pytest.mark.parametrize(
    ("data", "complaint"),
    [
        (b"\x00\x01\x02binary", "looks binary (NUL byte at offset 0)"),
        (b'{"pipeline": "x", "build_number": ', "malformed JSON at line 1, column"),
        (b"[1, 2]", "expected a JSON object at the top level, got list"),
        (
            json.dumps(_analysis(build_number="many")).encode(),
            "build_number: Input should be a valid integer",
        ),
        (json.dumps(_analysis(head_sha="not-a-sha!")).encode(), "head_sha"),
        (json.dumps(_analysis(surprise=1)).encode(), "surprise: Extra inputs are not permitted"),
        (
            b'{"suites": [{"cases": [{"name": "t"}]}]}',
            "invalid Jenkins testReport: suites.0.cases.0.status",
        ),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
        (b"<testsuites><testcase name='a'>", "malformed JUnit XML at line 1, column"),
        (b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaa">]><x>&a;</x>', "DTDs and entities"),
    ],
)
def test_bad_documents_get_a_clear_error(data, complaint):
    with pytest.raises(IntakeError) as raised:
        _read(data)
    assert complaint in str(raised.value)


def test_empty_input_is_not_an_error():
    report = _read(b"  \n\n")
    assert report.failures == [] and report.notes == ["empty input: nothing to classify"]


def test_oversized_documents_are_refused_not_loaded():
    big = b'{"pipeline": "' + b"x" * (65 << 20) + b'"}'
    with pytest.raises(IntakeError, match="larger than 64 MiB"):
        _read(big)


def test_invalid_utf8_in_json_is_replaced():
    document = json.dumps(_analysis()).encode().replace(b"L0_MergeRequest_PR", b"L0_\xff\xfe")
    report = _read(document)
    assert report.analysis is not None and "\ufffd" in report.analysis.pipeline


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        (b"\xef\xbb\xbf  {", Format.ANALYSIS),
        (b"\n<?xml", Format.JUNIT),
        (b"[2026-11-29T10:00:00Z] {", Format.CONSOLE),
        (b"[Pipeline] x", Format.CONSOLE),
    ],
)
def test_format_detection(head, expected):
    assert detect_format(head) is expected


@pytest.mark.parametrize(
    ("class_name", "name", "file", "expected"),
    [
        ("tests.test_x", "test_y", None, "tests/test_x.py::test_y"),
        (
            "tests.test_x.TestC.TestInner",
            "test_y",
            None,
            "tests/test_x.py::TestC::TestInner::test_y",
        ),
        ("", "tests.unit.test_x", None, "tests/unit/test_x.py"),
        ("(root)", "tests.test_x", None, "tests/test_x.py"),
        ("tests.test_x", "test_p[1.5-a]", "tests/test_x.py", "tests/test_x.py::test_p[1.5-a]"),
    ],
)
def test_node_ids_from_junit_names(class_name, name, file, expected):
    assert node_id(class_name, name, file) == expected


def test_screening_console_text_leaves_its_failures_to_triage():
    log = (
        b"[2026-11-30T10:00:00Z] build\nE   TypeError: W must not override SpecWorkerBase.forward\n"
    )
    screened = screen_report(log, stage="H100")
    assert (screened.format, screened.failures, screened.stages) == (Format.CONSOLE, [], ["H100"])
    assert _read(log).failures  # what triage will read from the stored body


def test_screening_refuses_a_nul_byte_anywhere_in_console_text():
    log = b"text\n" * 100_000 + b"\x00binary"
    with pytest.raises(IntakeError, match="NUL byte at offset 500000"):
        screen_report(log)


def test_screening_reads_a_document_whole():
    document = json.dumps(
        {"pipeline": "L0", "build_number": 3, "failures": [{"test": "t", "error_details": "x"}]}
    ).encode()
    screened = screen_report(document)
    assert screened.analysis is not None and screened.analysis.pipeline == "L0"
    with pytest.raises(IntakeError, match="malformed JSON"):
        screen_report(b'{"pipeline": ')
