"""One handler per ``/bot`` subcommand. Each returns the reply posted on the PR."""

from __future__ import annotations

from typing import Any

from bot.commands.grammar import configure_none, configure_run, configure_skip
from bot.commands.registry import CommandContext, command
from bot.db.models import Verdict, VerificationState
from bot.runner.requests import cancel_verifications, latest_verification, request_verification

VERIFY_CONTEXT = "repairbot/verify"


def run_options(options: dict[str, Any]) -> dict[str, Any]:
    """``run``'s parsed options as the verification request records them (no empty values)."""
    multi = next(
        (mode for mode in ("add", "only", "disable") if options.get(f"{mode}_multi_gpu_test")),
        None,
    )
    mapped = {
        "stage_list": options.get("stage_list"),
        "extra_stage": options.get("extra_stage"),
        "test_backend": options.get("test_backend"),
        "reuse_test": options.get("reuse_test"),
        "disable_reuse_test": options.get("disable_reuse_test") or None,
        "disable_fail_fast": options.get("disable_fail_fast") or None,
        "skip_test": options.get("skip_test") or None,
        "post_merge": options.get("post_merge") or None,
        "multi_gpu": multi,
        "detailed_log": options.get("detailed_log") or None,
        "debug": options.get("debug") or None,
    }
    return {key: value for key, value in mapped.items() if value is not None}


@command(
    "run", "verify this fix PR on a GPU runner (options map to stages and GPU types)", configure_run
)
def run(ctx: CommandContext, options: dict[str, Any]) -> str:
    """Queue a verification of the PR's head."""
    verification = request_verification(
        ctx.session,
        fix=ctx.fix,
        requested_by=f"/bot run by {ctx.login}",
        default_queue=ctx.settings.verify_default_queue,
        gpu_types=options.get("gpu_type") or None,
        options=run_options(options),
    )
    return (
        f"Verification #{verification.id} of `{ctx.fix.head_sha[:12]}` queued on "
        f"`{verification.requested_queue}` for @{ctx.login}."
    )


@command("kill", "stop this PR's queued and running verifications", configure_none)
def kill(ctx: CommandContext, options: dict[str, Any]) -> str:
    """Cancel every active verification of the fix."""
    cancelled = cancel_verifications(
        ctx.session, fix_id=ctx.fix.id, reason=f"/bot kill by {ctx.login}"
    )
    if not cancelled:
        return "Nothing to stop: no verification of this PR is queued or running."
    return "Stopped " + ", ".join(f"verification #{v.id}" for v in cancelled) + "."


@command(
    "skip", 'mark verification as passed without running it: --comment "reason"', configure_skip
)
def skip(ctx: CommandContext, options: dict[str, Any]) -> str:
    """Record the reason and set our status to success, saying it was skipped and why."""
    reason = str(options["comment"])
    ctx.forge.set_status(
        ctx.session,
        ctx.fix,
        state="success",
        context=VERIFY_CONTEXT,
        description=f"skipped: {reason}",
    )
    return f"`{VERIFY_CONTEXT}` marked successful without a run, by @{ctx.login}: {reason}"


@command(
    "reuse-pipeline",
    "report the last verification again if the PR head is unchanged",
    configure_none,
)
def reuse_pipeline(ctx: CommandContext, options: dict[str, Any]) -> str:
    """Reuse the newest verification when it verified the current head."""
    last = latest_verification(ctx.session, fix_id=ctx.fix.id)
    if last is None:
        return "Nothing to reuse: this PR has no verification yet. Use `/bot run`."
    verified = str(last.results.get("head_sha") or "")
    if last.state != VerificationState.DONE.value:
        return f"Verification #{last.id} is {last.state}; nothing finished to reuse."
    if verified != ctx.fix.head_sha:
        return (
            f"Cannot reuse verification #{last.id}: it verified `{verified[:12] or 'unknown'}`, "
            f"the head is now `{ctx.fix.head_sha[:12]}`. Use `/bot run`."
        )
    passed = last.verdict == Verdict.FIXED.value
    ctx.forge.set_status(
        ctx.session,
        ctx.fix,
        state="success" if passed else "failure",
        context=VERIFY_CONTEXT,
        description=f"reused verification #{last.id}: {last.verdict}",
    )
    return f"Reused verification #{last.id} ({last.verdict}) for `{ctx.fix.head_sha[:12]}`."
