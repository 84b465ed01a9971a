"""The text of the contract review: its body, its suggestion comments, and the hidden markers
by which the bot finds its own review again (pure).

GitHub limits a review body and a comment to 65,536 characters; a body that would be longer
drops patches from its end and says how many, and keeps its markers (they come first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.forges.review_plan import PatchBlock, ReviewPlan, Suggestion

MARKER = "<!-- repairbot:contracts-review -->"
COMMENT_MARKER = "<!-- repairbot:contracts-suggestion -->"
BODY_MAX = 65_536
_STATE = re.compile(
    r"<!-- repairbot:contracts-review head=(?P<head>[0-9a-f]+) digest=(?P<digest>[0-9a-f]*)"
    r" state=(?P<state>open|outdated|resolved) -->"
)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(?P<start>\d+)(?:,(?P<length>\d+))? @@", re.MULTILINE)


@dataclass(frozen=True)
class Marked:
    """What a review's hidden marker says: the head it was made for, its digest and state."""

    head: str
    digest: str
    state: str


def marker(head: str, digest: str, state: str) -> str:
    """Both hidden markers, as the first lines of a review body."""
    return (
        f"{MARKER}\n<!-- repairbot:contracts-review head={head} digest={digest} state={state} -->"
    )


def read_marker(body: str | None) -> Marked | None:
    """The marker of one of our reviews, or None for any other review."""
    if not body or MARKER not in body:
        return None
    found = _STATE.search(body)
    return Marked(found["head"], found["digest"], found["state"]) if found else None


def fenced(text: str, info: str) -> str:
    """``text`` in a code fence longer than any run of backticks inside it (GitHub allows any
    fence of three or more), so a replacement holding a fence cannot close the block early."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def suggestion_comment(suggestion: Suggestion) -> str:
    """The review comment that carries one suggestion."""
    return (
        f"**repairbot**: {suggestion.message}\n\n"
        f"{fenced(suggestion.replacement, 'suggestion')}\n\n{COMMENT_MARKER}"
    )


def resolved_comment(head: str) -> str:
    """A suggestion comment once the PR is clean (its suggestion is gone: nothing to apply)."""
    return f"✅ Resolved at {head}: no contract violations introduced.\n\n{COMMENT_MARKER}"


def dropped_comment(head: str) -> str:
    """A suggestion comment the review of the same head no longer makes."""
    return f"No longer suggested at {head}: see the review body.\n\n{COMMENT_MARKER}"


def _patch_section(patch: PatchBlock) -> str:
    where = (
        ""
        if patch.at_head
        else " (merge the base branch into the PR first: it changed these lines)"
    )
    crlf = (
        "\n\nThis file has CRLF line endings, which a copied block loses: "
        "the apply-fix command applies it exactly."
        if "\r\n" in patch.patch
        else ""
    )
    return (
        f"<details><summary><code>{_escape(patch.path)}</code>: {_summary(patch.message)}{where}"
        "</summary>"
        f"\n\n{fenced(patch.patch, 'diff')}{crlf}\n\n</details>"
    )


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _summary(message: str) -> str:
    text = _escape(message)
    return text if len(text) <= 300 else text[:297] + "..."


def review_body(
    plan: ReviewPlan, demoted: Sequence[Suggestion], prefix: str, *, limit: int = BODY_MAX
) -> str:
    """The body of the review of ``plan``; ``demoted`` suggestions are shown as patches (GitHub
    would not take a comment on their lines)."""
    patches = [*plan.patches, *(PatchBlock(s.path, s.patch, s.message) for s in demoted)]
    count = len(plan.violations)
    head = [
        marker(plan.head_sha, plan.digest(), "open"),
        f"### repairbot: {count} API-contract violation{'s' * (count != 1)} introduced by this PR"
        f" (at {plan.head_sha[:12]})",
        "",
        *(f"- {line}" for line in plan.violations),
    ]
    inline = len(plan.suggestions) - len(demoted)
    if demoted:
        head += [
            "",
            f"{len(demoted)} suggestion(s) shown as patches below: GitHub takes a"
            " suggestion only on lines of the PR's diff, and these lines are not.",
        ]
    if inline:
        head += [
            "",
            f"**{inline} one-click suggestion{'s' * (inline != 1)}** on the lines: "
            "*Commit suggestion* (or *Add suggestion to batch*) applies them.",
        ]
    footer = (
        "\n\n**Patches**: save a block as `fix.patch` and run `git apply fix.patch` at the PR"
        f" head, or comment `{prefix} apply-fix` and the bot pushes the whole fix to this branch."
    )
    return _fit("\n".join(head), [_patch_section(p) for p in patches], footer, limit, prefix)


def _fit(head: str, sections: list[str], footer: str, limit: int, prefix: str) -> str:
    """``head``, as many ``sections`` as fit, and ``footer`` (when there are sections)."""
    if not sections:
        return head[:limit]
    note = (
        "\n\n{n} more patch(es) left out: the review would exceed GitHub's 65,536 characters."
        f" Comment `{prefix} apply-fix` to have the bot push them."
    )
    reserve = len(footer) + len(note) + 10
    text = head[: max(limit - reserve, 0)]
    shown = 0
    for section in sections:
        if len(text) + 2 + len(section) > limit - reserve:
            break
        text += "\n\n" + section
        shown += 1
    left = len(sections) - shown
    return text + footer + (note.format(n=left) if left else "")


def resolved_body(marked: Marked, at: str) -> str:
    """The body of our review once the PR is clean at ``at``."""
    return (
        f"{marker(marked.head, marked.digest, 'resolved')}\n"
        f"✅ resolved at {at}: no contract violations introduced."
    )


def outdated_body(marked: Marked, url: str, new_head: str) -> str:
    """The body of a review superseded by the review of a newer head."""
    return (
        f"{marker(marked.head, marked.digest, 'outdated')}\n"
        f"Outdated: the PR moved to {new_head}; see [the review of that head]({url})."
    )


def commentable(patch: str | None) -> list[tuple[int, int]] | None:
    """The RIGHT-side line ranges (1-based, inclusive) of a file's diff on GitHub, one per hunk;
    None when GitHub gave no patch (a large or binary diff): then nothing is known."""
    if patch is None:
        return None
    ranges = []
    for found in _HUNK.finditer(patch):
        start, length = int(found["start"]), int(found["length"] or 1)
        if length:
            ranges.append((start, start + length - 1))
    return ranges
