"""Verify a fix of the demo repository with the real runner on this machine's device.

Run: .venv/bin/python scripts/verify_demo.py [--queue gpu.any] [--json FILE] [--log FILE]

Builds the demo target from the runtime's legacy workers, fixes it with the codemods, then runs
the verification runner (sandboxed before/after runs, conformance suite) exactly as a GPU worker
would, and prints the verdict and the device it really ran on. Exit 0 when the verdict is fixed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.cli.demo_target import build_target
from bot.git import commit_all
from bot.runner.verification import VerificationPlan, verify
from fixers.contracts.model import SPEC_WORKER_CONTRACT
from fixers.sandbox import Limits
from fixers.sweep.run import fix, write_changes


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--queue", default="gpu.any", help="The queue the verification pretends to serve"
    )
    parser.add_argument("--json", type=Path, help="Write the outcome here too")
    parser.add_argument(
        "--log", type=Path, help="Copy the verification log here (why a test failed or errored)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="repairbot-verify-demo-") as tmp:
        repo = Path(tmp) / "target"
        base = build_target(repo)
        result = fix(repo, [SPEC_WORKER_CONTRACT], imports=False)
        write_changes(repo, result)
        head = commit_all(repo, "repairbot fix")
        plan = VerificationPlan(
            repo,
            base,
            head,
            [c.path for c in result.changes],
            ["tests/test_legacy_spec.py", "tests/test_worker_double.py"],
            args.queue,
        )
        outcome = verify(
            plan,
            run_dir=Path(tmp) / "run",
            limits=Limits(timeout_s=1800),
            reruns=1,
            should_cancel=lambda: False,
        )
        log = Path(tmp) / "run" / "verification.log"
        if args.log and log.is_file():  # the run dir goes with the temporary folder
            shutil.copyfile(log, args.log)
    summary = {
        "verdict": outcome.verdict,
        "device": outcome.device,
        "requested_queue": args.queue,
        "on_requested_device": outcome.on_requested_device,
        "isolation": outcome.isolation,
        "seconds": round(outcome.seconds, 1),
        "problems": outcome.problems,
        "tests": [vars(t) for t in outcome.tests],
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "tests"}, indent=2))
    for test in outcome.tests:
        print(f"  {test.meaning:15} {test.before:>8} → {test.after:<8} {test.test_id}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    return 0 if outcome.verdict == "fixed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
