"""Findings as plain JSON-ready data (the CLI's ``--json`` and, later, the API)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fixers.classify.failures import Finding


def finding_to_dict(finding: Finding) -> dict[str, Any]:
    """One finding as JSON-ready data; frames become ``path:line`` strings plus details."""
    data = asdict(finding)
    data["missing_methods"] = list(finding.missing_methods)
    data["frame"] = finding.frame.location() if finding.frame else None
    data["class_frame"] = finding.class_frame.location() if finding.class_frame else None
    data["test_count"] = len(finding.tests)
    data["kind"] = finding.kind  # `job`: the job failed for it, no test did (no test ids)
    return data
