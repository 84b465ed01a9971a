"""The text of the one notice on a PR whose pipeline failed because of its base branch.

Pure: facts in, Markdown out. The body says only what changes when the fix does (its state, its
verification), so a second failure from the same PR renders the same text and posts nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from bot.db.models import FixState, Verdict, VerificationState

# Signs the notice (beside the outbox's per-key marker): a reader, or a later tool, finds every
# fan-out notice by it.
NOTICE_MARKER = "<!-- repairbot:fan-out-notice -->"
_REASON_CHARS = 200


@dataclass(frozen=True)
class NoticeFacts:
    """What the notice says: the fix PR that carries the root cause, and how far it is."""

    fix_number: int
    fix_url: str
    fix_state: str  # a FixState value
    state_reason: str
    base_ref: str
    contract: str  # the base class whose contract is violated
    forbidden: str
    hook: str
    violations: int
    verification: str  # see ``verification_line``


def verification_line(state: str | None, verdict: str | None, reason: str = "") -> str:
    """The fix's latest verification in a few words (``state`` None: none requested)."""
    if state is None:
        return "not requested"
    if state == VerificationState.DONE.value:
        if verdict == Verdict.FIXED.value:
            return "passed: the failing tests pass with the fix"
        return f"done: {(verdict or 'no verdict').replace('_', ' ')}"
    if state in (VerificationState.QUEUED.value, VerificationState.RUNNING.value):
        return state
    detail = " ".join(reason.split())[:_REASON_CHARS]
    return f"{state}: {detail}" if detail else state


def _where(facts: NoticeFacts) -> str:
    link = f"#{facts.fix_number} ({facts.fix_url})"
    match facts.fix_state:
        case FixState.MERGED.value:
            return (
                f"Fix PR {link} **has been merged** into `{facts.base_ref}`. Re-run this PR's "
                f"pipeline (after merging or rebasing onto `{facts.base_ref}` if it tests the "
                "merge of an older base) and the failure should be gone."
            )
        case FixState.OPEN.value:
            return f"Fix PR {link} carries the root cause; it is open, waiting for review."
        case FixState.SUPERSEDED.value:
            return (
                f"Fix PR {link} was superseded ({facts.state_reason[:_REASON_CHARS]}): the fix "
                f"landed on `{facts.base_ref}` another way; re-run this PR's pipeline."
            )
        case _:
            return (
                f"Fix PR {link} was closed without merging: the root cause is still on "
                f"`{facts.base_ref}`."
            )


def notice_body(facts: NoticeFacts, rerun_held: str | None = None) -> str:
    """The notice, in Markdown; ``rerun_held``: why the bot did not re-run this PR's CI."""
    count = f"{facts.violations} violation{'s' if facts.violations != 1 else ''}"
    held = (
        [f"- **Re-run:** not posted by repairbot: {rerun_held}. A maintainer must trigger "
         "this PR's CI."]
        if rerun_held
        else []
    )  # fmt: skip
    return "\n".join(
        [
            f"### This PR's CI failure comes from the base branch `{facts.base_ref}`",
            "",
            f"The `{facts.contract}` contract is violated on `{facts.base_ref}` itself ({count}: "
            f"a subclass overrides `{facts.forbidden}` instead of implementing `{facts.hook}`), "
            "not in this PR's changes. Every PR on this base fails the same way until the fix "
            "lands; nothing in this PR needs to change for it.",
            "",
            f"- **Fix:** {_where(facts)}",
            f"- **Verification of the fix:** {facts.verification}",
            *held,
            "",
            "_repairbot edits this comment in place as the fix moves on._",
            "",
            NOTICE_MARKER,
        ]
    )


def body_digest(body: str) -> str:
    """The digest a notice's row keeps of the text on GitHub (an edit only when it differs)."""
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
