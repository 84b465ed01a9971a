"""Per subclass of a learned base: fixed (a violation for the codemod), reported or skipped,
each with its reason. A rename or new-parameter rule applies to a class that still matches its
"before"; a new method is stubbed in a test double and reported in production code."""

from __future__ import annotations

from dataclasses import replace

from fixers.learned.body_notes import body_caveat
from fixers.learned.learning import Decision, Learning, Outcome
from fixers.learned.lookup import arg_names, class_function, in_test_dir
from fixers.learned.policy import Policy
from fixers.learned.rule import MigrationRule
from fixers.learned.signature_edit import POSITIONAL_KINDS, Function, params_of
from fixers.sweep.index import Hierarchy, Member, RepoIndex
from fixers.sweep.stub_types import StubSignature, stub_signature
from fixers.sweep.violation_types import Violation


def _stubbed_ancestor(
    hierarchy: Hierarchy, violation: Violation | None, stubbed: set[str]
) -> str | None:
    """The ancestor of a stubbed double that gets the same stub (the double inherits it)."""
    if violation is None or not violation.stub:
        return None
    above = hierarchy.ancestors(violation.class_qualname)[1:]
    return next((m.facts.qualname for m in above if m.qualname in stubbed), None)


class SubclassDecider:
    """Decides for every subclass of a learning's base, reading the tree at the failing commit."""

    def __init__(self, index: RepoIndex, policy: Policy) -> None:
        """``policy``: the test dirs (where a stub may be written)."""
        self.index, self.policy = index, policy

    def decide(self, learning: Learning) -> None:
        """One decision per subclass of the learned base; a violation for each it fixes."""
        hierarchy, rule = learning.hierarchy, learning.rule
        assert hierarchy is not None
        base_member = next(
            (
                Member(q, self.index.files[rel].module, rel, facts, (), False)
                for q, (rel, facts) in self.index.classes.items()
                if facts.name == learning.base and rel == learning.base_path
            ),
            None,
        )
        words = rule.words() if rule is not None else ""
        decided: list[tuple[Decision, Violation | None]] = []
        for qual in sorted(hierarchy.members, key=lambda q: (hierarchy.members[q].rel, q)):
            member = hierarchy.members[qual]
            decided.append(self._one(learning, rule, words, hierarchy, member, base_member))
        stubbed = {v.class_qualname for _, v in decided if v is not None and v.stub}
        for decision, violation in decided:
            above = _stubbed_ancestor(hierarchy, violation, stubbed)
            if above is not None:
                decision = replace(
                    decision, outcome="skipped", reason=f"inherits the stub {above} gets"
                )
                violation = None
            learning.decisions.append(decision)
            if violation is not None:
                learning.violations.append(violation)

    def _one(
        self,
        learning: Learning,
        rule: MigrationRule | None,
        words: str,
        hierarchy: Hierarchy,
        member: Member,
        base_member: Member | None,
    ) -> tuple[Decision, Violation | None]:
        brk, facts = learning.brk, member.facts
        if rule is None:
            return Decision(
                facts.qualname, member.rel, *self._unlearned(learning, hierarchy, member)
            ), None
        why = (
            self._new_method(learning, words, hierarchy, member, base_member)
            if rule.shape == "new-method"
            else self._signature_unmatched(rule, brk.method, member)
        )
        if isinstance(why, tuple):
            return Decision(facts.qualname, member.rel, *why), None
        stub = why.source(brk.method) if isinstance(why, StubSignature) else ""
        violation = Violation(
            kind="learned-migration",
            contract=hierarchy.contract.name,
            path=member.rel,
            line=facts.line_of(rule.old_name or brk.method),
            class_qualname=member.qualname,
            detail=f"test double: stub {brk.method} raising NotImplementedError ({words})"
            if stub
            else words,
            fix="learned",
            method=brk.method,
            rule=rule,
            stub=stub,
            stub_imports=why.imports if isinstance(why, StubSignature) else (),
        )
        caveat = "" if stub else self._body_caveat(rule, member)
        return Decision(facts.qualname, member.rel, "fixed", violation.detail + caveat), violation

    def _body_caveat(self, rule: MigrationRule, member: Member) -> str:
        """What the migrated method's body may still need (``fixers.learned.body_notes``)."""
        added = [p.name for p in rule.added if p.kind not in ("var-positional", "var-keyword")]
        old = rule.old_name or rule.method
        function = class_function(self.index, member, old)
        if not added or function is None:
            return ""
        return body_caveat(function, old, added, dict(rule.uses), len(rule.examples))

    @staticmethod
    def _inherits(hierarchy: Hierarchy, member: Member, method: str) -> bool:
        """Whether the class or a repository ancestor below the base defines ``method`` (walked
        only where it matters: 500 subclasses add up)."""
        return any(method in m.facts.methods for m in hierarchy.ancestors(member.qualname))

    def _unlearned(
        self, learning: Learning, hierarchy: Hierarchy, member: Member
    ) -> tuple[Outcome, str]:
        brk, facts = learning.brk, member.facts
        if brk.kind == "missing-abstract":
            if not facts.abstract_methods and not self._inherits(hierarchy, member, brk.method):
                return "reported", learning.problem
            return "skipped", f"not affected ({brk.method} is defined or inherited)"
        # A call that no longer fits an override: the class the log names is broken; without a
        # rule, which of the others are is not known.
        if facts.name == brk.class_name and brk.method in facts.methods:
            return "reported", learning.problem
        return "skipped", "not named in the log (no rule to compare its signature with)"

    def _signature_unmatched(
        self, rule: MigrationRule, method: str, member: Member
    ) -> tuple[Outcome, str] | str:
        """Why a rename or new-parameter rule does not apply to ``member``, or "" (it does)."""
        facts = member.facts
        if rule.shape == "rename":
            if method in facts.methods:
                return "skipped", f"already defines {method}"
            if rule.old_name not in facts.methods:
                return "skipped", f"does not define {rule.old_name}"
            function = class_function(self.index, member, rule.old_name or method)
            return "" if function is None else _unfitting(rule, function)
        function = class_function(self.index, member, method)
        if function is None:
            return "skipped", f"does not override {method}"
        if _migrated(rule, function):
            return "skipped", f"already has the siblings' signature of {method}"
        names, takes_kwargs = arg_names(function)
        wanted = {p.name for p in rule.added} - names
        if (
            takes_kwargs
            and wanted
            and all(p.kind == "keyword-only" for p in rule.added)
            and not (rule.removed or rule.changed or rule.order)
        ):
            return "skipped", f"takes **kwargs: {', '.join(sorted(wanted))} reach it"
        return _unfitting(rule, function)

    def _new_method(
        self,
        learning: Learning,
        words: str,
        hierarchy: Hierarchy,
        member: Member,
        base_member: Member | None,
    ) -> tuple[Outcome, str] | StubSignature:
        """Why a class missing a new abstract method is left alone, or the stub it gets."""
        method = learning.brk.method
        if self._inherits(hierarchy, member, method):
            return "skipped", f"defines or inherits {method}"
        if member.facts.abstract_methods:
            return "skipped", "abstract itself"
        if not in_test_dir(member.rel, self.policy.test_dirs):
            why = (
                "each sibling wrote its own body"
                if learning.rule is not None and learning.rule.examples
                else "a body is not something a signature determines"
            )
            return "reported", f"production class missing an abstract method: {why} ({words})"
        function: Function | None = None
        if learning.installed is not None:
            function = learning.installed.function
        elif base_member is not None:
            function = class_function(self.index, base_member, method)
        if function is None:
            return "reported", f"the signature of {learning.base}.{method} is not in the repository"
        # A library's base: its annotations are kept only where the double's module can see them.
        base_rel = base_member.rel if learning.installed is None and base_member else None
        return stub_signature(self.index, base_rel, function, member.rel)


def _migrated(rule: MigrationRule, function: Function) -> bool:
    """Whether ``function`` already has what the rule asks: every added parameter (an added
    ``*args``/``**kwargs`` by kind, whatever its name), none removed, each changed one's kind
    and default, the order."""
    params = params_of(function)
    by_name = {p.name: p for p in params}
    kinds = {p.kind for p in params}
    added = all(
        p.kind in kinds if p.kind in ("var-positional", "var-keyword") else p.name in by_name
        for p in rule.added
    )
    changed = all(
        p.name in by_name and (by_name[p.name].kind, by_name[p.name].default) == (p.kind, p.default)
        for p in rule.changed
    )
    in_order = (
        not rule.order
        or tuple(p.name for p in params if p.name in rule.order and p.kind in POSITIONAL_KINDS)
        == rule.order
    )
    return added and changed and in_order and not set(rule.removed) & set(by_name)


def _unfitting(rule: MigrationRule, function: Function) -> tuple[Outcome, str] | str:
    """Why the rule's parameter edits cannot be applied to ``function`` as the siblings did
    them ("" when they can): it must take, by those names, the parameters the siblings
    reordered or changed (an override that named them differently is a human's call)."""
    names = {p.name for p in params_of(function)}
    needed = [*rule.order, *(p.name for p in rule.changed)]
    missing = sorted({name for name in needed if name not in names})
    if not missing:
        return ""
    return "reported", (
        f"its {function.name} does not take {', '.join(missing)}, which the siblings "
        f"{'reordered' if rule.order else 'changed'}: which of its parameters they are is not "
        "certain"
    )
