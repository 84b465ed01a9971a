"""The opt-out label on a PR (``Settings.opt_out_label``, default ``repairbot:opt-out``).

Every ``pull_request`` payload carries the PR's labels as they are after the event: the label
present in any of them → an opt-out row (``bot.db.records.opt_outs``, by whoever sent the event).
Only an ``unlabeled`` event that removes that very label lifts the row: a redelivered or late older
payload (its labels from before the label was added) must not lift an opt-out made since.
Label names compare case-insensitively, as GitHub's do.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.records.opt_outs import OptOutVia, lift, opt_out
from bot.forges.github.events import PullRequestEvent


def on_labels(session: Session, settings: Settings, event: PullRequestEvent) -> str:
    """Record or lift the PR's label opt-out; says what it did, for the delivery's outcome."""
    if event.labels is None:
        return "no labels in the payload"
    label, number = settings.opt_out_label, event.number
    who = event.sender or event.author or "unknown"
    repository, via = event.repository, OptOutVia.LABEL
    if label.lower() in (name.lower() for name in event.labels):
        _row, new = opt_out(session, repository=repository, pr_number=number, via=via, by=who)
        return f"#{number} opted out by its `{label}` label" + ("" if new else " (already)")
    removed = event.action == "unlabeled" and (event.label or "").lower() == label.lower()
    if removed and lift(session, repository=repository, pr_number=number, via=via, by=who):
        return f"#{number}: the `{label}` label was removed, its opt-out lifted"
    return f"#{number} has no `{label}` label"
