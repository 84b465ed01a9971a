"""A failed run whose log holds no test failure and no traceback still yields one failure.

"Never nothing": the reader keeps the last bytes of the log and every ``##[error]`` line it
passes; when a session ends with no failure found, what failed the job becomes the failure,
with no test id: a run of pytest that collected no test (``no tests ran``, exit code 5), lint
errors (flake8, ruff, pycodestyle, pylint, mypy), else the last error-looking lines (classified
``unclassified`` unless a signature matches them), so the run is shown and counted. A log with no
error-looking line at all is said to hold no failure, explicitly.
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
# Lines every failed job ends with, in each CI's words; they say that it failed, not why.
_GENERIC = re.compile(
    r"^(?:Process completed with exit code \d+|ERROR: Job failed|Finished: FAILURE"
    r"|(?:ERROR: )?script returned exit code \d+|Error: Process completed with exit code \d+"
    r"|The process '[^']*' failed with exit code \d+"
    r"|Bash exited with code '\d+'|Script failed with exit code: \d+"  # Azure Pipelines
    r"|The command \".*\" exited with \d+|Done\. Your build exited with \d+"  # Travis CI
    r"|Exited with code (?:exit status )?\d+|CircleCI received exit code \d+"  # CircleCI
    r"|(?:\U0001f6a8 )?Error: The command exited with status -?\d+"  # Buildkite
    r"|Process exited with code \d+|Step .* failed)",  # TeamCity
    re.IGNORECASE,
)
# A lint report line: flake8, pycodestyle, pylint (parseable), ruff (concise), mypy.
_LINT = re.compile(
    r"^(?P<path>[^\s:]{1,500}\.pyi?):(?P<line>\d+):(?:(?P<column>\d+):)? "
    r"(?:(?P<code>[A-Z]{1,4}\d{1,4}):? |error: )"
)
# pytest's last line when it ran no test: exit code 5 (or 4 for a path it could not find).
_NO_TESTS = re.compile(
    r"^=*\s*(?P<counts>no tests ran|\d+ (?:deselected|warnings?)"
    r"(?:, \d+ (?:deselected|warnings?))*) in [\d.]+ ?(?:s|seconds)\b"
)
NO_FAILURE_NOTE = "no failure found in the log: no failed test, traceback or error line"
JOB_FAILURE_NOTE = (
    "no failed test or traceback found: what failed the job (pytest running no test, lint "
    "errors, else the last error lines of the log) is kept as one failure, with no test id"
)


def no_tests_ran(text: str) -> str | None:
    """pytest's session line when it ran no test (``no tests ran in 0.01s``, ``3 deselected in
    0.02s``), without its ``=`` rule; None for any other line."""
    match = _NO_TESTS.match(text.strip())
    return text.strip().strip("= ") if match else None


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


def tail_lines(tail: str, branches: Container[str] = (), *, whole: bool = False) -> list[CleanLine]:
    """The cleaned lines of the kept tail (its first, probably partial, line dropped unless the
    tail is the ``whole`` log)."""
    lines = tail.splitlines()
    return [clean_line(line, branches) for line in (lines if whole else lines[1:] or lines)]


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


def job_failures(
    lines: list[CleanLine],
    no_tests: tuple[str, str] | None,
    stage: str | None,
    gpu_type: str | None,
) -> list[Failure]:
    """What failed a job that no test failed in: pytest running no test, lint errors, else the
    best error lines (``log_failure``); each with no test id. ``no_tests``: pytest's line
    saying it ran no test, and that line as the CI printed it."""
    found: list[Failure] = []
    if no_tests is None:  # `pytest -q` says so without a rule, so the reader did not see it
        no_tests = next(
            ((nothing, f"{line.prefix} {line.text}".strip()) for line in reversed(lines)
             if (nothing := no_tests_ran(line.text))),
            None,
        )  # fmt: skip
    if no_tests:
        text, printed = no_tests
        evidence = [line.text for line in error_lines(lines)]
        found.append(
            Failure(
                None,
                text,
                stack_trace="\n".join([text, *evidence]),
                stage=stage,
                gpu_type=gpu_type,
                log_line=printed,
            )
        )
    lint = [line for line in lines if _LINT.match(line.text)]
    if lint:
        shown = lint[:EVIDENCE_LINES] + (lint[-1:] if len(lint) > EVIDENCE_LINES else [])
        found.append(
            Failure(
                None,
                lint[0].text.strip(),
                stack_trace="\n".join(line.text for line in shown),
                stage=stage,
                gpu_type=gpu_type,
                log_line=f"{lint[0].prefix} {lint[0].text}".strip(),
            )
        )
    if found:
        return found
    failure = log_failure(lines, stage, gpu_type)
    return [failure] if failure else []
