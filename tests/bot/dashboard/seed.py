"""Realistic dashboard data written through the models, as the pipeline and runner would."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from bot.db.models import (
    CiFailure,
    CommandInvocation,
    Delivery,
    Fix,
    FixComment,
    RepairRun,
    Suppression,
    Transition,
    Verification,
)

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
DIFF = """diff --git a/workers/mtp.py b/workers/mtp.py
--- a/workers/mtp.py
+++ b/workers/mtp.py
@@ -10,7 +10,7 @@ class MTPWorker(SpecWorkerBase):
     @nvtx_range("mtp.forward")
-    def forward(self, input_ids, position_ids, hidden_states, logits, attn_metadata, spec_metadata, draft_model):
+    def _forward_impl(self, input_ids, position_ids, hidden_states, logits, attn_metadata, spec_metadata, draft_model):
         return logits
"""
EVIDENCE = (
    "TypeError: MTPWorker must not override SpecWorkerBase.forward; implement _forward_impl "
    "instead."
)


def report(
    session: Session,
    *,
    n: int,
    findings: list[dict[str, object]] | None = None,
    received: datetime = T0,
    repository: str = "/repos/trtllm",
    pipeline: str = "L0_MergeRequest_PR",
) -> CiFailure:
    """A classified report with one contract finding (or ``findings``)."""
    delivery = Delivery(source="ci", key=f"ci:{pipeline}:{n}", event="ci_failure", body=b"log")
    session.add(delivery)
    session.flush()
    row = CiFailure(
        delivery_id=delivery.id,
        pipeline=pipeline,
        build_number=n,
        build_url=f"http://jenkins.invalid/job/{pipeline}/{n}/",
        repository=repository,
        stage="H100_PCIe-PyTorch-1",
        format="console",
        failure_count=3,
        findings=findings
        if findings is not None
        else [
            {
                "signature": "contract-forward-override",
                "class_name": "MTPWorker",
                "message": EVIDENCE,
                "frame": "workers/mtp.py:10",
                "tests": ["tests/test_mtp.py::test_forward"],
                "stages": ["H100_PCIe-PyTorch-1"],
                "gpu_types": ["H100_PCIe"],
                "evidence": EVIDENCE,
                "test_count": 1,
            }
        ],
        received_at=received,
        classified_at=received + timedelta(seconds=2),
    )
    session.add(row)
    session.flush()
    return row


def fix(
    session: Session,
    *,
    n: int,
    state: str = "open",
    title: str | None = None,
    repository: str = "/repos/trtllm",
    signature: str = "contract-forward-override",
    created: datetime | None = None,
    received: datetime | None = None,
    codemods: list[str] | None = None,
) -> Fix:
    """A report, its run with the full timeline, and the fix PR it opened."""
    received = received or T0 + timedelta(minutes=n)
    created = created or received + timedelta(seconds=40 + n)
    source = report(session, n=n, received=received, repository=repository)
    row = Fix(
        forge="local",
        repository=repository,
        dedupe_key=f"key-{n}",
        signature=signature,
        base_ref="main",
        base_sha="a" * 40,
        branch=f"repairbot/{signature}/{n:04d}",
        head_sha="b" * 40,
        title=title or f"[None][fix] Rename MTPWorker{n}.forward to _forward_impl",
        body="## Description\nRenames `forward`.\n",
        files=["workers/mtp.py"],
        violations=[f"workers/mtp.py:10 `MTPWorker{n}` (forward-override)"],
        diff=DIFF,
        state=state,
        codemods=["rename_forbidden"] if codemods is None else codemods,
        bot_head_sha="b" * 40,
        created_at=created,
        closed_at=created + timedelta(hours=1) if state != "open" else None,
    )
    session.add(row)
    session.flush()
    row.number, row.url = row.id, f"http://127.0.0.1:8000/fixes/{row.id}"
    run = RepairRun(
        report_id=source.id,
        root_cause=f"contract-forward-override:MTPWorker{n}",
        signature=signature,
        state="pr_opened",
        fix_id=row.id,
        created_at=received,
    )
    session.add(run)
    session.flush()
    previous = None
    for step, state_name in enumerate(("classified", "swept", "patched", "pr_opened")):
        at = received + timedelta(seconds=2 + 10 * step)
        session.add(Transition(run_id=run.id, from_state=previous, to_state=state_name, at=at))
        previous = state_name
    session.flush()
    return row


def verification(
    session: Session,
    fix_row: Fix,
    *,
    verdict: str | None = "fixed",
    state: str = "done",
    device: str | None = "cpu",
    on_requested_device: bool | None = False,
    log: str = "collected 2 items\n2 passed",
    test_log: str = "",
) -> Verification:
    """A verification with per-test before/after results."""
    created = fix_row.created_at + timedelta(seconds=5)
    row = Verification(
        fix_id=fix_row.id,
        requested_by="repairbot (automatic)",
        requested_queue="gpu.H100_PCIe",
        queue="cpu" if device == "cpu" else "gpu.H100_PCIe",
        host="runner-1",
        device=device,
        on_requested_device=on_requested_device,
        state=state,
        verdict=verdict,
        tests=["tests/test_mtp.py::test_forward", "runtime/tests/test_conformance.py::test_greedy"]
        if state == "done"
        else [],
        results={
            "tests": [
                {
                    "test_id": "tests/test_mtp.py::test_forward",
                    "before": "failed",
                    "after": "passed",
                    "meaning": "fixed",
                    "log": test_log,
                },
                {
                    "test_id": "runtime/tests/test_conformance.py::test_greedy",
                    "before": "passed",
                    "after": "passed",
                    "meaning": "passing",
                },
            ],
            "problems": [],
            "flaky": [],
            "isolation": "process group, no secrets",
            "seconds": 57.0,
        }
        if state == "done"
        else {},
        log=log,
        created_at=created,
        started_at=created + timedelta(seconds=3) if state != "queued" else None,
        finished_at=created + timedelta(seconds=60) if state == "done" else None,
    )
    session.add(row)
    session.flush()
    return row


def conversation(
    session: Session, fix_row: Fix, *, author: str = "alice", text: str = "/bot run"
) -> None:
    """A /bot command, its reply, and a commit status on the PR."""
    session.add(
        CommandInvocation(
            repository=fix_row.repository,
            pr_number=fix_row.number or fix_row.id,
            fix_id=fix_row.id,
            author=author,
            text=text,
            command="run",
            outcome="accepted",
            reply="Verification queued on gpu.H100_PCIe.",
            created_at=fix_row.created_at + timedelta(minutes=2),
        )
    )
    session.add(
        FixComment(
            fix_id=fix_row.id,
            kind="status",
            context="repairbot/verify",
            state="success",
            body="fixed on cpu",
            created_at=fix_row.created_at + timedelta(minutes=3),
        )
    )
    session.flush()


# ----- the quality figures (issue 15): every outcome, known counts -------------------------
OTHER = "abstract-missing-hook"
H100 = "NVIDIA H100 PCIe"
EDIT = """diff --git a/workers/mtp.py b/workers/mtp.py
--- a/workers/mtp.py
+++ b/workers/mtp.py
@@ -11,3 +11,3 @@
-    def _forward_impl(self, input_ids):
+    def _forward_impl(self, input_ids: "<script>alert(1)</script>"):
"""


def _merged(session: Session, n: int, edits: bool | None, **kw: Any) -> Fix:
    row = fix(session, n=n, state="merged", **kw)
    row.merged_with_edits = edits
    row.merged_head_sha = "c" * 40 if edits else row.bot_head_sha
    row.human_edit_diff = EDIT if edits else None
    return row


def outcomes(session: Session) -> dict[int, Fix]:
    """Nine opened fix PRs with every outcome, verifications on two devices, one unopened row.

    Signature ``contract-forward-override`` (codemod ``rename_forbidden``): 1 merged unchanged,
    2 merged unchanged then reverted, 3 merged after edits, 4 closed unmerged, 5 open,
    6 superseded, 7 merged before outcomes were kept. ``abstract-missing-hook`` (codemods
    ``add_hook_stub`` and ``rename_forbidden``): 8 merged unchanged, 9 open. 10: reserved, no PR.
    """
    fixes = {
        1: _merged(session, 1, False),
        2: _merged(session, 2, False),
        3: _merged(session, 3, True),
        4: fix(session, n=4, state="closed"),
        5: fix(session, n=5),
        6: fix(session, n=6, state="superseded"),
        7: _merged(session, 7, None),
    }
    both = ["add_hook_stub", "rename_forbidden"]
    fixes[8] = _merged(session, 8, False, signature=OTHER, codemods=both)
    fixes[9] = fix(session, n=9, signature=OTHER, codemods=both)
    fixes[10] = fix(session, n=10, signature=OTHER, codemods=both)
    fixes[10].number = None  # reserved by a run, never opened: not counted
    session.add(
        Suppression(
            repository=fixes[2].repository,
            dedupe_key=fixes[2].dedupe_key,
            reason="reverted",
            fix_id=fixes[2].id,
            decided_by="a revert on the base branch",
        )
    )
    # Each finished verification runs 57 s (started 3 s after its request, finished at 60 s);
    # failure → finished is 105 + n s (failure at T0 + n min, PR 40 + n s later, +5 s, +60 s).
    verification(session, fixes[1], device="cpu")
    verification(session, fixes[2], device=H100, on_requested_device=True)
    verification(session, fixes[3], device="cpu")
    verification(session, fixes[4], device="cpu", verdict="still_failing")
    verification(session, fixes[8], device=H100, on_requested_device=True)
    verification(session, fixes[5], device="cpu", verdict=None, state="running")
    verification(session, fixes[9], device=None, verdict=None, state="queued")
    # A later "fixed" verdict of fix 1 does not move its time: the first one counts.
    later = verification(session, fixes[1], device="cpu")
    assert later.started_at is not None and later.finished_at is not None
    later.started_at += timedelta(hours=1)
    later.finished_at += timedelta(hours=1)
    session.flush()
    return fixes
