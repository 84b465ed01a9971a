"""Per subclass of a learned base: fixed (a violation for the codemod), reported or skipped,
each with its reason. A rename or new-parameter rule applies to a class that still matches its
"before"; a new method is stubbed in a test double and reported in production code."""

from __future__ import annotations

from dataclasses import replace

from fixers.index import Hierarchy, Member, RepoIndex
from fixers.learned.learning import Decision, Learning, Outcome
from fixers.learned.lookup import arg_names, class_function, in_test_dir
from fixers.learned.policy import Policy
from fixers.learned.rule import MigrationRule
from fixers.learned.signature_edit import Function
from fixers.stub_types import StubSignature, stub_signature
from fixers.violation_types import Violation


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
        return Decision(facts.qualname, member.rel, "fixed", violation.detail), violation

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
            return ""
        function = class_function(self.index, member, method)
        if function is None:
            return "skipped", f"does not override {method}"
        names, takes_kwargs = arg_names(function)
        # An added *args/**kwargs is there when the override has one of that kind, whatever
        # its name.
        has = {"var-positional": function.args.vararg is not None, "var-keyword": takes_kwargs}
        wanted = {p.name for p in rule.added if not has.get(p.kind, False)}
        if wanted <= names:
            return "skipped", f"already takes {', '.join(sorted(p.name for p in rule.added))}"
        if takes_kwargs and all(p.kind == "keyword-only" for p in rule.added):
            return "skipped", f"takes **kwargs: {', '.join(sorted(wanted))} reach it"
        return ""

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
            return "reported", f"production class missing a new abstract method: {why} ({words})"
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
