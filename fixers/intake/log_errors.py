"""A failed run whose log holds no test failure and no traceback still yields one failure.

"Never nothing": the reader keeps the last bytes of the log and every ``##[error]`` line it
passes; when a session ends with no failure found, the last error-looking lines become one
failure (classified ``unclassified`` unless a signature matches them), so the run is shown and
counted. A log with no error-looking line at all is said to hold no failure, explicitly.
"""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

from fixers.classify.failures import Failure
from fixers.intake.lines import CleanLine, clean_line

TAIL_BYTES = 64 << 10
EVIDENCE_LINES = 12
_ERROR = re.compile(
    r"\b(?:error|errors|failed|failure|failures|fatal|exception|traceback|panic|aborted|"
    r"segmentation fault|killed|timed out|timeout)\b|\bexit (?:code|status):? [1-9]|\bERR!",
    re.IGNORECASE,
)
_NOT_AN_ERROR = re.compile(
    r"\b(?:0|no) (?:errors?|failures?|failed)\b|\b(?:errors?|failures?|failed)[=:] ?0\b",
    re.IGNORECASE,
)
# Lines every failed job ends with; they say that it failed, not why.
_GENERIC = re.compile(
    r"^(?:Process completed with exit code \d+|ERROR: Job failed|Finished: FAILURE"
    r"|script returned exit code \d+|Error: Process completed with exit code \d+"
    r"|The process '[^']*' failed with exit code \d+)",
    re.IGNORECASE,
)
NO_FAILURE_NOTE = "no failure found in the log: no failed test, traceback or error line"


def looks_like_error(line: CleanLine) -> bool:
    """An ``##[error]`` command, or a line with an error word that is not a zero count."""
    if line.command == "error":
        return True
    text = line.text
    return bool(_ERROR.search(text)) and not _NOT_AN_ERROR.search(text)


def error_lines(lines: Iterable[CleanLine], limit: int = EVIDENCE_LINES) -> list[CleanLine]:
    """The last ``limit`` error-looking lines, in log order, without repeats."""
    seen: set[str] = set()
    kept: list[CleanLine] = []
    for line in reversed(list(lines)):
        if line.text.strip() and line.text not in seen and looks_like_error(line):
            seen.add(line.text)
            kept.append(line)
            if len(kept) == limit:
                break
    return kept[::-1]


def tail_lines(tail: str, branches: Container[str] = ()) -> list[CleanLine]:
    """The cleaned lines of the kept tail (its first, probably partial, line dropped)."""
    lines = tail.splitlines()
    return [clean_line(line, branches) for line in lines[1:] or lines]


def log_failure(lines: list[CleanLine], stage: str | None, gpu_type: str | None) -> Failure | None:
    """One failure made of the best evidence lines, or None when no line looks like an error."""
    evidence = error_lines(lines)
    if not evidence:
        return None
    specific = [line for line in evidence if not _GENERIC.match(line.text)] or evidence
    headline = specific[-1]
    return Failure(
        None,
        headline.text.strip(),
        stack_trace="\n".join(line.text for line in evidence),
        stage=stage,
        gpu_type=gpu_type,
        log_line=f"{headline.prefix} {headline.text}".strip(),
    )
