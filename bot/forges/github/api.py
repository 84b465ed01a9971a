"""The GitHub API on PyGithub: PRs, comments, statuses, reactions, permissions.

Every call goes through ``bot.forges.github.retry`` (``retry-after``, ``x-ratelimit-reset``,
backoff) and every content-creating call through ``bot.forges.github.outbox`` (at most once per
key, under the per-minute cap). What is posted on a fix's PR is mirrored into ``fix_comments``
so the dashboard shows one history whatever the forge.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar, overload

from github import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixComment
from bot.forges.base import StatusState
from bot.forges.fix_rows import status_comment
from bot.forges.github import retry, statuses
from bot.forges.github.client import github_session
from bot.forges.github.outbox import Written, defer, send_or_defer, write_once
from bot.forges.github.pulls import PullInfo, PullState
from bot.forges.github.write_ops import Operations, write_operations

T = TypeVar("T")
log = logging.getLogger(__name__)
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


def _pull_written(pull: PullRequest) -> Written:
    return Written(str(pull.number), pull.html_url, fresh=True)


class GitHubApi:
    """GitHub (api.github.com, GitHub Enterprise, or our test server) as the forge uses it.

    ``comment`` and ``set_status`` are the ``Forge`` protocol's; ``bot.forges.github.forge``
    adds ``publish``.
    """

    name = "github"

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.session = github_session(settings)

    # ----- plumbing ------------------------------------------------------------------------
    def _read(self, operation: Callable[[], T]) -> T:
        s = self.settings
        return retry.call(
            operation,
            attempts=s.github_retry_attempts,
            backoff_s=s.github_retry_backoff_s,
            max_wait_s=s.github_max_wait_s,
        )

    def read(self, operation: Callable[[], T]) -> T:
        """Run a read (or an idempotent edit) under the retry policy GitHub asks for."""
        return self._read(operation)

    def repo(self, repository: str) -> Repository:
        """A lazy handle on ``owner/name`` (no request until something is asked of it)."""
        return self.session.api.get_repo(repository)

    def token(self) -> str:
        """The token git pushes with."""
        return self._read(self.session.token)

    def is_own_login(self, login: str) -> bool:
        """Whether ``login`` is the bot's own account (what makes a comment or review ours:
        a hidden marker alone can be copied by anyone)."""
        return login.lower() == self.settings.github_bot_login.lower()

    # ----- reading -------------------------------------------------------------------------
    def open_pulls(self, repository: str, *, limit: int, base: str | None = None) -> list[PullInfo]:
        """Open PRs (into ``base`` when given), most recently updated first, at most ``limit``."""
        into = {"base": base} if base is not None else {}

        def fetch() -> list[PullInfo]:
            pulls = self.repo(repository).get_pulls(
                state="open", sort="updated", direction="desc", **into
            )
            found: list[PullInfo] = []
            for pull in pulls:
                if len(found) >= limit:
                    break
                found.append(
                    PullInfo(
                        pull.number,
                        pull.html_url,
                        pull.head.ref,
                        pull.head.sha,
                        pull.base.ref,
                        pull.user.login,
                        pull.head.repo.full_name if pull.head.repo else None,
                    )
                )
            return found

        return self._read(fetch)

    def pull(self, repository: str, number: int) -> PullState:
        """PR ``number`` as it is now (``GithubException`` 404 when there is none)."""

        def fetch() -> PullState:
            pull = self.repo(repository).get_pull(number)
            return PullState(
                number=pull.number,
                url=pull.html_url,
                state=pull.state,
                merged=bool(pull.merged),
                head_ref=pull.head.ref,
                head_sha=pull.head.sha,
                base_ref=pull.base.ref,
                author=pull.user.login,
                author_type=pull.user.type or "User",
                head_repository=pull.head.repo.full_name if pull.head.repo else None,
                maintainer_can_modify=bool(pull.maintainer_can_modify),
                base_repository=repository,
            )

        return self._read(fetch)

    def default_branch(self, repository: str) -> str:
        """The repository's default branch."""
        return self._read(lambda: self.repo(repository).default_branch)

    def pull_files(self, repository: str, number: int) -> list[str]:
        """The paths a PR changes."""
        return self._read(
            lambda: [f.filename for f in self.repo(repository).get_pull(number).get_files()]
        )

    def permission(self, repository: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (404: not a collaborator → ``none``)."""
        try:
            return self._read(lambda: self.repo(repository).get_collaborator_permission(login))
        except GithubException as exc:
            if exc.status == 404:
                return "none"
            raise

    # ----- writing -------------------------------------------------------------------------
    def open_pull(
        self,
        repository: str,
        *,
        key: str,
        branch: str,
        base: str,
        title: str,
        body: str,
        head_owner: str | None = None,
    ) -> Written:
        # Called outside any transaction: the outbox commits its own rows.
        """Open a PR from ``branch`` once per ``key`` (a lost answer finds the PR by its head).

        ``head_owner``: the branch lives in that owner's repository of the same network (a PR
        from a parent into a fork); the PR then does not let the other side's maintainers push
        to our branch.
        """
        owner = head_owner or repository.split("/")[0]
        head = branch if head_owner is None else f"{head_owner}:{branch}"

        def find() -> Written | None:
            def lookup() -> Written | None:
                for pull in self.repo(repository).get_pulls(state="open", head=f"{owner}:{branch}"):
                    return _pull_written(pull)
                return None

            return self._read(lookup)

        def post() -> Written:
            try:
                pull = self.repo(repository).create_pull(
                    base=base,
                    head=head,
                    title=title,
                    body=body,
                    maintainer_can_modify=head_owner is None,
                )
            except GithubException as exc:
                if exc.status == 422 and "already exists" in str(exc.data):
                    existing = find()
                    if existing is not None:
                        return existing
                raise
            return _pull_written(pull)

        return write_once(
            self.settings,
            key=key,
            kind="pull",
            repository=repository,
            target=branch,
            post=post,
            find=find,
        )

    @overload
    def post_comment(
        self,
        session: None,
        repository: str,
        number: int,
        body: str,
        *,
        key: str,
        marked: bool = True,
    ) -> Written: ...

    @overload
    def post_comment(
        self,
        session: Session,
        repository: str,
        number: int,
        body: str,
        *,
        key: str,
        marked: bool = True,
    ) -> None: ...

    def post_comment(
        self,
        session: Session | None,
        repository: str,
        number: int,
        body: str,
        *,
        key: str,
        marked: bool = True,
    ) -> Written | None:
        """Comment on issue/PR ``number`` once per ``key``, found again by a hidden marker (and
        the bot's login); with ``marked=False`` posted exactly as given (a command another bot
        parses whole, such as a re-run command) and found again by its exact text. With a
        ``session`` the comment is deferred: sent once that transaction commits (None)."""
        request = {"number": number, "body": body, "marked": marked}
        return self._write(session, key, "comment", repository, str(number), request)

    def edit_comment(
        self, repository: str, number: int, comment_id: int, body: str, *, key: str, edit_key: str
    ) -> Written:
        """Replace the text of a comment posted by ``post_comment`` with ``key`` (its hidden
        marker kept, so it is still found), once per ``edit_key`` (the edit's own outbox key,
        counted against the cap; a lost answer is found again by the comment's text)."""
        request = {"number": number, "comment_id": comment_id, "body": body, "key": key}
        return self._now(edit_key, "comment-edit", repository, str(comment_id), request)

    def react(
        self, session: Session | None, repository: str, number: int, comment_id: int, content: str
    ) -> None:
        """Add a reaction to a comment (deferred with a ``session``, as ``post_comment``)."""
        if content not in REACTIONS:
            raise ValueError(f"unknown reaction {content!r}")
        request = {"number": number, "comment_id": comment_id, "content": content}
        key = f"reaction:{repository}:{comment_id}:{content}"
        self._write(session, key, "reaction", repository, str(comment_id), request)

    def close_pull(self, repository: str, number: int, *, key: str) -> Written:
        """Close a PR once per ``key`` (recorded first, counted against the cap; a lost answer
        is found by the PR being closed)."""
        return self._now(key, "pull-close", repository, str(number), {"number": number})

    def commit_status(
        self,
        session: Session | None,
        repository: str,
        sha: str,
        *,
        state: StatusState,
        context: str,
        description: str,
        target_url: str | None,
    ) -> None:
        """Set a commit status (statuses work with any token; deferred with a ``session``).

        Once per change (``bot.forges.github.statuses``): the status the commit's context has
        already been asked for is the same write again (sent once); a different one is a new
        write, and an older one still unsent when a newer is asked for is dropped.
        """
        request: dict[str, Any] = {
            "repository": repository,
            "sha": sha,
            "state": state,
            "context": context,
            "description": description,
            "target_url": target_url,
        }
        request["version"] = version = statuses.requested(self.settings, session, request)
        key = statuses.status_key(repository, sha, context, version)
        self._write(session, key, "status", repository, sha, request)

    # ----- the outbox ----------------------------------------------------------------------
    def _write(
        self,
        session: Session | None,
        key: str,
        kind: str,
        repository: str,
        target: str,
        request: dict[str, Any],
        *,
        wait: bool = False,
    ) -> Written | None:
        """Defer the write into ``session``'s transaction, or send it now (``outbox``)."""
        written = send_or_defer(
            self.settings,
            session,
            key=key,
            kind=kind,
            repository=repository,
            target=target,
            request=request,
            operations=lambda: self._operations(kind, repository, key, request),
            wait=wait,
        )
        if kind == "status" and written is not None:
            statuses.overtaken(self.settings, request, written)  # the newest again, deferred
        return written

    def _now(
        self, key: str, kind: str, repository: str, target: str, request: dict[str, Any]
    ) -> Written:
        written = self._write(None, key, kind, repository, target, request)
        assert written is not None  # sent now: no session to defer into
        return written

    def _operations(
        self, kind: str, repository: str, key: str, request: dict[str, Any]
    ) -> Operations:
        post, find = write_operations(self, kind, repository, key, request)
        if kind == "status":  # dropped unsent when a newer status was asked for since
            post = statuses.guarded(self.settings, request, post)
        return post, find

    def send_deferred(
        self, key: str, kind: str, repository: str, target: str, request: dict[str, Any]
    ) -> Written:
        """Send a deferred write now, without waiting for a slot (``NoSlot`` when none)."""
        return self._now(key, kind, repository, target, request)

    # ----- the Forge protocol --------------------------------------------------------------
    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Post a comment on the fix's PR (once per ``key``; default: once per body)."""
        if fix.number is None:
            raise ValueError(f"fix #{fix.id} has no PR on GitHub yet")
        digest = hashlib.sha256(body.encode()).hexdigest()[:24]
        request = {"number": fix.number, "body": body, "marked": True}
        if defer(
            session,
            key=key or f"comment:{fix.id}:{digest}",
            kind="comment",
            repository=fix.repository,
            target=str(fix.number),
            request=request,
        ):
            session.add(FixComment(fix_id=fix.id, kind="comment", body=body))

    def set_status(
        self,
        session: Session,
        fix: Fix,
        *,
        state: StatusState,
        context: str,
        description: str,
        target_url: str | None = None,
    ) -> None:
        """Set a commit status on the fix's head commit."""
        self.commit_status(
            session,
            fix.repository,
            fix.head_sha,
            state=state,
            context=context,
            description=description,
            target_url=target_url,
        )
        session.add(status_comment(fix, state, context, description, target_url))
