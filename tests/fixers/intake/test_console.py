"""Console reader: structure, chunking, noise and bad bytes. Real pytest logs are in test_fixture_logs."""

from __future__ import annotations

import io

import pytest

from fixers.intake import console, read_report
from fixers.intake.console import read_console, read_console_stream, trim_traceback

SESSION = b"""============================= test session starts ==============================
collected 3 items

tests/test_stub.py::test_ok PASSED                                       [ 33%]
tests/test_stub.py::TestStub::test_make[a.b] FAILED                      [ 66%]
tests/test_other.py::test_x FAILED                                       [100%]

=================================== FAILURES ===================================
__________________________ TestStub.test_make[a.b] ___________________________

    def test_make(self, p):
>       _Worker()
E       TypeError: Can't instantiate abstract class _Worker with abstract method _forward_impl

tests/test_stub.py:9: TypeError
___________________________________ test_x ___________________________________

    def test_x():
>       assert 1 == 2
E       assert 1 == 2

tests/test_other.py:4: AssertionError
=========================== short test summary info ============================
FAILED tests/test_stub.py::TestStub::test_make[a.b] - TypeError: Can't instantiate abstract class _Worker...
FAILED tests/test_other.py::test_x - assert 1 == 2
========================= 2 failed, 1 passed in 0.05s ==========================
"""


def _read(data: bytes, **kwargs):
    return read_report(io.BytesIO(data), **kwargs)


def test_sections_pair_with_summary_ids():
    report = _read(SESSION)
    by_id = {f.test_id: f for f in report.failures}
    assert set(by_id) == {
        "tests/test_stub.py::TestStub::test_make[a.b]",
        "tests/test_other.py::test_x",
    }
    stub = by_id["tests/test_stub.py::TestStub::test_make[a.b]"]
    assert stub.error_text.startswith("TypeError: Can't instantiate abstract class _Worker")
    assert "tests/test_stub.py:9: TypeError" in stub.stack_trace


@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_result_does_not_depend_on_chunk_boundaries(chunk):
    whole = read_console([SESSION]).failures
    pieces = [SESSION[i : i + chunk] for i in range(0, len(SESSION), chunk)]
    assert read_console(pieces).failures == whole


def test_sections_without_a_summary_take_their_id_from_the_location_line():
    truncated = SESSION.split(b"=========================== short test summary")[0]
    ids = {f.test_id for f in _read(truncated).failures}
    assert ids == {"tests/test_stub.py::TestStub::test_make[a.b]", "tests/test_other.py::test_x"}


def test_summary_entries_without_sections_still_count():
    report = _read(b"FAILED tests/a.py::t1 - RuntimeError: x\nERROR tests/b.py - TypeError: y\n")
    assert [(f.test_id, f.error_text) for f in report.failures] == [
        ("tests/a.py::t1", "RuntimeError: x"),
        ("tests/b.py", "TypeError: y"),
    ]


def test_jenkins_stages_and_parallel_branch_prefixes_set_the_gpu_type():
    log = (
        b"[Pipeline] { (A10-PyTorch-1)\nFAILED tests/a.py::t - boom\n"
        b"[DGX_B200-4_GPUs-PyTorch-2] FAILED tests/b.py::t - boom\n"
    )
    report = _read(log)
    assert [(f.test_id, f.gpu_type) for f in report.failures] == [
        ("tests/a.py::t", "A10"),
        ("tests/b.py::t", "DGX_B200"),
    ]
    assert report.stages == ["A10-PyTorch-1", "DGX_B200-4_GPUs-PyTorch-2"]


def test_free_standing_chained_traceback_is_one_failure():
    log = (
        b'noise\nTraceback (most recent call last):\n  File "pkg/base.py", line 3, in f\n    raise TypeError(m)\n'
        b"TypeError: W must not override B.forward; implement _forward_impl instead.\n\n"
        b"The above exception was the direct cause of the following exception:\n\n"
        b'Traceback (most recent call last):\n  File "pkg/registry.py", line 9, in load\n'
        b"    raise ImportError('failed') from exc\nImportError: failed\nserver shutting down\nmore noise\n"
    )
    failures = _read(log).failures
    assert len(failures) == 1
    assert failures[0].error_text == "ImportError: failed"
    assert "must not override" in failures[0].stack_trace
    assert "server shutting down" not in failures[0].stack_trace


def test_a_signature_line_outside_any_traceback_is_kept():
    report = _read(
        b"worker 3 crashed: TypeError: X must not override B.forward; implement _f instead\n"
    )
    assert len(report.failures) == 1 and report.failures[0].test_id is None


def test_invalid_utf8_is_replaced_and_reported_not_fatal():
    log = SESSION.replace(b"assert 1 == 2\nE", b"assert 1 == \xff\xfe\nE")
    report = _read(log)
    assert len(report.failures) == 2
    assert any("invalid UTF-8" in note for note in report.notes)


def test_huge_section_keeps_head_and_tail_only():
    middle = b"".join(b"    frame noise line %d\n" % i for i in range(200_000))
    log = SESSION.replace(b"    def test_x():\n", b"    def test_x():\n" + middle)
    failure = {f.test_id: f for f in _read(log).failures}["tests/test_other.py::test_x"]
    assert "bytes omitted by repairbot" in failure.stack_trace
    assert failure.stack_trace.rstrip().endswith("tests/test_other.py:4: AssertionError")
    assert len(failure.stack_trace) < 200_000


def test_one_enormous_line_without_newlines_is_read_in_pieces():
    log = b"x" * (9 << 20) + b"\nFAILED tests/a.py::t - boom\n"
    assert [f.test_id for f in _read(log).failures] == ["tests/a.py::t"]


def test_trim_traceback_stops_at_unrelated_text():
    text = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\nKeyError: 1\nINFO next\n'
    )
    assert (
        trim_traceback(text)
        == 'Traceback (most recent call last):\n  File "a.py", line 1, in f\nKeyError: 1'
    )


@pytest.mark.parametrize("block", [128, 200, 4096])
@pytest.mark.parametrize("head_bytes", [0, 5, 300])
def test_a_stream_read_in_any_block_size_gives_the_same_result(monkeypatch, block, head_bytes):
    """Any buffer longer than the longest line: a longer line is read in pieces."""
    whole = read_console([SESSION])
    monkeypatch.setattr(console, "CHUNK_BYTES", block)
    streamed = read_console_stream(io.BytesIO(SESSION[head_bytes:]), SESSION[:head_bytes])
    assert streamed.failures == whole.failures
    assert streamed.notes == whole.notes


def test_a_stream_keeps_no_reference_to_its_reused_buffer(monkeypatch):
    """Captures copy what they keep: a later block overwriting the buffer changes nothing."""
    monkeypatch.setattr(console, "CHUNK_BYTES", 128)
    noise = b"".join(b"noise line %d\n" % i for i in range(500))
    streamed = read_console_stream(io.BytesIO(SESSION + noise))
    assert streamed.failures == read_console([SESSION + noise]).failures
    assert all(b"noise" not in f.stack_trace.encode() for f in streamed.failures)
