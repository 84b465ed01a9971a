"""Titles, bodies and commit messages for fix PRs, following the target's PR template."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.db.inert_text import code_span, comment_safe, link_text, visible
from bot.db.rows import violation_lines
from fixers.codemods.registry import codemod_versions
from fixers.contracts.model import Contract
from fixers.learned.rule import CommitRef, MigrationRule
from fixers.repo.paths import FileRefused, read_repo_file
from fixers.sweep.outcome import FixResult

TEMPLATE_PATHS = (
    ".github/pull_request_template.md",
    ".github/PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md",
    "pull_request_template.md",
)
_SECTION = re.compile(r"^##\s+(?P<title>.+?)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class PullRequestText:
    """What a PR says: its title, its body and the commit message of the fix."""

    title: str
    body: str
    commit_message: str


def fixed_violations(result: FixResult) -> list[str]:
    """``path:line `Class` (kind)`` (as ``fixes.violations`` stores them) for every violation a
    change fixed."""
    changed = {change.path for change in result.changes}
    return violation_lines(
        [v for v in result.report.violations if v.fix is not None and v.path in changed]
    )


def applied_codemods(result: FixResult) -> tuple[str, ...]:
    """The names of the codemods that made ``result``'s changes, sorted (``fixes.codemods``)."""
    return tuple(sorted({name for change in result.changes for name in change.codemods}))


@dataclass(frozen=True)
class TitleStyle:
    """The target's title convention: ``[ticket][type] summary`` by default (configurable)."""

    template: str = "[{ticket}][{type}] {summary}"
    type: str = "fix"
    default_ticket: str = "None"
    bug_link_pattern: str = r"https://nvbugs/\d+"


def ticket_for(texts: Iterable[str], style: TitleStyle) -> str:
    """The first bug link in the failure texts (``https://nvbugs/N``), else the default."""
    pattern = re.compile(style.bug_link_pattern)
    for text in texts:
        found = pattern.search(text or "")
        if found:
            return found.group(0)
    return style.default_ticket


def _checklist(result: FixResult, tests: Sequence[str]) -> str:
    """The PR checklist, each box ticked only where the evidence says so."""
    evidence = [c.evidence for c in result.changes]
    known = [e for e in evidence if e is not None]
    complete = len(known) == len(evidence) and bool(known)

    def box(done: bool, text: str) -> str:
        return f"- [{'x' if done else ' '}] {text}"

    return "\n".join(
        [
            box(
                complete and all(e.parses and e.idempotent for e in known),
                "Every changed file parses and a second codemod run changes nothing.",
            ),
            box(
                complete and all(e.scoped for e in known),
                "Only the targeted classes and needed imports are touched.",
            ),
            box(
                complete and all(e.import_status == "ok" for e in known),
                "Every changed module imports in a fresh interpreter.",
            ),
            box(bool(tests), "The failing tests are named under Test Coverage."),
            box(False, "Verified on the failing GPU type (the verification job reports here)."),
        ]
    )


def compose(
    *,
    contract: Contract,
    result: FixResult,
    signature: str,
    classes_in_log: Sequence[str],
    tests: Sequence[str],
    build_url: str | None,
    base_sha: str,
    repo_root: Path,
    ticket: str = "None",
    style: TitleStyle | None = None,
) -> PullRequestText:
    """The PR's text: a title in the target's convention and a body in its template's sections."""
    style = style or TitleStyle()
    violations = fixed_violations(result)
    classes = sorted({c for change in result.changes for c in change.classes})
    build = link_text(build_url) if build_url else "no build URL"
    named = f"{', '.join(code_span(c) for c in classes_in_log) or 'no class'} ({signature})"
    summary, cause, reproduce = _root_cause(contract, result, len(classes))
    title = style.template.format(ticket=ticket, type=style.type, summary=summary)
    description = "\n".join(
        [
            f"**Root cause.** {cause} The failing build ({build}) named {named}.",
            "",
            "**Fix.** Every violation in the repository, not only the one in the log:",
            *[f"- {line}" for line in violations],
        ]
    )
    sections = {
        "description": description,
        "test coverage": _coverage(tests),
        "pr checklist": _checklist(result, tests),
    }
    body = _fill_template(_read_template(repo_root), sections)
    body += f"\n\n## Safety evidence\n\n{_evidence(result)}\n"
    body += f"\nReproduce locally: `git checkout {base_sha[:12]} && {reproduce}`\n"
    versions = codemod_versions(name for change in result.changes for name in change.codemods)
    facts = (
        f"signature={signature} contract={contract.base}.{contract.forbidden}->{contract.hook} "
        f"codemods={','.join(versions)} build={build_url or ''} base={base_sha}"
    )
    body += f"\n<!-- repairbot: {comment_safe(facts)} -->\n"
    # One line per value: nothing taken from the tree can add a line (a forged trailer).
    message = (
        f"{visible(title)}\n\n"
        + "\n".join(f"- {visible(line)}" for line in violations)
        + "\n\nGenerated by repairbot."
    )
    return PullRequestText(title=title, body=body, commit_message=message)


def _root_cause(contract: Contract, result: FixResult, classes: int) -> tuple[str, str, str]:
    """The title's summary, the root cause in words and the command that reproduces the fix:
    a learned migration's (``fixers.learned``) or the known contract's."""
    learned = next((item for item in result.learned if item.rule is not None), None)
    if learned is not None and learned.rule is not None:
        return (
            f"Migrate {classes} {learned.base} subclass(es) as their contract commit did",
            _learned_cause(learned.base, learned.rule, learned.commit),
            "repairbot fix . --log FAILURE.log --explain --diff",
        )
    return (
        f"Move {classes} {contract.base} subclass(es) to the {contract.hook} contract",
        f"`{contract.base}` forbids overriding `{contract.forbidden}`; subclasses implement "
        f"`{contract.hook}` and the base calls `{contract.restore_hook}` after every call.",
        f"repairbot fix . --contract {contract.base} --diff",
    )


def _learned_cause(base: str, rule: MigrationRule, commit: CommitRef | None) -> str:
    """Where the contract changed and what the siblings did (names and subjects come from the
    repository: code spans)."""
    if not rule.examples:  # a pin, or an installed base's signature: no sibling to cite
        return (
            f"{code_span(base)}.{code_span(rule.method)} changed and no commit of this "
            f"repository migrated a subclass; the rule is {code_span(rule.words())}. "
            "Bodies are kept as they are."
        )
    where = f"{code_span(commit.sha[:7])} {code_span(commit.subject)}" if commit else "history"
    return (
        f"{code_span(base)}.{code_span(rule.method)} changed in {where}; that commit migrated "
        f"its subclasses ({code_span(rule.words())}) and missed some. The rule is learned from "
        f"{len(rule.examples)} sibling(s) that agree; bodies are kept as they are."
    )


def _coverage(tests: Sequence[str]) -> str:
    """The tests the report named (ids from a log: code spans)."""
    return "\n".join(
        [f"- {code_span(t)}" for t in tests[:50]] or ["- (no test named in the report)"]
    )


def _evidence(result: FixResult) -> str:
    """Each change's safety evidence; its lines quote the target's own words (an import
    error's message), so they are code spans too."""
    return "\n".join(
        f"- {code_span(change.path)}: "
        + "; ".join(
            code_span(line)
            for line in (change.evidence.lines() if change.evidence else ["no evidence"])
        )
        for change in result.changes
    )


def _read_template(repo_root: Path) -> str | None:
    for relative in TEMPLATE_PATHS:
        try:
            # The target's own file, read like every repository file: never through a symlink
            # out of the tree (its content would land in a public PR body), within the cap.
            return read_repo_file(repo_root, relative).decode("utf-8", errors="replace")
        except (FileRefused, OSError):
            continue
    return None


def _fill_template(template: str | None, sections: dict[str, str]) -> str:
    """Put each section's text under the template's heading of that name; keep the rest."""
    if template is None:
        return "\n\n".join(f"## {title.title()}\n\n{text}" for title, text in sections.items())
    headings = list(_SECTION.finditer(template))
    if not headings:
        return template.rstrip() + "\n\n" + _fill_template(None, sections)
    parts = [template[: headings[0].start()]]
    used: set[str] = set()
    for index, heading in enumerate(headings):
        end = headings[index + 1].start() if index + 1 < len(headings) else len(template)
        key = heading["title"].strip().lower()
        original = template[heading.end() : end]
        if key in sections:
            used.add(key)
            parts.append(f"{heading.group(0)}\n\n{sections[key]}\n\n")
        else:
            parts.append(heading.group(0) + original)
    missing = [key for key in sections if key not in used]
    body = "".join(parts).rstrip()
    for key in missing:
        body += f"\n\n## {key.title()}\n\n{sections[key]}"
    return body
