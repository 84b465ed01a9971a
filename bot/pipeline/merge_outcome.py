"""How our merged fix landed: exactly as the bot pushed it, or after a human's edits (and which).

``fixes.bot_head_sha`` is the last head the bot pushed (when it opens the PR and when it extends
it); ``fixes.head_sha`` follows every push, the bot's and a human's. When our PR merges, the PR's
head at the merge is kept as ``merged_head_sha`` (in the delivery's transaction); if it is not
the bot's head, the task ``merge_outcome`` fetches the mirror — outside any transaction: on
SQLite the delivery's holds the write lock — and keeps the humans' diff
(``bot.pipeline.human_edits``: from the bot's head to the merged head, less what merges of the
base into the PR brought in), capped, in ``human_edit_diff``. A head that moved without changing
a file (a reworded commit, GitHub's "Update branch" merge of the base) is unchanged; a human's
commit, or a merge holding more than the clean merge of its parents (a conflict resolved by
hand), is an edit. The dashboard's quality figures count these columns
(``bot.dashboard.quality``).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixState
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.events import PullRequestEvent
from bot.forges.github.mirror import sync_mirror
from bot.git import GitError
from bot.pipeline.human_edits import human_diff
from bot.pipeline.task_base import RepairbotTask
from bot.queue import names as task_names
from bot.queue.celery_app import app
from bot.queue.starts import start_merge_outcome

MAX_EDIT_DIFF_CHARS = 200_000  # the fix page shows this much; the rest is on the branch
MAX_ERROR_CHARS = 300


def capped(text: str, limit: int = MAX_EDIT_DIFF_CHARS) -> str:
    """``text``, cut at ``limit`` characters with a line saying how much was left out."""
    if len(text) <= limit:
        return text
    return (
        text[:limit]
        + f"\n[repairbot: the edits' diff is {len(text)} characters; the first {limit} are kept]\n"
    )


def edit_diff(settings: Settings, repository: str, token: str | None, bot: str, merged: str) -> str:
    """The humans' diff from the bot's head to the merged head (merges of the base left out),
    read from a freshly fetched mirror.

    Raises ``GitError`` when the mirror cannot be fetched or a commit is missing from it.
    """
    mirror = sync_mirror(settings, repository, token)
    return human_diff(mirror, bot, merged)


def record_merge(session: Session, fix: Fix, event: PullRequestEvent) -> str:
    """On the merge of our PR: record the merged head, and whether a human edited it when the
    heads say so at once; otherwise queue ``merge_outcome`` to read the edits after the commit.

    Once per fix (a redelivered ``closed`` event finds the merged head kept and does nothing);
    the note for the delivery's outcome, empty when this event is not our merge.
    """
    if not (event.action == "closed" and event.merged and fix.state == FixState.MERGED.value):
        return ""
    if fix.merged_head_sha is not None:
        return ""
    fix.merged_head_sha = event.head_sha
    if fix.bot_head_sha is None:  # opened before the bot kept its heads: unknown, not guessed
        return "merged; the bot's head was not recorded, so human edits are unknown"
    if event.head_sha == fix.bot_head_sha:
        fix.merged_with_edits, fix.human_edit_diff = False, None
        return "merged unchanged"
    start_merge_outcome(session, fix.id)
    return "merged from a head the bot did not push: reading the edits"


@app.task(name=task_names.MERGE_OUTCOME, base=RepairbotTask, bind=True)
def merge_outcome(self: RepairbotTask, fix_id: int) -> str:
    """Read and keep the human's edits of merged fix ``fix_id``; safe to rerun."""
    return settle_edits(self.settings, fix_id)


def settle_edits(settings: Settings, fix_id: int) -> str:
    """The merged fix's edits from the mirror, kept on the row (once: a rerun finds them)."""
    with session_scope(settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        if fix.merged_with_edits is not None or not (fix.bot_head_sha and fix.merged_head_sha):
            return "nothing to read"
        repository, bot, merged = fix.repository, fix.bot_head_sha, fix.merged_head_sha
    kept: str | None
    try:
        text = edit_diff(settings, repository, GitHubApi(settings).token(), bot, merged)
    except GitError as exc:
        # The heads differ, so someone pushed: counted as edited, with why the diff is missing.
        edited, kept = True, f"[repairbot: the edits' diff could not be read: {exc}]"
        kept = kept[:MAX_ERROR_CHARS]
    else:
        edited = bool(text.strip())
        kept = capped(text) if edited else None
    with session_scope(settings.resolved_database_url) as session:
        fix = session.get_one(Fix, fix_id)
        if fix.merged_with_edits is None:
            fix.merged_with_edits, fix.human_edit_diff = edited, kept
    return "merged after human edits" if edited else "merged unchanged"
