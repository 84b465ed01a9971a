from __future__ import annotations

from fixers.classify.failures import Frame
from fixers.intake.tracebacks import (
    chained_block,
    frame_defining_class,
    innermost_repository_frame,
    is_repository_path,
    last_exception_line,
    parse_frames,
)

CPYTHON = """Traceback (most recent call last):
  File "/work/repo/tests/test_a.py", line 3, in <module>
    import pkg
  File "/work/repo/pkg/workers.py", line 7, in <module>
    class MTPWorker(SpecWorkerBase):
  File "/work/repo/pkg/base.py", line 12, in __init_subclass__
    raise TypeError(msg)
  File "/usr/lib/python3.11/site-packages/helper.py", line 1, in fmt
    pass
TypeError: MTPWorker must not override SpecWorkerBase.forward; implement _forward_impl instead.
"""

PYTEST_LONG = """    def test_stub():
>       _Worker()
E       TypeError: Can't instantiate abstract class _Worker with abstract method _forward_impl

tests/test_stub.py:9: TypeError"""


def test_cpython_frames_with_their_source_lines():
    frames = parse_frames(CPYTHON)
    assert [f.location() for f in frames] == [
        "/work/repo/tests/test_a.py:3",
        "/work/repo/pkg/workers.py:7",
        "/work/repo/pkg/base.py:12",
        "/usr/lib/python3.11/site-packages/helper.py:1",
    ]
    assert frames[1].source == "class MTPWorker(SpecWorkerBase):"


def test_innermost_repository_frame_skips_site_packages_and_relativises():
    frame = innermost_repository_frame(CPYTHON, repo_root="/work/repo")
    assert frame == Frame("pkg/base.py", 12, "__init_subclass__", "raise TypeError(msg)")


def test_frame_defining_the_class():
    frame = frame_defining_class(CPYTHON, "MTPWorker", repo_root="/work/repo/")
    assert frame is not None and frame.location() == "pkg/workers.py:7"


def test_pytest_location_line_after_the_error_is_a_frame():
    assert innermost_repository_frame(PYTEST_LONG) == Frame("tests/test_stub.py", 9, None, None)


def test_repository_paths():
    assert is_repository_path("pkg/x.py")
    assert not is_repository_path(
        "/root/.pyenv/versions/3.11.7/lib/python3.11/importlib/__init__.py"
    )
    assert not is_repository_path("<frozen importlib._bootstrap>")
    assert not is_repository_path("/elsewhere/x.py", repo_root="/work/repo")


def test_chained_block_isolates_the_cause():
    text = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\nTypeError: root\n\n'
        "The above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "b.py", line 2, in g\nImportError: wrapper\n'
    )
    cause = chained_block(text, text.index("root"))
    assert "a.py" in cause and "b.py" not in cause
    wrapper = chained_block(text, text.index("wrapper"))
    assert "b.py" in wrapper and "a.py" not in wrapper


def test_last_exception_line_reads_pytest_and_cpython_forms():
    assert str(last_exception_line(PYTEST_LONG)).startswith("TypeError: Can't instantiate")
    exc = last_exception_line("boom\ntorch.OutOfMemoryError: CUDA out of memory.\n")
    assert exc is not None and exc.type == "torch.OutOfMemoryError"
    assert last_exception_line("nothing to see") is None
