"""How our merged fix landed: exactly as the bot pushed it, or after a human's edits (and which).

``fixes.bot_head_sha`` is the last head the bot pushed (when it opens the PR and when it extends
it); ``fixes.head_sha`` follows every push, the bot's and a human's. When our PR merges, the PR's
head at the merge is kept as ``merged_head_sha``; if it is not the bot's head, the human's edits
are ``git diff <bot head> <merged head>`` in the repository mirror, kept capped in
``human_edit_diff``. A head that moved without changing a file (a reworded commit) is unchanged.
The dashboard's quality figures count these columns (``bot.dashboard.quality``).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixState
from bot.forges.github.api import GitHubApi
from bot.forges.github.events import PullRequestEvent
from bot.forges.github.mirror import sync_mirror
from bot.git import GitError, diff

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
    """The diff from the bot's head to the merged head, read from a freshly fetched mirror.

    Raises ``GitError`` when the mirror cannot be fetched or a commit is missing from it.
    """
    mirror = sync_mirror(settings, repository, token)
    return diff(mirror, bot, merged)


def record_merge(
    session: Session, settings: Settings, api: GitHubApi, fix: Fix, event: PullRequestEvent
) -> str:
    """On the merge of our PR: record the merged head and whether (and how) a human edited it.

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
    try:
        text = edit_diff(settings, fix.repository, api.token(), fix.bot_head_sha, event.head_sha)
    except GitError as exc:
        # The heads differ, so someone pushed: counted as edited, with why the diff is missing.
        fix.merged_with_edits = True
        fix.human_edit_diff = f"[repairbot: the edits' diff could not be read: {exc}]"[
            :MAX_ERROR_CHARS
        ]
        return "merged after human edits (diff unavailable)"
    fix.merged_with_edits = bool(text.strip())
    fix.human_edit_diff = capped(text) if fix.merged_with_edits else None
    return "merged after human edits" if fix.merged_with_edits else "merged unchanged"
