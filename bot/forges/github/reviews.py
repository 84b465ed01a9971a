"""One contract review per PR head, found again by its hidden marker and kept up to date.

``sync_contract_review`` posts the review of a ``ReviewPlan`` (``bot.forges.review_plan``):
nothing when our latest review already says the same; an edit in place when a review of this
head exists (GitHub cannot add comments to a submitted review, so suggestions it lacks are shown
as patches in its body); else one new review for the head, the older ones marked outdated; and
when the PR is clean, our review is marked resolved. Edits go comments first, body last: the
body's marker is what the next run reads, so an interrupted sync is finished by the next one.

Creation goes through the outbox once per head; an edit is decided against the state just read
and sending it twice leaves the same text, so each edit is its own outbox write (as a commit
status is): a stable key would skip a later edit back to an earlier text.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import uuid4

from github import GithubException
from github.Commit import Commit
from github.PullRequest import PullRequest, ReviewComment
from github.PullRequestComment import PullRequestComment
from github.PullRequestReview import PullRequestReview

from bot.forges.github.api import GitHubApi
from bot.forges.github.outbox import Written, write_once
from bot.forges.github.review_text import (
    BODY_MAX,
    COMMENT_MARKER,
    Marked,
    commentable,
    dropped_comment,
    outdated_body,
    read_marker,
    resolved_body,
    resolved_comment,
    review_body,
    suggestion_comment,
)
from bot.forges.review_plan import ReviewPlan, Suggestion

log = logging.getLogger(__name__)
# Suggestions only: the bot never approves (nor requests changes on) any PR, its own least of
# all; merging is a human's decision, and nothing in the bot calls a merge endpoint.
REVIEW_EVENT = "COMMENT"


@dataclass(frozen=True)
class _Ours:
    review: PullRequestReview
    marked: Marked


@dataclass
class _Sync:
    """One sync's context: where it writes, and the PR it reads."""

    api: GitHubApi
    repository: str
    pull: PullRequest

    def write(self, kind: str, target: str, edit: Callable[[], object]) -> None:
        """One edit through the outbox (counted against the per-minute cap)."""

        def post() -> Written:
            edit()
            return Written(target, None, fresh=True)

        write_once(
            self.api.settings,
            key=f"{kind}:{uuid4().hex}",
            kind=kind,
            repository=self.repository,
            target=target,
            post=post,
            find=lambda: None,
        )

    def ours(self) -> list[_Ours]:
        """Our reviews on the PR, oldest first: written by the bot's own login and carrying its
        marker. A marker in anyone else's review is ignored (and logged): copying it must not
        make the bot edit, or stop at, a stranger's review."""
        reviews = self.api.read(lambda: list(self.pull.get_reviews()))
        found = []
        for review in reviews:
            marked = read_marker(review.body)
            if marked is None:
                continue
            if not self.api.is_own_login(review.user.login if review.user else ""):
                log.warning(
                    "%s#%s: review %s by %s carries repairbot's marker; ignored",
                    self.repository, self.pull.number, review.id,
                    review.user.login if review.user else "?",
                )  # fmt: skip
                continue
            found.append(_Ours(review, marked))
        return sorted(found, key=lambda o: o.review.id)

    def comments(self, review: PullRequestReview) -> list[PullRequestComment]:
        """The comments of one of our reviews."""
        return self.api.read(lambda: list(self.pull.get_single_review_comments(review.id)))

    def edit_body(self, review: PullRequestReview, body: str) -> None:
        """Replace a review's body (``PUT .../reviews/{id}``) unless it already says ``body``."""
        if review.body != body:
            self.write("review-edit", str(review.id), lambda: review.edit(body))

    def edit_comment(self, comment: PullRequestComment, body: str) -> None:
        """Replace a review comment's body unless it already says ``body``."""
        if comment.body != body:
            self.write("review-comment-edit", str(comment.id), lambda: comment.edit(body))


def _prefix(sync: _Sync) -> str:
    """The bot's own command prefix (``/repairbot`` by default), for the apply-fix hint."""
    return sync.api.settings.command_prefix


def _supersede(sync: _Sync, older: Sequence[_Ours], latest: Written, head: str) -> None:
    """Mark our open reviews other than ``latest`` outdated, with a link to it."""
    for old in older:
        if old.marked.state == "open" and str(old.review.id) != latest.remote_id:
            sync.edit_body(old.review, outdated_body(old.marked, latest.url or "", head))


def _written(review: PullRequestReview) -> Written:
    return Written(str(review.id), review.html_url, fresh=False)


def _resolve(sync: _Sync, ours: list[_Ours], head: str) -> str:
    if not ours:
        return "nothing to post: no violations introduced and no review of ours"
    latest = ours[-1]
    _supersede(sync, ours[:-1], _written(latest.review), head)
    if latest.marked.state == "resolved":
        return f"unchanged: review {latest.review.id} already resolved"
    for comment in sync.comments(latest.review):
        if COMMENT_MARKER in (comment.body or "") and "✅ Resolved" not in comment.body:
            sync.edit_comment(comment, resolved_comment(head))
    sync.edit_body(latest.review, resolved_body(latest.marked, head))
    return f"resolved review {latest.review.id} at {head}"


def _edit_in_place(sync: _Sync, same: _Ours, plan: ReviewPlan) -> str:
    by_lines: dict[tuple[str, int, int], PullRequestComment] = {}
    for comment in sync.comments(same.review):
        line = comment.original_line
        by_lines[(comment.path, comment.original_start_line or line, line)] = comment
    demoted: list[Suggestion] = []
    for suggestion in plan.suggestions:
        key = (suggestion.path, suggestion.start_line, suggestion.line)
        body = suggestion_comment(suggestion)
        if key not in by_lines or len(body) > BODY_MAX:
            demoted.append(suggestion)
            continue
        sync.edit_comment(by_lines.pop(key), body)
    for left in by_lines.values():
        if COMMENT_MARKER in (left.body or ""):
            sync.edit_comment(left, dropped_comment(plan.head_sha))
    sync.edit_body(same.review, review_body(plan, demoted, _prefix(sync)))
    return f"updated review {same.review.id} in place ({len(demoted)} suggestion(s) as patches)"


def _in_diff(sync: _Sync, suggestions: Sequence[Suggestion]) -> list[Suggestion]:
    """The suggestions whose lines are in the PR's diff as GitHub shows it (lines of a file
    whose patch GitHub does not give are left to GitHub to judge)."""
    if not suggestions:
        return []
    ranges = sync.api.read(
        lambda: {f.filename: commentable(f.patch) for f in sync.pull.get_files()}
    )
    kept = []
    for s in suggestions:
        spans = ranges.get(s.path, [])
        if spans is None or any(a <= s.start_line and s.line <= b for a, b in spans):
            kept.append(s)
    return kept


def _thread_refused(exc: GithubException) -> bool:
    # GitHub's 422 for a comment outside the diff: "Pull request review thread line must be part
    # of the diff", "... start line must be part of the same hunk ...", "... path is invalid".
    return exc.status == 422 and "review thread" in str(exc.data)


def _comment(suggestion: Suggestion) -> ReviewComment:
    comment = ReviewComment(
        path=suggestion.path,
        body=suggestion_comment(suggestion),
        line=suggestion.line,
        side="RIGHT",
    )
    if suggestion.start_line != suggestion.line:  # GitHub wants start_line only for a range
        comment["start_line"], comment["start_side"] = suggestion.start_line, "RIGHT"
    return comment


def _create(sync: _Sync, plan: ReviewPlan) -> Written:
    fitting = [s for s in plan.suggestions if len(suggestion_comment(s)) <= BODY_MAX]
    inline = _in_diff(sync, fitting)
    head = plan.head_sha

    def find() -> Written | None:
        for review in sync.ours():
            if review.marked.head == head:
                return Written(str(review.review.id), review.review.html_url, fresh=True)
        return None

    def post() -> Written:
        commit = sync.api.repo(sync.repository).get_commit(head)
        try:
            made = _submit(sync, plan, commit, inline)
        except GithubException as exc:
            if not _thread_refused(exc):
                raise
            made = _submit(sync, plan, commit, [])
        return Written(str(made.id), made.html_url, fresh=True)

    key = f"review:{sync.repository}:{sync.pull.number}:{head}"
    if len(key) > 200:
        key = f"review:{hashlib.sha256(key.encode()).hexdigest()}"
    return write_once(
        sync.api.settings,
        key=key,
        kind="review",
        repository=sync.repository,
        target=str(sync.pull.number),
        post=post,
        find=find,
    )


def _is_own(api: GitHubApi, pull: PullRequest) -> bool:
    """Whether ``pull`` was opened by the bot itself: it never reviews (so never approves) one."""
    return api.is_own_login(pull.user.login)


def _submit(
    sync: _Sync, plan: ReviewPlan, commit: Commit, inline: Sequence[Suggestion]
) -> PullRequestReview:
    demoted = [s for s in plan.suggestions if s not in inline]
    return sync.pull.create_review(
        commit=commit,
        body=review_body(plan, demoted, _prefix(sync)),
        event=REVIEW_EVENT,
        comments=[_comment(s) for s in inline],
    )


def sync_contract_review(api: GitHubApi, repository: str, number: int, plan: ReviewPlan) -> str:
    """Bring our contract review of PR ``number`` in line with ``plan``; says what it did.
    Called outside any transaction: each outbox write commits its own row."""
    pull = api.read(lambda: api.repo(repository).get_pull(number))
    if _is_own(api, pull):
        return f"not reviewing #{number}: it is repairbot's own PR (never reviewed by the bot)"
    sync = _Sync(api, repository, pull)
    ours = sync.ours()
    if plan.clean:
        return _resolve(sync, ours, plan.head_sha)
    latest = ours[-1] if ours else None
    if latest and latest.marked.state == "open" and latest.marked.digest == plan.digest():
        _supersede(sync, ours[:-1], _written(latest.review), latest.marked.head)
        return f"unchanged: review {latest.review.id} already says this"
    same = next((o for o in ours if o.marked.head == plan.head_sha), None)
    if same is not None:
        _supersede(sync, [o for o in ours if o is not same], _written(same.review), plan.head_sha)
        return _edit_in_place(sync, same, plan)
    written = _create(sync, plan)
    _supersede(sync, ours, written, plan.head_sha)
    return f"created review {written.remote_id} for {plan.head_sha}"
