"""``/bot run``: verify this fix PR on a GPU runner; its options (DESIGN §4) map to stages and
GPU types. Stage names, GPU types and backends must match narrow patterns. On a fix PR Buildkite
built, with ``REPAIRBOT_BUILDKITE_REBUILD_ON_RUN``, its build is rebuilt instead
(``bot.commands.fix_pr.rebuild``)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from bot.commands.fix_pr.rebuild import buildkite_build_for
from bot.commands.grammar import ParsedCommand, listed
from bot.commands.registry import CommandContext, CommandSpec, Example, Permission
from bot.queue.starts import start_buildkite_rebuild
from bot.runner.requests import request_verification

STAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
GPU = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_]{0,39}$")
BACKEND = re.compile(r"^[a-z][a-z0-9_]{0,19}$")


def _pipeline_id(text: str) -> int | str:
    if text == "latest":  # the flag without a value: the latest pipeline
        return text
    if not text.isdigit() or len(text) > 12:
        raise argparse.ArgumentTypeError(f"pipeline id must be a number, not {text[:40]!r}")
    return int(text)


def configure(parser: argparse.ArgumentParser) -> None:
    """``run``'s options, as in DESIGN §4."""
    reuse = parser.add_mutually_exclusive_group()
    reuse.add_argument(
        "--reuse-test",
        nargs="?",
        const="latest",
        type=_pipeline_id,
        metavar="PIPELINE_ID",
        help="reuse passed tests (of PIPELINE_ID)",
    )
    reuse.add_argument("--disable-reuse-test", action="store_true", help="rerun every test")
    parser.add_argument("--disable-fail-fast", action="store_true", help="run on after a failure")
    parser.add_argument("--skip-test", action="store_true", help="build only, run no test")
    parser.add_argument(
        "--stage-list",
        type=listed(STAGE, "stage"),
        help='only these stages: "A10-PyTorch-1, H100_PCIe-PyTorch-2"',
    )
    parser.add_argument(
        "--gpu-type", type=listed(GPU, "GPU type"), help='only these GPU types: "A30, H100_PCIe"'
    )
    parser.add_argument(
        "--test-backend",
        type=listed(BACKEND, "backend"),
        help='only these backends: "pytorch, cpp"',
    )
    multi = parser.add_mutually_exclusive_group()
    multi.add_argument("--add-multi-gpu-test", action="store_true", help="add multi-GPU stages")
    multi.add_argument("--only-multi-gpu-test", action="store_true", help="multi-GPU stages only")
    multi.add_argument("--disable-multi-gpu-test", action="store_true", help="no multi-GPU stage")
    parser.add_argument("--post-merge", action="store_true", help="run the post-merge stages")
    parser.add_argument(
        "--extra-stage", type=listed(STAGE, "stage"), help="add these stages to the default set"
    )
    parser.add_argument("--detailed-log", action="store_true", help="verbose test logs")
    parser.add_argument("--debug", action="store_true", help="debug mode")


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


def handle(ctx: CommandContext, parsed: ParsedCommand) -> str:
    """Queue a verification of the PR's head; or, for a PR Buildkite built (and the setting
    on), its rebuild (``bot.commands.fix_pr.rebuild``)."""
    build = (
        buildkite_build_for(ctx.session, ctx.fix_pr)
        if ctx.settings.buildkite_rebuild_on_run
        else None
    )
    if build is not None:
        start_buildkite_rebuild(
            ctx.session, ctx.invocation.id, build.organization, build.pipeline, build.number
        )
        return (
            f"Rebuild of Buildkite build `{build}` queued for @{ctx.login}: this PR's CI is "
            "Buildkite; the new build's link follows."
        )
    verification = request_verification(
        ctx.session,
        fix=ctx.fix_pr,
        requested_by=f"/bot run by {ctx.login}",
        default_queue=ctx.settings.verify_default_queue,
        gpu_types=parsed.options.get("gpu_type") or None,
        options=run_options(parsed.options),
    )
    return (
        f"Verification #{verification.id} of `{ctx.fix_pr.head_sha[:12]}` queued on "
        f"`{verification.requested_queue}` for @{ctx.login}."
    )


COMMAND = CommandSpec(
    name="run",
    summary=(
        "verify this fix PR on a GPU runner (options map to stages and GPU types), or rebuild "
        "its Buildkite build (docs/ci.md)"
    ),
    usage=(
        "/bot run [--reuse-test [PIPELINE_ID] | --disable-reuse-test] [--disable-fail-fast]"
        ' [--skip-test] [--stage-list "STAGE, ..."] [--gpu-type "GPU, ..."]'
        ' [--test-backend "BACKEND, ..."] [--add-multi-gpu-test | --only-multi-gpu-test |'
        ' --disable-multi-gpu-test] [--post-merge] [--extra-stage "STAGE, ..."]'
        " [--detailed-log] [--debug]"
    ),
    permission=Permission.WRITE,
    configure=configure,
    handle=handle,
    examples=(
        Example("/bot run", "verifies the PR head on the GPU type of the original failure"),
        Example(
            '/bot run --gpu-type H100_PCIe --stage-list "H100_PCIe-PyTorch-1"',
            "verification on queue `gpu.H100_PCIe`, only that stage",
        ),
    ),
    order=10,
)
