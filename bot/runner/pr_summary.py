"""What a verification tells the PR: a commit status line and a comment with a table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.db.models import Verification
from bot.forges.base import StatusState

STATUS_CONTEXT = "repairbot/verify"
_MAX_ROWS = 60
_VERDICT_STATE: dict[str, StatusState] = {
    "fixed": "success",
    "not_reproduced": "success",
    "still_failing": "failure",
    "new_failures": "failure",
}


def where_it_ran(device: str, requested_queue: str, on_requested: bool) -> str:
    """One honest sentence about the hardware."""
    if on_requested:
        return f"ran on {device} (requested queue {requested_queue})"
    return f"ran on {device}, NOT on the requested {requested_queue.removeprefix('gpu.')}"


def status_for(verdict: str | None, state: str, reason: str) -> tuple[StatusState, str]:
    """Commit status state and description (GitHub caps descriptions at 140 characters)."""
    if verdict is None:
        return ("error", f"verification {state}: {reason}"[:140])
    return (
        _VERDICT_STATE.get(verdict, "error"),
        f"verdict: {verdict.replace('_', ' ')} — {reason}"[:140],
    )


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:200]


def comment_body(
    *,
    verification_id: int,
    verdict: str | None,
    state: str,
    reason: str,
    device: str,
    host: str,
    queue: str,
    requested_queue: str,
    on_requested: bool,
    seconds: float,
    tests: Sequence[dict[str, Any]],
    flaky: Sequence[str],
    problems: Sequence[str],
    isolation: str,
    environment: str = "",
) -> str:
    """The PR comment: verdict, where it ran and in which environment, then one row per test."""
    lines = [
        f"### repairbot verification #{verification_id}: {verdict or state}",
        "",
        f"- **Device:** {where_it_ran(device, requested_queue, on_requested)}; "
        f"host `{host}`, queue `{queue}`",
        f"- **Time:** {seconds:.1f} s; isolation: {isolation or 'n/a'}",
    ]
    if environment:
        lines.append(f"- **Environment:** {_cell(environment)}")
    if reason:
        lines.append(f"- **Note:** {reason}")
    lines += [f"- **Problem:** {_cell(p)}" for p in problems]
    unaddressed = sum(1 for test in tests if test.get("meaning") == "not_addressed")
    if unaddressed:
        lines.append(
            f"- **Not addressed by this PR:** {unaddressed} failing test(s) of the log's other "
            "root causes; they do not decide this verdict"
        )
    if flaky:
        lines.append(
            f"- **Flaky (failed, then passed on re-run):** {', '.join(f'`{t}`' for t in flaky)}"
        )
    if tests:
        lines += ["", "| test | before | after | verdict |", "|---|---|---|---|"]
        for test in list(tests)[:_MAX_ROWS]:
            lines.append(
                f"| `{_cell(test['test_id'])}` | {test['before']} | {test['after']} | "
                f"{test['meaning'].replace('_', ' ')} |"
            )
        if len(tests) > _MAX_ROWS:
            lines.append(f"| … {len(tests) - _MAX_ROWS} more | | | |")
    return "\n".join(lines) + "\n"


def verification_comment(verification: Verification) -> str:
    """:func:`comment_body` for a finished verification row."""
    results = verification.results
    return comment_body(
        verification_id=verification.id,
        verdict=verification.verdict,
        state=verification.state,
        reason=verification.reason,
        device=verification.device or "unknown",
        host=verification.host or "",
        queue=verification.queue or "",
        requested_queue=verification.requested_queue,
        on_requested=bool(verification.on_requested_device),
        seconds=float(results.get("seconds", 0.0)),
        tests=results.get("tests", []),
        flaky=results.get("flaky", []),
        problems=results.get("problems", []),
        isolation=str(results.get("isolation", "")),
        environment=str(results.get("environment", "")),
    )
