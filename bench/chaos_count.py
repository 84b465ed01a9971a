"""Counting the chaos soak's effects afterwards (bench/chaos.py), from the database and from what
the GitHub double holds, against what the traffic's :class:`Ledger` says was accepted.

One :class:`Row` per kind of effect: how many were expected, how many are there, how many are
missing (lost), how many are extra (duplicated), and how many are still unfinished after the
drain. Every count is of an effect, not of an attempt: a write retried ten times that landed
once is one effect.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import Connection, text

from bench.chaos_traffic import MAINTAINER, Ledger, Target
from bot.commands.dispatch import reply_key
from bot.forges.github.write_ops import STATUS_DESCRIPTION_MAX, comment_marker
from bot.pipeline.fan_out.text import NOTICE_MARKER, body_digest
from tests.fakes.github_api import BOT_LOGIN, FakeGitHub

CHECK_CONTEXT = "repairbot/contracts"
RERUN_COMMAND = "/bot run"
LIVE_RUNS = "('received','classified','swept','patched','verifying')"


@dataclass(frozen=True)
class Row:
    """One kind of effect, counted."""

    kind: str
    expected: int
    effects: int
    lost: int
    duplicated: int
    unfinished: int = 0
    examples: tuple[str, ...] = ()  # what is lost or duplicated, for the report


def _odd(counts: Counter[str]) -> tuple[str, ...]:
    """The keys whose count is not exactly one, with their counts."""
    return tuple(f"{key}: {n}" for key, n in sorted(counts.items()) if n != 1)


def _extra(counts: Counter[str] | Counter[tuple[str, int]]) -> int:
    return sum(n - 1 for n in counts.values() if n > 1)


def deliveries(db: Connection, ledger: Ledger) -> Row:
    """GitHub deliveries: each accepted one stored once and processed."""
    stored = {
        key.removeprefix("github:"): outcome
        for key, outcome in db.execute(
            text("SELECT key, outcome FROM deliveries WHERE source = 'github'")
        )
    }
    accepted = ledger.deliveries
    kept = accepted & stored.keys()
    waiting = sum(1 for key in kept if stored[key] == "stored")
    return Row("GitHub deliveries", len(accepted), len(kept), len(accepted - kept), 0, waiting)


def failures(db: Connection, ledger: Ledger) -> Row:
    """CI failures: each accepted build stored as one report, and classified."""
    rows = db.execute(
        text("SELECT build_number, classified_at IS NULL FROM reports WHERE pipeline = :p"),
        {"p": "L0_MergeRequest_PR"},
    ).all()
    per_build = Counter(int(build) for build, _ in rows)
    expected = set(ledger.builds)
    unclassified = sum(1 for _, waiting in rows if waiting)
    return Row(
        "CI failures → reports",
        len(expected),
        len(expected & per_build.keys()),
        len(expected - per_build.keys()),
        _extra(Counter({str(k): v for k, v in per_build.items()})),
        unclassified,
    )


def fix_prs(github: FakeGitHub, targets: list[Target], ledger: Ledger) -> Row:
    """Fix PRs: exactly one per root cause (each repository has one), none after a decision."""
    failed = {repository for repository, _ in ledger.builds.values()}
    per_repo = Counter(
        {
            t.name: sum(p["user"]["login"] == BOT_LOGIN for p in github.pulls(t.name))
            for t in targets
        }
    )
    lost = sum(1 for name in failed if per_repo[name] == 0)
    return Row(
        "fix PRs per root cause",
        len(failed),
        sum(per_repo.values()),
        lost,
        _extra(Counter({k: v for k, v in per_repo.items() if v})),
    )


def _bot_comments(github: FakeGitHub, repository: str, number: int) -> list[str]:
    with github.lock:
        thread = list(github.repos[repository].comments.get(number, []))
    return [str(c["body"]) for c in thread if c["user"]["login"] == BOT_LOGIN]


def notices(db: Connection, github: FakeGitHub, ledger: Ledger) -> Row:
    """Fan-out: exactly one notice on each PR whose pipeline failed because of its base, saying
    the newest text planned for it (a notice left with older text counts as lost)."""
    affected = {(r, n) for r, n in ledger.builds.values() if n is not None}
    planned = {
        (str(r), int(n)): str(digest)
        for r, n, digest in db.execute(
            text("SELECT repository, pr_number, planned_digest FROM pr_notices")
        )
    }
    per_pr: Counter[str] = Counter()
    stale: list[str] = []
    for repository, number in affected:
        bodies = [b for b in _bot_comments(github, repository, number) if NOTICE_MARKER in b]
        per_pr[f"{repository}#{number}"] = len(bodies)
        shown = body_digest(bodies[-1].rsplit("\n\n", 1)[0]) if bodies else None
        if shown is not None and shown != planned.get((repository, number)):
            stale.append(f"{repository}#{number}: older text than planned")
    lost = sum(1 for count in per_pr.values() if count == 0) + len(stale)
    return Row(
        "notices per affected PR", len(affected), sum(per_pr.values()), lost, _extra(per_pr),
        examples=_odd(per_pr) + tuple(stale),
    )  # fmt: skip


def reruns(github: FakeGitHub, targets: list[Target], ledger: Ledger) -> Row:
    """After a merge: the re-run command once on each affected PR of that repository."""
    merged = {t.name for t in targets if ledger.decisions.get(t.name) in ("merged", "reverted")}
    affected = {(r, n) for r, n in ledger.builds.values() if n is not None and r in merged}
    per_pr = Counter(
        {
            f"{r}#{n}": sum(b.strip() == RERUN_COMMAND for b in _bot_comments(github, r, n))
            for r, n in affected
        }
    )
    lost = sum(1 for count in per_pr.values() if count == 0)
    return Row("re-run commands after a merge", len(affected), sum(per_pr.values()), lost,
               _extra(per_pr), examples=_odd(per_pr))  # fmt: skip


def statuses(db: Connection, github: FakeGitHub, ledger: Ledger) -> Row:
    """Commit statuses: no state posted twice in a row for one head and context; the last one
    of each is the last one asked for; each checked head has its contract-check status."""
    posted: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    with github.lock:
        for name, repo in github.repos.items():
            for status in repo.statuses:
                key = (name, str(status["sha"]), str(status["context"]))
                posted.setdefault(key, []).append((status["state"], status["description"]))
    repeats = {
        f"{repository} {sha[:12]} {context}: {[state for state, _ in states]}": sum(
            1 for before, after in itertools.pairwise(states) if before == after
        )
        for (repository, sha, context), states in posted.items()
    }
    asked = {
        (str(r), str(sha), str(context)): (str(state), str(description)[:STATUS_DESCRIPTION_MAX])
        for r, sha, context, state, description in db.execute(
            text("SELECT repository, sha, context, state, description FROM github_statuses")
        )
    }
    wrong = [
        f"{r} {sha[:12]} {context}: shows {posted.get((r, sha, context), [None])[-1]}, asked {last}"
        for (r, sha, context), last in asked.items()
        if posted.get((r, sha, context), [None])[-1] != last
    ]
    checked = {(r, head) for r, _, head in ledger.pr_events}
    unchecked = [f"{r} {head[:12]}: no status" for r, head in checked
                 if (r, head, CHECK_CONTEXT) not in posted]  # fmt: skip
    examples = tuple(what for what, n in repeats.items() if n) + tuple(wrong + unchecked)
    return Row(
        "statuses per head and context", len(asked), len(posted), len(wrong) + len(unchecked),
        sum(repeats.values()), examples=examples,
    )  # fmt: skip


def commands(github: FakeGitHub, ledger: Ledger) -> Row:
    """``/bot`` commands: each of the maintainer's gets one reply (reactions are idempotent on
    GitHub itself); a stranger gets at most one reply per PR (the reply budget's hour)."""
    lost = extra = effects = 0
    stranger_replies: Counter[str] = Counter()
    odd: list[str] = []
    for command in ledger.commands:
        marker = comment_marker(reply_key(command.repository, command.comment_id))
        replies = sum(
            marker in body for body in _bot_comments(github, command.repository, command.number)
        )
        effects += replies
        if replies != 1:
            odd.append(f"{command.login} on {command.repository}#{command.number}: {replies}")
        if command.login == MAINTAINER:
            lost += replies == 0
            extra += max(0, replies - 1)
        else:
            stranger_replies[f"{command.repository}#{command.number}"] += replies
    return Row(
        "replies per /bot command", len(ledger.commands), effects, lost,
        extra + _extra(stranger_replies), examples=tuple(odd),
    )  # fmt: skip


def verifications(db: Connection, github: FakeGitHub, ledger: Ledger) -> Row:
    """``/bot run`` from the maintainer: one verification each, finished, announced once."""
    asked = sum(1 for c in ledger.commands if c.login == MAINTAINER)
    rows = db.execute(
        text(
            "SELECT v.id, v.state, f.repository, f.pr_number FROM verifications v"
            " JOIN fixes f ON f.id = v.fix_id WHERE v.requested_by = :who"
        ),
        {"who": f"/bot run by {MAINTAINER}"},
    ).all()
    unfinished = sum(1 for _, state, _, _ in rows if state in ("queued", "running"))
    announced = Counter(
        {
            str(vid): sum(
                comment_marker(f"verification-{vid}") in body
                for body in _bot_comments(github, str(repository), int(number))
            )
            for vid, _, repository, number in rows
        }
    )
    return Row(
        "verifications per /bot run",
        asked,
        len(rows),
        max(0, asked - len(rows)),
        max(0, len(rows) - asked) + _extra(announced),
        unfinished,
    )


def suppressions(db: Connection, targets: list[Target], ledger: Ledger) -> Row:
    """Closes and reverts: each held in the suppression memory, once."""
    decided = {name for name, how in ledger.decisions.items() if how in ("closed", "reverted")}
    held = Counter(
        str(repository) for (repository,) in db.execute(text("SELECT repository FROM suppressions"))
    )
    lost = sum(1 for name in decided if held[name] == 0)
    return Row("suppressions per decision", len(decided), sum(held.values()), lost, _extra(held))


def runs(db: Connection) -> Row:
    """Repair runs left unfinished after the drain."""
    total = int(db.execute(text("SELECT count(*) FROM repair_runs")).scalar_one())
    live = int(
        db.execute(
            text(f"SELECT count(*) FROM repair_runs WHERE state IN {LIVE_RUNS}")
        ).scalar_one()
    )
    return Row("repair runs", total, total, 0, 0, live)


def count_all(
    db: Connection, github: FakeGitHub, targets: list[Target], ledger: Ledger
) -> list[Row]:
    """Every kind of effect, counted."""
    return [
        deliveries(db, ledger),
        failures(db, ledger),
        runs(db),
        fix_prs(github, targets, ledger),
        notices(db, github, ledger),
        reruns(github, targets, ledger),
        statuses(db, github, ledger),
        commands(github, ledger),
        verifications(db, github, ledger),
        suppressions(db, targets, ledger),
    ]
