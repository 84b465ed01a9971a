"""Learning a rule from the siblings' edits (anti-unification), and what it asks of a class.

Every migrated sibling gives one example: its ``MethodEdit`` of the method the failure names.
The edits are already generalised over names (class names are not part of them); a rule is
learned only when every example has the same signature edit. Annotations may differ between
siblings (one annotates, another does not): the rule keeps an annotation only when all agree.
Bodies are never learned: the missed class keeps its own, byte for byte.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from fixers.learned.policy import Pin
from fixers.learned.signature_edit import MethodEdit, Param

Shape = Literal["rename", "new-parameter", "new-method"]
SHOWN_SIBLINGS = 5  # siblings named in a rule's words; the rest are counted


@dataclass(frozen=True)
class CommitRef:
    """A commit the rule was learned from: full sha and subject line."""

    sha: str
    subject: str

    def short(self) -> str:
        """``a1b2c3d Exporter.export becomes emit``."""
        return f"{self.sha[:7]} {self.subject}"


@dataclass(frozen=True)
class Example:
    """One sibling's migration: the class, its file, the commit, the edit."""

    class_name: str
    path: str
    commit: CommitRef
    edit: MethodEdit


@dataclass(frozen=True)
class MigrationRule:
    """What the siblings did to ``method`` of ``base``'s subclasses, learned from ``examples``."""

    base: str
    method: str
    shape: Shape
    old_name: str | None
    added: tuple[Param, ...]
    removed: tuple[str, ...]
    changed: tuple[Param, ...]
    examples: tuple[Example, ...]
    origin: str = ""  # a rule with no examples: where it comes from (default: a pin)
    order: tuple[str, ...] = ()  # the kept positional parameters' new order, when it changed
    uses: tuple[tuple[str, int], ...] = ()  # added parameters: how many siblings' bodies read each

    @property
    def commits(self) -> tuple[CommitRef, ...]:
        """The commits the examples come from, oldest example first, each once."""
        return tuple(dict.fromkeys(e.commit for e in self.examples))

    @property
    def edit(self) -> MethodEdit:
        """The learned edit itself."""
        return MethodEdit(
            self.old_name, self.method, self.added, self.removed, self.changed, order=self.order
        )

    def words(self) -> str:
        """The rule in words, with where it was learned."""
        if not self.examples:
            return f"{self.edit.describe()}, {self.origin or 'as pinned in .repairbot.toml'}"
        names = list(dict.fromkeys(e.class_name for e in self.examples))
        siblings = ", ".join(names[:SHOWN_SIBLINGS])
        if len(names) > SHOWN_SIBLINGS:
            siblings += f" and {len(names) - SHOWN_SIBLINGS} more"
        commits = "; ".join(c.short() for c in self.commits)
        return f"{self.edit.describe()}, as in {siblings} ({commits})"


@dataclass(frozen=True)
class NoRule:
    """Why no rule was learned, with each sibling's edit as evidence."""

    reason: str
    evidence: tuple[str, ...] = ()


def _shape(edit: MethodEdit) -> Shape:
    if edit.old_name is None:
        return "new-method"
    return "new-parameter" if edit.old_name == edit.new_name else "rename"


def _agreed(params: Sequence[Sequence[Param]]) -> tuple[Param, ...]:
    """The first example's parameters, each annotation kept only when every example has it."""
    first = params[0]
    out: list[Param] = []
    for i, param in enumerate(first):
        annotations = {group[i].annotation for group in params}
        kept = param.annotation if len(annotations) == 1 else None
        out.append(
            replace(param, annotation=kept, written_annotation=kept and param.written_annotation)
        )
    return tuple(out)


def evidence_line(example: Example) -> str:
    """``CsvExporter (exporters/csv.py, a1b2c3d): rename export -> emit, add *, sink=None``."""
    edit = example.edit
    body = "; body edited too" if edit.body_changed else ""
    if edit.old_kept:
        body += f"; kept {edit.old_name} as a wrapper"
    return (
        f"{example.class_name} ({example.path}, {example.commit.sha[:7]}): "
        f"{example.edit.describe()}{body}"
    )


def learn_rule(base: str, method: str, examples: Sequence[Example]) -> MigrationRule | NoRule:
    """The rule every example agrees on, or why there is none."""
    if not examples:
        return NoRule(f"no subclass of {base} was migrated to {method} in the contract commit")
    keys = {e.edit.signature_key for e in examples}
    if len(keys) > 1:
        return NoRule(
            f"the {len(examples)} siblings migrated {method} in {len(keys)} different ways",
            tuple(evidence_line(e) for e in examples),
        )
    first = examples[0].edit
    return MigrationRule(
        base=base,
        method=method,
        shape=_shape(first),
        old_name=first.old_name,
        added=_agreed([e.edit.added for e in examples]),
        removed=first.removed,
        changed=_agreed([e.edit.changed for e in examples]),
        examples=tuple(examples),
        order=first.order,
        uses=tuple((p.name, sum(p.name in e.edit.used for e in examples)) for p in first.added),
    )


def pinned_rule(pin: Pin) -> MigrationRule:
    """The rule a maintainer pinned (``[[learned.pin]]``): no examples, applied as written."""
    old = pin.old or pin.method
    return MigrationRule(
        base=pin.base,
        method=pin.method,
        shape="rename" if old != pin.method else "new-parameter",
        old_name=old,
        added=pin.added,
        removed=(),
        changed=(),
        examples=(),
    )


def signature_rule(
    base: str,
    method: str,
    wanted: Sequence[Param],
    *,
    keyword: str | None = None,
    override: Sequence[Param] | None = None,
    origin: str,
) -> MigrationRule | NoRule:
    """What a base's signature alone determines (no sibling to learn from), ``origin`` naming
    where it was read: the parameter named ``keyword`` the base now passes; or, for a base
    that passes more positional arguments, the base's positional parameters after those the
    failing ``override`` takes (only when those are a prefix of the base's); or, with neither,
    a new method (a test double's stub)."""

    def rule(shape: Shape, old: str | None, added: tuple[Param, ...]) -> MigrationRule:
        return MigrationRule(base, method, shape, old, added, (), (), (), origin)

    if keyword is not None:
        param = next((p for p in wanted if p.name == keyword), None)
        if param is None or param.kind in ("var-positional", "var-keyword", "positional-only"):
            return NoRule(f"{origin} takes no keyword parameter {keyword}")
        return rule("new-parameter", method, (param,))
    if override is not None:
        positional = ("positional-only", "positional")
        theirs = [p for p in wanted if p.kind in positional]
        ours = [p.name for p in override if p.kind in positional]
        if ours != [p.name for p in theirs[: len(ours)]] or len(theirs) <= len(ours):
            return NoRule(
                f"the override's positional parameters ({', '.join(ours)}) are not the first "
                f"of {origin}'s ({', '.join(p.name for p in theirs)}): which one is new is "
                "not certain"
            )
        return rule("new-parameter", method, tuple(theirs[len(ours) :]))
    return rule("new-method", None, ())
