"""The pre-merge contract check: the violations a PR introduces, as the ``repairbot/contracts``
status and one review with the fixes as suggestions.

For PR N: read it, fetch the mirror (``refs/pull/N/head`` included), merge its head onto the
base branch as it is now, sweep base and merge (``contract_check_sweep``), and answer on the
head that was checked (``contract_check_answer``). A head pushed during the check gets its own
check from its ``synchronize``: this one still answers for the commit it checked (statuses are
per commit) but leaves the review, which belongs to the PR's current head, to that one.

No database transaction is held while git and the sweep work: the answer is looked up first and
recorded last, each in a short session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from github import GithubException

from bot.config import Settings
from bot.db.records.contract_checks import start_check
from bot.db.records.opt_outs import opted_out
from bot.db.session import session_scope
from bot.forges.github.api import GitHubApi
from bot.forges.github.events import is_bot_account
from bot.forges.github.mirror import sync_mirror
from bot.forges.github.pulls import PullState
from bot.forges.github.retry import RateLimited
from bot.forges.github.reviews import sync_contract_review
from bot.forges.review_plan import plan_review
from bot.git import GitError, run_git
from bot.pipeline.contract_check.answer import CONTEXT, Answer, answer_for, answered, record
from bot.pipeline.contract_check.sweep import Outcome, Swept, commit_of, sweep_pull
from bot.pipeline.contract_check.tree import WriteBudget
from bot.pipeline.task_base import RepairbotTask, TransientError
from bot.queue import names as task_names
from bot.queue.celery_app import app
from fixers.sweep.run import Progress

log = logging.getLogger(__name__)


@app.task(name=task_names.CONTRACT_CHECK, base=RepairbotTask, bind=True)
def contract_check(self: RepairbotTask, repository: str, number: int) -> str:
    """Check PR ``number`` of ``repository``; safe to rerun (an answered head posts nothing)."""
    try:
        return check_pull(self.settings, GitHubApi(self.settings), repository, number)
    except (RateLimited, httpx.TransportError) as exc:
        raise TransientError(f"contract check of {repository}#{number}: {exc}") from exc


def _head_text(mirror: Path, head: str) -> Callable[[str], str | None]:
    """The text of a file at the PR head (None: absent there, or not UTF-8)."""

    def read(path: str) -> str | None:
        result = run_git(mirror, "cat-file", "blob", f"{head}:{path}")
        if result.returncode != 0:
            return None
        try:
            return result.stdout.decode("utf-8")
        except UnicodeDecodeError:
            return None

    return read


def _read_pull(api: GitHubApi, repository: str, number: int) -> PullState | str:
    """The PR while it is open, else why there is nothing to check."""
    try:
        pull = api.pull(repository, number)
    except GithubException as exc:
        if exc.status == 404:
            return f"{repository}#{number} does not exist"
        raise
    if pull.state != "open":
        return f"#{number} is {'merged' if pull.merged else 'closed'}"
    return pull


@dataclass(frozen=True)
class _Checked:
    """One check's commits and where they are."""

    repository: str
    number: int
    mirror: Path
    head: str
    base: str
    base_ref: str
    written: WriteBudget  # what the check may write under the data dir, and what it did


def check_pull(
    settings: Settings,
    api: GitHubApi,
    repository: str,
    number: int,
    *,
    progress: Progress | None = None,
) -> str:
    """Check PR ``number`` and answer on the head checked; returns what was done, for logs.

    ``progress`` is the sweep's progress callback (called while the trees are swept). An
    opted-out PR (``bot.db.records.opt_outs``) is not checked: no status, no review.
    """
    with session_scope(settings.resolved_database_url) as session:
        start_check(session, repository=repository, number=number)  # a later event queues anew
        left_alone = opted_out(session, repository=repository, pr_number=number)
        if left_alone is not None:
            return f"not checked: {left_alone.describe()}"
    pull = _read_pull(api, repository, number)
    if isinstance(pull, str):
        return _skip(settings, repository, number, "", "", pull)
    if is_bot_account(settings, pull.author, pull.author_type):  # our fixes: own pipeline
        return f"#{number} is by {pull.author}: not checked"
    try:
        mirror = sync_mirror(settings, repository, api.token())
    except GitError as exc:
        raise TransientError(str(exc)) from exc
    head = commit_of(mirror, f"refs/pull/{number}/head")
    base = commit_of(mirror, f"refs/heads/{pull.base_ref}")
    if head is None or base is None:
        gone = f"the head of #{number}" if head is None else f"base branch {pull.base_ref}"
        return _skip(settings, repository, number, head or "", base or "", f"{gone} is gone")
    with session_scope(settings.resolved_database_url) as session:
        earlier = answered(session, repository, number, head, base)
        if earlier is not None:
            return f"{head[:12]} on {pull.base_ref} {base[:12]} was answered: {earlier.state}"
    checked = _Checked(
        repository,
        number,
        mirror,
        head,
        base,
        pull.base_ref,
        WriteBudget(
            settings.contract_check_max_write_files, settings.contract_check_max_write_bytes
        ),
    )
    outcome = _sweep(settings, checked, progress)
    if isinstance(outcome, Answer):
        answer = outcome
    else:
        answer = answer_for(outcome, base_ref=pull.base_ref, pull_url=pull.url)
    return _answer(settings, api, checked, answer, outcome)


def _sweep(settings: Settings, checked: _Checked, progress: Progress | None) -> Outcome | Answer:
    try:
        return sweep_pull(
            checked.mirror,
            checked.base,
            checked.head,
            repository=checked.repository,
            trees_dir=settings.contract_trees_dir,
            max_files=settings.contract_check_max_files,
            budget=checked.written,
            progress=progress,
        )
    except MemoryError:
        return Answer("error", "ran out of memory sweeping the merge (see max_file_bytes)")
    except GitError as exc:
        return Answer("error", f"git could not read the merge: {exc}"[:140])


def _answer(
    settings: Settings, api: GitHubApi, checked: _Checked, answer: Answer, outcome: object
) -> str:
    """Sync the review, then set the status on the head checked (so a failing status always
    has its review), unless the PR closed or its head moved meanwhile."""
    repository, number, head = checked.repository, checked.number, checked.head
    now = _read_pull(api, repository, number)
    if isinstance(now, str):  # closed, or its head branch deleted, while we checked
        return _skip(settings, repository, number, head, checked.base, now)
    assert answer.state != "skipped"
    done = []
    if now.head_sha != head:
        done.append(f"head moved to {now.head_sha[:12]} during the check: its own check reviews")
    elif isinstance(outcome, Swept):
        done.append(_review(api, checked, outcome))
    api.commit_status(
        None,
        repository,
        head,
        state=answer.state,
        context=CONTEXT,
        description=answer.description,
        target_url=answer.target_url,
    )
    _record(settings, repository, number, head, checked.base, answer, checked.written)
    return "; ".join([f"{answer.state} on {head[:12]}: {answer.description}", *done])


def _review(api: GitHubApi, checked: _Checked, outcome: Swept) -> str:
    """Sync the review; a review GitHub refuses to post or edit is logged and said, and never
    keeps the status from being set."""
    text = _head_text(checked.mirror, checked.head)
    plan = plan_review(checked.head, outcome.introduced, outcome.changes, text)
    try:
        return sync_contract_review(api, checked.repository, checked.number, plan)
    except GithubException as exc:
        log.warning("review of %s#%s: GitHub answered %s", checked.repository, checked.number, exc)
        return f"review not synced (GitHub answered {exc.status})"


def _skip(
    settings: Settings, repository: str, number: int, head: str, base: str, reason: str
) -> str:
    _record(settings, repository, number, head, base, Answer("skipped", reason))
    return f"skipped: {reason}"


def _record(
    settings: Settings,
    repository: str,
    number: int,
    head: str,
    base: str,
    answer: Answer,
    written: WriteBudget | None = None,
) -> None:
    with session_scope(settings.resolved_database_url) as session:
        record(
            session,
            repository,
            number,
            head_sha=head,
            base_sha=base,
            answer=answer,
            written=written,
        )
