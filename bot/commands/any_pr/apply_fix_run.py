"""The work of ``/repairbot apply-fix``, run by its task (``bot.pipeline.repair.apply_fix``).

Read the PR from GitHub; fetch its head into the base repository's mirror; in a leased worktree
at the head, sweep and fix every contract (the import check in the sandbox, as the repair
pipeline does it) and commit once, as the bot, with who asked in a trailer. Then:

- the bot may write to the PR's branch (same repository, or a fork whose author allows edits
  from maintainers): push that commit there, only while the branch is still at the head that
  was fixed (``bot.forges.github.mirror.push_onto``: a fast-forward under a lease, never forced);
- otherwise the fix would carry the fork's commits into a branch of the base repository: only
  once a maintainer confirmed the reviewed head (``--confirm-fork HEAD_SHA``, the head still
  there), push it to ``repairbot-fork/apply-fix/N`` (a namespace CI should not run on push:
  docs/security.md) and open a PR from it *into the fork*, against the author's branch, which
  the reply links. Without the confirmation the reply says what would be pushed where.

The sweep runs under the base branch's configuration (``bot.forges.provenance.trusted_config``),
never the PR's own, and every push carries only the PR's head and the bot's commit
(``check_push``).

The reply goes on the PR under the comment's reply key (once per comment); the audit row gets
the outcome. Safe to run twice: one run per invocation at a time (the worktree's lease), a
finished invocation is not run again, a head that already carries this invocation's commit is
reported rather than fixed again, and the PR into a fork is opened once per invocation.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from github import GithubException

from bot.commands.dispatch import reply_key
from bot.commands.registry import QUEUED
from bot.config import Settings
from bot.db.inert_text import code_span, visible, within
from bot.db.models import CommandInvocation
from bot.db.rows import violation_lines
from bot.db.session import session_scope
from bot.forges.branch_guard import push_refusal
from bot.forges.github.forge import GitHubForge
from bot.forges.github.mirror import (
    BranchMoved,
    PushRejected,
    push_branch,
    push_onto,
    sync_mirror,
)
from bot.forges.github.pulls import PullState
from bot.forges.provenance import (
    FORK_BRANCH_PREFIX,
    ProvenanceRefused,
    branch_tip,
    check_push,
    trusted_config,
)
from bot.git import commit_all, fresh_worktree, git, remove_worktree, resolve_commit
from bot.runner.sandbox import sandbox_options
from bot.runner.workdirs import leased
from fixers.sweep.outcome import FixResult
from fixers.sweep.run import fix, write_changes

TRAILER = "Repairbot-Invocation"
# Under the repair worktrees' prefix, so that the start-up prune removes what a crash left;
# "apply-fix" never reads as a repair run's id.
WORKTREE_PREFIX = "run-apply-fix-"
REPLY_CHARS = 6000
log = logging.getLogger(__name__)
_REJECTED_REASON = re.compile(r"\[(?:remote )?rejected\][^\n]*\(([^)\n]{1,200})\)")


@dataclass(frozen=True)
class Request:
    """One queued ``apply-fix``: its audit row, the PR, who asked and the comment to answer."""

    invocation_id: int
    repository: str
    number: int
    login: str
    comment_id: int
    command: str
    confirm_fork: str | None = None  # the head a maintainer reviewed (``--confirm-fork``)


@dataclass(frozen=True)
class Answer:
    """How the work ended: the audit outcome, the reply, and whether GitHub was changed."""

    outcome: str
    reply: str
    changed: bool = False
    detail: str = ""  # for the audit row only (not the public reply): paths, git's own words


@dataclass(frozen=True)
class Fixed:
    """The fix commit made at the PR's head, and the violations it fixes."""

    head: str
    commit: str
    lines: list[str]


def apply_fix_run(settings: Settings, invocation_id: int, comment_id: int) -> str:
    """Do the work of invocation ``invocation_id`` (if still queued) and answer on the PR."""
    worktree = settings.worktrees_dir.resolve() / f"{WORKTREE_PREFIX}{invocation_id}"
    with leased(worktree):  # one run of an invocation at a time; a second waits, then sees it
        request = _queued(settings, invocation_id, comment_id)
        if request is None:
            return "already answered"
        forge = GitHubForge(settings)
        try:
            answer = _apply(settings, forge, request, worktree)
        except GithubException as exc:
            answer = Answer("error", f"GitHub answered {exc.status}: {_github_message(exc)}")
        except ProvenanceRefused as exc:
            log.error("apply-fix %s: %s", invocation_id, exc)
            answer = Answer("refused", "nothing was pushed: " + str(exc))
        answer_on_pull(settings, forge, request, answer)
        return answer.outcome


def give_up(settings: Settings, invocation_id: int, comment_id: int, reason: str) -> None:
    """Answer a queued invocation whose task ran out of retries: an error, with the reason."""
    request = _queued(settings, invocation_id, comment_id)
    if request is not None:
        reply = "gave up after repeated failures to reach git or GitHub; nothing was pushed."
        answer = Answer("error", reply, detail=reason[:2000])
        answer_on_pull(settings, GitHubForge(settings), request, answer)


def _queued(settings: Settings, invocation_id: int, comment_id: int) -> Request | None:
    with session_scope(settings.resolved_database_url) as session:
        row = session.get(CommandInvocation, invocation_id)
        if row is None or row.outcome != QUEUED:
            return None
        confirmed = (row.arguments or {}).get("confirm_fork")
        return Request(
            row.id,
            row.repository,
            row.pr_number,
            row.author,
            comment_id,
            row.text,
            confirmed if isinstance(confirmed, str) else None,
        )


def answer_on_pull(
    settings: Settings, forge: GitHubForge, request: Request, answer: Answer
) -> None:
    """Reply (once per comment), react when something was done, then record the outcome: a
    reply lost to a crash is posted by the next run, which finds the row still queued."""
    forge.post_comment(
        None,
        request.repository,
        request.number,
        f"@{request.login} {answer.reply}"[:REPLY_CHARS],
        key=reply_key(request.repository, request.comment_id),
    )
    if answer.changed:
        forge.react(None, request.repository, request.number, request.comment_id, "+1")
    with session_scope(settings.resolved_database_url) as session:
        row = session.get_one(CommandInvocation, request.invocation_id)
        if row.outcome == QUEUED:
            row.outcome = answer.outcome
            row.reply = answer.reply + (f"\n\n{answer.detail}" if answer.detail else "")


def _apply(settings: Settings, forge: GitHubForge, request: Request, worktree: Path) -> Answer:
    pull = forge.pull(request.repository, request.number)
    if pull.state != "open":
        return Answer(
            "refused", f"Not running {code_span(request.command)}: this PR is {pull.state}."
        )
    if pull.head_repository is None:
        return Answer(
            "refused", "this PR's head repository was deleted: there is no branch to fix."
        )
    mirror = sync_mirror(settings, request.repository, forge.token())
    head = resolve_commit(mirror, pull.head_sha)  # fetched with the PR heads (refs/pull/N/head)
    if _applied_by(mirror, head, request.invocation_id):
        return Answer("accepted", f"`{head[:12]}` on `{pull.head_ref}` is already this fix.", True)
    into_fork = pull.from_fork and not pull.maintainer_can_modify
    refused = (
        _unconfirmed(request, pull, head)
        if into_fork
        else _branch_guarded(settings, mirror, pull, head)
    )
    if refused is not None:
        return refused
    try:
        fresh_worktree(mirror, worktree, head)
        with trusted_config(mirror, worktree, branch_tip(mirror, pull.base_ref)):
            fixed = _fix_and_commit(settings, worktree, request, head)
        if isinstance(fixed, Answer):
            return fixed
        if into_fork:
            return _open_into_fork(settings, forge, mirror, request, pull, fixed)
        return _push_to_branch(settings, forge, mirror, pull, fixed)
    finally:
        remove_worktree(mirror, worktree)


def fork_branch(number: int) -> str:
    """Where the fix of fork PR ``number`` goes in the base repository (docs/security.md)."""
    return f"{FORK_BRANCH_PREFIX}apply-fix/{number}"


def _unconfirmed(request: Request, pull: PullState, head: str) -> Answer | None:
    """The reply a fork PR's fix gets until a maintainer confirms its reviewed head (None:
    confirmed, and the head is still that one)."""
    where = f"{code_span(fork_branch(pull.number))} in {request.repository}"
    if request.confirm_fork is None:
        return Answer(
            "refused",
            f"this PR's branch is in {pull.head_repository}, which does not allow edits from "
            f"maintainers. To fix it the bot would push this PR's commits (head `{head[:12]}`) "
            f"and one fix commit to {where}, a branch of this repository, and open a PR from it "
            "into the fork. Workflows that run on `push` there would run the fork's code with "
            "this repository's secrets, so nothing was pushed. If you have reviewed this PR's "
            f"commits, reply `/repairbot apply-fix --confirm-fork {head[:12]}`.",
        )
    if not head.startswith(request.confirm_fork):
        return Answer(
            "refused",
            f"this PR's head is now `{head[:12]}`, not the confirmed "
            f"`{request.confirm_fork[:12]}`: nothing was pushed. Review the new commits and "
            f"confirm `{head[:12]}`.",
        )
    return None


def _branch_guarded(settings: Settings, mirror: Path, pull: PullState, head: str) -> Answer | None:
    """The refusal when the PR's branch is one the loop guard keeps us off (its last commits
    are bots'), before any work is done (``bot.forges.branch_guard``)."""
    ours = pull.author.lower() == settings.github_bot_login.lower()
    where = f"{pull.head_repository}:{pull.head_ref}"
    refusal = push_refusal(settings, mirror, head, branch=where, own_branch=ours)
    return None if refusal is None else Answer("refused", f"{refusal}; nothing was pushed.")


def _applied_by(mirror: Path, head: str, invocation_id: int) -> bool:
    """Whether ``head`` is the commit this invocation pushed (a rerun after a lost answer)."""
    message = git(mirror, "show", "--no-patch", "--format=%B", "--end-of-options", head)
    return f"{TRAILER}: {invocation_id}" in message.splitlines()


def _fix_and_commit(
    settings: Settings, worktree: Path, request: Request, head: str
) -> Fixed | Answer:
    """Sweep, fix and commit at ``head``: the commit, or the answer when there is none."""
    result = fix(
        worktree,
        None,  # every contract: built in, from .repairbot.toml, inferred from the tree
        imports=True,
        sandbox=sandbox_options(settings),
        preload=settings.import_preload,
    )
    violations = result.report.violations
    if not violations:
        return Answer("accepted", f"no contract violations on this PR's head `{head[:12]}`.")
    written = write_changes(worktree, result) if result.changes else []
    if not written:
        return Answer("accepted", _unfixed(result, head))
    lines = violation_lines([v for v in violations if v.fix is not None and v.path in written])
    message = "\n".join(
        [
            f"Fix {len(lines)} contract violation(s) at the head of #{request.number}",
            "",
            *(f"- {visible(line)}" for line in lines),
            "",
            f"Requested-by: @{request.login} ({request.repository}#{request.number})",
            f"{TRAILER}: {request.invocation_id}",
        ]
    )
    return Fixed(head, commit_all(worktree, message), lines)


def _unfixed(result: FixResult, head: str) -> str:
    found = within(violation_lines(result.report.violations), 2000)
    skipped = "; ".join(skip.reason for skip in result.skips)
    return (
        f"{len(result.report.violations)} contract violation(s) at `{head[:12]}`, none fixed "
        f"automatically, nothing pushed: {found}"
        + (f" ({code_span(skipped[:1000])})" if skipped else "")
    )


def _listed(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines)


def _push_to_branch(
    settings: Settings, forge: GitHubForge, mirror: Path, pull: PullState, fixed: Fixed
) -> Answer:
    """The PR's own branch: one fast-forward, only if it is still where it was read."""
    where = f"{pull.head_repository}:{pull.head_ref}"
    assert pull.head_repository is not None
    check_push(mirror, fixed.commit, trusted=[fixed.head], made={fixed.commit}, where=where)
    try:
        push_onto(
            settings,
            pull.head_repository,
            mirror,
            branch=pull.head_ref,
            commit=fixed.commit,
            expected=fixed.head,
            token=forge.token(),
        )
    except BranchMoved:
        return Answer(
            "refused",
            f"{code_span(where)} moved while the fix was being made (it was at "
            f"`{fixed.head[:12]}`): "
            "nothing was pushed and nothing forced. Ask again to fix its new head.",
        )
    except PushRejected as exc:
        reason = _REJECTED_REASON.search(str(exc))
        why = reason.group(1) if reason else "the push was rejected"
        return Answer(
            "refused",
            f"GitHub refused the push to {code_span(where)} ({code_span(why)}); nothing pushed.",
        )
    return Answer(
        "accepted",
        f"pushed `{fixed.commit[:12]}` to {code_span(where)}, fixing {len(fixed.lines)} contract "
        f"violation(s):\n{_listed(fixed.lines)}",
        changed=True,
    )


def _open_into_fork(
    settings: Settings,
    forge: GitHubForge,
    mirror: Path,
    request: Request,
    pull: PullState,
    fixed: Fixed,
) -> Answer:
    """A fork the bot may not push to: our branch in the base repository, and a PR from it into
    the fork against the author's branch (the author merges it to take the fix)."""
    fork, owner = pull.head_repository, request.repository.split("/")[0]
    assert fork is not None
    branch = fork_branch(request.number)  # ours: a later request replaces it
    # The fork's commits up to the head a maintainer confirmed, and our fix commit: nothing else.
    check_push(
        mirror, fixed.commit, trusted=[fixed.head], made={fixed.commit}, where=f"{owner}:{branch}"
    )
    push_branch(
        settings,
        request.repository,
        mirror,
        branch=branch,
        commit=fixed.commit,
        token=forge.token(),
        force=True,
    )
    summary = f"fix {len(fixed.lines)} contract violation(s) for {request.repository}#{pull.number}"
    opened = forge.open_pull(
        fork,
        key=f"pull:apply-fix:{request.invocation_id}",
        branch=branch,
        base=pull.head_ref,
        title=settings.pr_title_template.format(
            ticket=settings.pr_ticket_default, type=settings.pr_type, summary=summary
        ),
        body=(
            f"repairbot's fix for {request.repository}#{pull.number} (head `{fixed.head[:12]}`), "
            f"asked for and confirmed by @{request.login}. That PR does not allow edits from "
            "maintainers, so "
            f"the bot did not push to {code_span(f'{fork}:{pull.head_ref}')}; merging this PR "
            "adds the one "
            f"fix commit to it.\n\n{_listed(fixed.lines)}"
        ),
        head_owner=owner,
    )
    return Answer(
        "accepted",
        f"this PR's branch is in {fork}, which does not allow edits from maintainers, so nothing "
        f"was pushed to it. Opened {opened.url} into {code_span(f'{fork}:{pull.head_ref}')} "
        "with the fix "
        f"commit `{fixed.commit[:12]}`; merge it to update this PR:\n{_listed(fixed.lines)}",
        changed=True,
    )


def _github_message(exc: GithubException) -> str:
    data = exc.data if isinstance(exc.data, dict) else {}
    return str(data.get("message") or exc)[:300]
