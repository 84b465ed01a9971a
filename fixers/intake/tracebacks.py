"""Reading Python and pytest tracebacks: frames, exception lines, chained-exception blocks."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fixers.classify.failures import Frame

# `  File "pkg/mod.py", line 12, in forward` (CPython) and
# `pkg/mod.py:12: in forward` / `pkg/mod.py:12: TypeError` / `pkg/mod.py:12: ` (pytest's long and
# short styles).
_CPYTHON_FRAME = re.compile(
    r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?$'
)
# pytest's long style ends every entry but the last with a bare `tests/test_x.py:14: `.
_PYTEST_FRAME = re.compile(
    r"^(?P<path>[^\s:\"'][^:\"']*\.py):(?P<line>\d+):"
    r"(?: (?:in (?P<func>\S+)|(?P<raised>\w[\w.]*)))?\s*$"
)

_CHAIN_BOUNDARY = re.compile(
    r"^\s*(?:The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:)\s*$",
    re.MULTILINE,
)
# `E   TypeError: message` (pytest) or `TypeError: message` (CPython); dotted names allowed.
_EXCEPTION_LINE = re.compile(
    r"^(?:E\s+)?(?P<type>(?:[A-Za-z_][A-Za-z0-9_]*\.)*[A-Za-z_][A-Za-z0-9_]*"
    r"(?:Error|Exception|Exit|Interrupt|Failed|Warning|Timeout|Iteration))"
    r"(?::[ \t]*(?P<message>.*))?$"
)
_CHAIN_PREFIXES = ("The above exception", "During handling")
# Where CI systems check a repository out: the rest of an absolute path is repository-relative.
_WORKSPACES = (
    re.compile(r"^/home/travis/build/[^/]+/[^/]+/"),  # Travis CI
    re.compile(r"^/home/runner/work/[^/]+/[^/]+/"),  # GitHub Actions
    re.compile(r"^/__w/[^/]+/[^/]+/"),  # GitHub Actions, job container
    re.compile(r"^/home/vsts/work/\d+/s/"),  # Azure Pipelines
    re.compile(r"^(?:/home/circleci|/root)/project/"),  # CircleCI
    re.compile(r"^/(?:var/lib/buildkite-agent|buildkite)/builds/[^/]+/[^/]+/[^/]+/"),  # Buildkite
    re.compile(r"^.*/workspace/[^/]+/"),  # Jenkins (`.../workspace/<job>[@2]/`)
    re.compile(r"^/opt/buildagent/work/[0-9a-f]+/"),  # TeamCity
)
_EXTERNAL_MARKERS = (
    "site-packages/",
    "dist-packages/",
    "/lib/python3",
    "/lib64/python3",
    "importlib/",
)


@dataclass(frozen=True)
class ExceptionLine:
    """An exception's type and first message line as printed in a traceback."""

    type: str
    message: str

    def __str__(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type


def parse_frames(text: str) -> list[Frame]:
    """Every frame in ``text``, outermost first, with the source line that follows it if any."""
    frames: list[Frame] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _CPYTHON_FRAME.match(line) or _PYTEST_FRAME.match(line)
        if match is None:
            continue
        following = lines[index + 1].strip() if index + 1 < len(lines) else None
        source = following if following and not _is_frame_line(following) else None
        frames.append(Frame(match["path"], int(match["line"]), match["func"], source))
    return frames


def _is_frame_line(line: str) -> bool:
    return bool(_CPYTHON_FRAME.match(line) or _PYTEST_FRAME.match(line.strip()))


def is_repository_path(path: str, repo_root: str | None = None) -> bool:
    """Whether a frame's file is in the repository rather than Python or an installed package."""
    if path.startswith("<"):
        return False
    if repo_root and path.startswith("/"):
        return path.startswith(repo_root.rstrip("/") + "/")
    return not any(marker in path for marker in _EXTERNAL_MARKERS)


def relative_to_root(path: str, repo_root: str | None) -> str:
    """``path`` relative to ``repo_root`` when it lies inside it, or to a CI system's checkout
    directory (``/home/travis/build/<owner>/<repo>/``, ...), else unchanged."""
    if repo_root:
        prefix = repo_root.rstrip("/") + "/"
        if path.startswith(prefix):
            return path[len(prefix) :]
    if path.startswith("/"):
        for workspace in _WORKSPACES:
            if match := workspace.match(path):
                return path[match.end() :]
    return path


def innermost_repository_frame(text: str, repo_root: str | None = None) -> Frame | None:
    """The deepest frame of ``text`` that lies inside the repository, path made relative."""
    for frame in reversed(parse_frames(text)):
        if is_repository_path(frame.path, repo_root):
            return Frame(
                relative_to_root(frame.path, repo_root), frame.line, frame.function, frame.source
            )
    return None


def chained_block(text: str, position: int) -> str:
    """The part of a chained traceback that holds ``position``: one exception and its frames."""
    start, end = 0, len(text)
    for boundary in _CHAIN_BOUNDARY.finditer(text):
        if boundary.end() <= position:
            start = boundary.end()
        elif boundary.start() >= position:
            end = boundary.start()
            break
    return text[start:end]


def last_exception_line(text: str) -> ExceptionLine | None:
    """The outermost exception printed in ``text``: the last line that names one."""
    found: ExceptionLine | None = None
    for line in text.splitlines():
        match = _EXCEPTION_LINE.match(line.strip())
        if match:
            found = ExceptionLine(match["type"], (match["message"] or "").strip())
    return found


def frame_defining_class(text: str, class_name: str, repo_root: str | None = None) -> Frame | None:
    """The frame whose source line is ``class <class_name>...``: where the class statement ran."""
    short_name = class_name.rsplit(".", 1)[-1]
    pattern = re.compile(rf"^class {re.escape(short_name)}\b")
    for frame in reversed(parse_frames(text)):
        if (
            frame.source
            and pattern.match(frame.source)
            and is_repository_path(frame.path, repo_root)
        ):
            return Frame(
                relative_to_root(frame.path, repo_root), frame.line, frame.function, frame.source
            )
    return None


def pytest_reported_exception(trace: str, error_text: str) -> ExceptionLine | None:
    """For pytest's rewritten asserts: the type from ``path:N: AssertionError``, the message
    from the first ``E`` line, which names no type (``E   assert 1 == 2``)."""
    raised = None
    for line in trace.splitlines():
        match = _PYTEST_FRAME.match(line.strip())
        if match and match["raised"]:
            raised = match["raised"]
    if raised is None:
        return None
    first = next((line.strip() for line in error_text.splitlines() if line.strip()), "")
    return ExceptionLine(raised, first)


def pytest_error_text(text: str) -> str:
    """pytest's `E   ` lines: the exception as the test saw it."""
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if lines:
        return "\n".join(lines)
    exception = last_exception_line(text)
    return str(exception) if exception else ""


def trim_traceback(text: str) -> str:
    """Cut a captured CPython traceback after its last exception line (chains kept together)."""
    lines = text.splitlines()
    end = 0
    state = "before"
    for index, line in enumerate(lines):
        if line.startswith("Traceback (most recent call last):"):
            state = "frames"
        elif state == "frames" and line and not line[0].isspace():
            end, state = index + 1, "after"  # the first unindented line is the exception
        elif state == "after" and line.strip() and not line.startswith(_CHAIN_PREFIXES):
            break
    return "\n".join(lines[:end]) if end else text
