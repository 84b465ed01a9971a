"""Pure decisions of the repair pipeline: which runs a report needs, dedupe keys, branch names."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fixers.classify.failures import Finding
from fixers.classify.signatures import UNCLASSIFIED
from fixers.contracts.model import Contract, contracts_from_findings
from fixers.learned.breaks import LEARNING_FIXER, breaks_of


def contract_fixed(finding: Finding) -> bool:
    """Whether a known contract's repair fixes ``finding`` (a learned migration has runs of its
    own: ``plan_runs``)."""
    return bool(finding.fixer) and finding.fixer != LEARNING_FIXER


@dataclass(frozen=True)
class PlannedRun:
    """One repair run to create: a fixable contract, or the report's unfixable remainder."""

    root_cause: str
    signature: str
    contract: Contract | None  # None: nothing to fix (the run ends unclassified)
    fixable: bool
    reason: str


def plan_runs(findings: Sequence[Finding]) -> list[PlannedRun]:
    """One run per contract the findings name and one per contract break to learn (one PR per
    root cause), else one unfixable run."""
    contracts = contracts_from_findings(list(findings))
    fixable = [f for f in findings if contract_fixed(f)]
    learned = [
        PlannedRun(
            root_cause=brk.root_cause,
            signature=finding.signature,
            contract=brk.as_contract(),
            fixable=True,
            reason=f"learn the migration of {brk.describe()} from the repository's history",
        )
        for finding in findings
        if finding.fixer == LEARNING_FIXER
        for brk in breaks_of([finding])
    ]
    # One run per root cause: the first class named stands for the others (one learning finds
    # every subclass the contract commit missed).
    first: dict[str, PlannedRun] = {}
    for run in learned:
        first.setdefault(run.root_cause, run)
    learned = list(first.values())
    if contracts or learned:
        signatures = [f.signature for f in fixable]
        preferred = "contract-forward-override"
        signature = (
            preferred if preferred in signatures else (signatures[0] if signatures else "contract")
        )
        return [
            PlannedRun(
                root_cause=contract.describe(),
                signature=signature,
                contract=contract,
                fixable=True,
                reason=_names(fixable),
            )
            for contract in contracts
        ] + learned
    if not findings:
        return [
            PlannedRun("no-failures", UNCLASSIFIED, None, False, "the report holds no failures")
        ]
    top = findings[0]
    reason = "; ".join(sorted({f"{f.signature}: {f.message[:120]}" for f in findings}))[:2000]
    return [PlannedRun(f"{top.signature}:{top.message[:200]}", top.signature, None, False, reason)]


def _names(findings: Iterable[Finding]) -> str:
    classes = sorted({f.class_name for f in findings if f.class_name})
    return "classes named in the log: " + ", ".join(classes) if classes else ""


def fixable_tests(findings: Iterable[Finding]) -> list[str]:
    """The failed tests of the findings a fixer handles: what a fix must make pass."""
    return sorted({test for f in findings if contract_fixed(f) for test in f.tests})


def root_causes_of(finding: Finding) -> list[str]:
    """The root causes (``PlannedRun.root_cause``) a finding's failure belongs to: its
    contract's, or its contract break's; none for a failure no fixer handles."""
    if finding.fixer == LEARNING_FIXER:
        return [brk.root_cause for brk in breaks_of([finding])]
    if contract_fixed(finding):
        return [contract.describe() for contract in contracts_from_findings([finding])]
    return []


def scoped_tests(
    findings: Iterable[Finding], root_causes: Iterable[str]
) -> tuple[list[str], list[str]]:
    """(the failed tests of ``root_causes``, which a fix of them must make pass; every other
    failed test of the same findings, which that fix does not address)."""
    wanted = set(root_causes)
    addressed: set[str] = set()
    everything: set[str] = set()
    for finding in findings:
        everything.update(finding.tests)
        if wanted & set(root_causes_of(finding)):
            addressed.update(finding.tests)
    return sorted(addressed), sorted(everything - addressed)


def dedupe_key(
    *, repository: str, base_ref: str | None, contract: Contract, violations: Iterable[str]
) -> str:
    """Same repository, base branch, contract and violations → same key → one PR."""
    material = json.dumps(
        [
            repository,
            base_ref or "",
            contract.base,
            contract.forbidden,
            contract.hook,
            sorted(set(violations)),
        ]
    )
    return hashlib.sha256(material.encode()).hexdigest()


def branch_name(signature: str, key: str) -> str:
    """``repairbot/<signature>/<short hash>``."""
    return f"repairbot/{signature}/{key[:10]}"
