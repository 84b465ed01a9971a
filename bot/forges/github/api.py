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
from typing import TypeVar
from uuid import uuid4

from github import GithubException
from github.PullRequest import PullRequest
from github.Repository import Repository
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import Fix, FixComment
from bot.forges.base import StatusState
from bot.forges.github import retry
from bot.forges.github.client import github_session
from bot.forges.github.outbox import Written, write_once
from bot.forges.github.pulls import PullInfo, PullState

T = TypeVar("T")
log = logging.getLogger(__name__)
STATUS_DESCRIPTION_MAX = 140
COMMENT_MAX = 65_000
REACTIONS = frozenset({"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"})


def comment_marker(key: str) -> str:
    """The hidden marker a comment posted under ``key`` carries (found again by it)."""
    return f"<!-- repairbot:{hashlib.sha256(key.encode()).hexdigest()[:16]} -->"


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
            session=None,
            key=key,
            kind="pull",
            repository=repository,
            target=branch,
            post=post,
            find=find,
        )

    def post_comment(
        self,
        session: Session | None,
        repository: str,
        number: int,
        body: str,
        *,
        key: str,
        marked: bool = True,
    ) -> Written:
        """Comment on issue/PR ``number`` once per ``key``, found again by a hidden marker; with
        ``marked=False`` posted exactly as given (a command another bot parses whole, such as
        a re-run command) and found again by its exact text."""
        marker = comment_marker(key)
        text = body[:COMMENT_MAX] + (f"\n\n{marker}" if marked else "")

        def ours(comment_body: str) -> bool:
            return marker in comment_body if marked else comment_body.strip() == text.strip()

        def find() -> Written | None:
            def lookup() -> Written | None:
                for comment in self.repo(repository).get_issue(number).get_comments():
                    if not ours(comment.body or ""):
                        continue
                    if self.is_own_login(comment.user.login if comment.user else ""):
                        return Written(str(comment.id), comment.html_url, fresh=True)
                    log.warning(
                        "%s#%s: comment %s by %s looks like ours (key %s); ignored",
                        repository, number, comment.id,
                        comment.user.login if comment.user else "?", key,
                    )  # fmt: skip
                return None

            return self._read(lookup)

        def post() -> Written:
            comment = self.repo(repository).get_issue(number).create_comment(text)
            return Written(str(comment.id), comment.html_url, fresh=True)

        return write_once(
            self.settings,
            session=session,
            look_first=session is not None,
            key=key,
            kind="comment",
            repository=repository,
            target=str(number),
            post=post,
            find=find,
        )

    def edit_comment(
        self, repository: str, number: int, comment_id: int, body: str, *, key: str
    ) -> None:
        """Replace the text of a comment posted by ``post_comment`` with ``key`` (its hidden
        marker kept, so it is still found); the same edit twice is harmless, so a plain retry."""
        text = body[:COMMENT_MAX] + f"\n\n{comment_marker(key)}"
        self._read(
            lambda: self.repo(repository).get_issue(number).get_comment(comment_id).edit(text)
        )

    def react(
        self, session: Session | None, repository: str, number: int, comment_id: int, content: str
    ) -> None:
        """Add a reaction to a comment (GitHub itself makes this idempotent)."""
        if content not in REACTIONS:
            raise ValueError(f"unknown reaction {content!r}")

        def post() -> Written:
            issue = self.repo(repository).get_issue(number)
            reaction = issue.get_comment(comment_id).create_reaction(content)
            return Written(str(reaction.id), None, fresh=True)

        write_once(
            self.settings,
            session=session,
            key=f"reaction:{repository}:{comment_id}:{content}",
            kind="reaction",
            repository=repository,
            target=str(comment_id),
            post=post,
            find=lambda: None,
        )

    def close_pull(self, repository: str, number: int) -> None:
        """Close a PR (closing a closed PR is harmless, so a plain retry is safe)."""
        self._read(lambda: self.repo(repository).get_pull(number).edit(state="closed"))

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
        """Set a commit status (statuses work with any token).

        Each call is a new write (counted against the cap): setting the same status twice is
        harmless, and a later status with the same text must still replace a different one.
        """

        def post() -> Written:
            commit = self.repo(repository).get_commit(sha)
            made = commit.create_status(
                state=state,
                context=context,
                description=description[:STATUS_DESCRIPTION_MAX],
                **({"target_url": target_url} if target_url else {}),
            )
            return Written(str(made.id), target_url, fresh=True)

        write_once(
            self.settings,
            session=session,
            key=f"status:{uuid4().hex}",
            kind="status",
            repository=repository,
            target=sha,
            post=post,
            find=lambda: None,
        )

    # ----- the Forge protocol --------------------------------------------------------------
    def comment(self, session: Session, fix: Fix, body: str, *, key: str | None = None) -> None:
        """Post a comment on the fix's PR (once per ``key``; default: once per body)."""
        if fix.number is None:
            raise ValueError(f"fix #{fix.id} has no PR on GitHub yet")
        digest = hashlib.sha256(body.encode()).hexdigest()[:24]
        written = self.post_comment(
            session, fix.repository, fix.number, body, key=key or f"comment:{fix.id}:{digest}"
        )
        if written.fresh:
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
        body = description if target_url is None else f"{description} ({target_url})"
        session.add(
            FixComment(fix_id=fix.id, kind="status", context=context, state=state, body=body)
        )
