"""From a contract break to violations: find the base, its contract commit, the rule, the misses.

For each break a failure names (``breaks``): the class is found in the tree, then the base it
broke against (the nearest repository ancestor that declares the method; outside the
repository when none does), then the commit that changed the contract (``history``), the
siblings that commit migrated (``examples``) and the rule they agree on (``rule``). Every
subclass of the base at HEAD that still matches the rule's "before" becomes a
``learned-migration`` violation, fixed by the ``learned_migration`` codemod; every other
subclass gets a decision saying why it was left alone. Nothing here writes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Literal

from fixers.base_tree import GitTreeError, work_tree
from fixers.contracts import Contract
from fixers.failures import Finding
from fixers.index import Hierarchy, Member, RepoIndex
from fixers.learned.breaks import ContractBreak, breaks_of
from fixers.learned.examples import commit_examples
from fixers.learned.history import (
    DEEPEN_STEP,
    History,
    commits_changing,
    deepen,
    history_depth,
    is_shallow,
    shallow_boundary,
)
from fixers.learned.installed import InstalledMethod, installed_method
from fixers.learned.lookup import (
    arg_names,
    class_function,
    find_base,
    in_test_dir,
    member_of,
    stub_source,
)
from fixers.learned.policy import Pin, Policy
from fixers.learned.rule import (
    CommitRef,
    Example,
    MigrationRule,
    NoRule,
    learn_rule,
    pinned_rule,
    signature_rule,
)
from fixers.learned.signature_edit import Function, params_of
from fixers.learned.static_breaks import missing_abstract
from fixers.violation_types import Violation

Outcome = Literal["fixed", "reported", "skipped"]
MAX_CANDIDATES = 20
MAX_LATER_COMMITS = 10


@dataclass(frozen=True)
class Decision:
    """What the engine decided for one subclass, and why (``repairbot fix --explain``)."""

    class_name: str
    path: str
    outcome: Outcome
    reason: str


@dataclass
class Learning:
    """Everything learned for one break: where, from which commit, the rule, the decisions."""

    brk: ContractBreak
    base: str = ""
    base_path: str | None = None  # None: the base is outside the repository
    base_dotted: str = ""  # the base as the failing class's imports name it
    failing: str = ""  # the qualified name of the class the break was read for
    installed: InstalledMethod | None = None  # an outside base's method, read from its library
    commit: CommitRef | None = None
    rule: MigrationRule | None = None
    problem: str = ""
    evidence: tuple[str, ...] = ()
    notes: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    hierarchy: Hierarchy | None = None

    def summary(self) -> str:
        """One line: the rule in words, or why there is none."""
        where = self.base_path or "outside the repository"
        head = f"{self.brk.describe()} against {self.base or '?'} ({where})"
        return f"{head}: {self.rule.words()}" if self.rule else f"{head}: {self.problem}"

    def explain(self) -> list[str]:
        """The summary, the evidence, then one line per subclass decision."""
        lines = [self.summary(), *(f"  evidence: {line}" for line in self.evidence)]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  {d.outcome}: {d.class_name} ({d.path}): {d.reason}" for d in self.decisions]
        return lines

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (``repairbot fix --json``)."""
        return {
            "break": self.brk.describe(),
            "base": self.base,
            "base_path": self.base_path,
            "commit": {"sha": self.commit.sha, "subject": self.commit.subject}
            if self.commit
            else None,
            "rule": self.rule.words() if self.rule else None,
            "problem": self.problem or None,
            "evidence": list(self.evidence),
            "decisions": [d.__dict__ for d in self.decisions],
        }


def _patterns(brk: ContractBreak) -> tuple[str, str, bool]:
    """(pattern on the base's file, pattern on the siblings' files, count change?)."""
    define = rf"def\s+{re.escape(brk.method)}\s*\("
    if brk.kind == "unexpected-keyword" and brk.keyword:
        return rf"\b{re.escape(brk.keyword)}\s*=", rf"\b{re.escape(brk.keyword)}\b", False
    if brk.kind == "positional-count":
        return rf"\.{re.escape(brk.method)}\s*\(", define, False
    return define, define, True


def _relevant(brk: ContractBreak, example: Example) -> bool:
    edit = example.edit
    if brk.kind == "unexpected-keyword":
        return any(p.name == brk.keyword for p in edit.added)
    if brk.kind == "positional-count":
        return any(p.kind == "positional" for p in edit.added)
    return edit.new_name == brk.method and edit.old_name != brk.method


def _decided(learnings: Iterable[Learning], brk: ContractBreak) -> bool:
    """Whether an earlier learning of ``brk``'s method already decided on its class."""
    return any(
        learning.brk.method == brk.method
        and d.class_name.rsplit(".", 1)[-1] == brk.class_name
        and brk.path in (None, d.path)
        for learning in learnings
        for d in learning.decisions
    )


class MigrationEngine:
    """Learns rules for the breaks of one failure in one repository tree (at its HEAD)."""

    def __init__(
        self, root: Path, index: RepoIndex, policy: Policy, history: History | None = None
    ) -> None:
        """``history``: where the tree's past is, when ``root`` is not a git work tree at the
        failing commit (a pre-merge check's tree on disk, read from the mirror)."""
        self.root, self.index, self.policy, self.history = root, index, policy, history

    def learn(self, findings: Iterable[Finding]) -> list[Learning]:
        """One ``Learning`` per break the findings name."""
        return self.learn_breaks(breaks_of(findings))

    def learn_breaks(self, breaks: Iterable[ContractBreak]) -> list[Learning]:
        """One ``Learning`` per root cause: a break whose class an earlier learning of the same
        method already decided on is that learning's (the base's other misses)."""
        learnings: list[Learning] = []
        for brk in (located for named in breaks for located in self._locate(named)):
            if not _decided(learnings, brk):
                learnings.append(self._learn(brk))
        return learnings

    def _named(self, brk: ContractBreak) -> list[str]:
        """The qualified names of the classes ``brk`` may mean, in a stable order."""
        return sorted(
            q
            for q, (rel, c) in self.index.classes.items()
            if c.name == brk.class_name and brk.path in (None, rel)
        )

    def _locate(self, brk: ContractBreak) -> list[ContractBreak]:
        """``brk`` with its file, where a log's class name is defined more than once: each
        class of that name that has the break (all of them when none visibly does)."""
        if brk.path is not None:
            return [brk]
        self.index.load_hierarchies(
            [Contract(name=f"probe:{brk.class_name}", base=brk.class_name, source="learned")]
        )
        named = self._named(brk)
        if len(named) < 2:
            return [brk]
        broken = [q for q in named if self._has_break(q, brk)] or named
        return [replace(brk, path=self.index.classes[q][0]) for q in broken]

    def _has_break(self, qualname: str, brk: ContractBreak) -> bool:
        """Whether the class ``qualname`` fails the way ``brk`` says, read from the tree."""
        if brk.kind == "missing-abstract":
            return brk.method in missing_abstract(self.index, qualname)
        if brk.kind == "positional-count":
            return brk.method in self.index.classes[qualname][1].methods
        function = class_function(self.index, member_of(self.index, qualname), brk.method)
        if function is None:
            return False
        names, takes_kwargs = arg_names(function)
        return brk.keyword not in names and not takes_kwargs

    def _history(self) -> History:
        if self.history is not None:
            return self.history
        tree = work_tree(self.root)
        return History(tree.top, prefix=tree.prefix)

    def _learn(self, brk: ContractBreak) -> Learning:
        learning = Learning(brk)
        try:
            history = self._history()
        except GitTreeError as exc:
            learning.problem = f"no history to learn from: {exc}"
            return learning
        contract = Contract(name=f"probe:{brk.class_name}", base=brk.class_name, source="learned")
        self.index.load_hierarchies([contract])
        named = self._named(brk)
        if not named:
            learning.problem = f"class {brk.class_name} is not defined in the repository"
            return learning
        base_qual, base_rel = find_base(self.index, named[0], brk.method)
        base = base_qual.rsplit(".", 1)[-1]
        learning.base, learning.base_path = base, base_rel
        learning.base_dotted, learning.failing = base_qual, named[0]
        if not base:
            learning.problem = f"{brk.class_name} has no base class that {brk.method} belongs to"
            return learning
        if any(fnmatch(f"{base}.{brk.method}", pattern) for pattern in self.policy.forbid):
            learning.problem = f"learning {base}.{brk.method} is forbidden by .repairbot.toml"
            return learning
        # The base is the class the failing class's imports resolve to (its module pinned
        # below): another class of the same name elsewhere is not this contract's.
        module = base_qual.rpartition(".")[0] if base_rel is not None else None
        family = Contract(
            name=f"learned:{base}.{brk.method}",
            base=base,
            forbidden=brk.method,
            hook=brk.method,
            restore_hook=None,
            metadata_params=(),
            base_module=module or None,
            source="learned",
        )
        learning.hierarchy = self.index.load_hierarchies([family])[0]
        self._find_rule(history, learning)
        pin = self.policy.pin_for(base, brk.method)
        if pin is not None:
            self._pin(learning, pin)
        self._decide(learning)
        return learning

    @staticmethod
    def _pin(learning: Learning, pin: Pin) -> None:
        """The pinned rule replaces whatever history taught (noted when they differ)."""
        pinned = pinned_rule(pin)
        learned = learning.rule
        if learned is not None and learned.edit.signature_key != pinned.edit.signature_key:
            learning.notes.append(f"history taught: {learned.words()}; the pin wins")
        elif learned is None and learning.problem:
            learning.notes.append(f"history: {learning.problem}; the pin applies")
        learning.rule, learning.problem, learning.evidence = pinned, "", ()

    def _candidates(
        self,
        history: History,
        learning: Learning,
        pattern: str,
        paths: list[str],
        count: bool,
        newest_first: bool,
    ) -> Iterator[CommitRef]:
        """The commits that may be the contract commit, newest first. ``newest_first``: ask git
        for the newest alone before the rest: it usually teaches, and ``git log -1`` stops at
        it instead of walking the whole history (what a repository without a commit-graph pays
        for every path-limited walk)."""
        seen: set[str] = set()
        for limit in (1, MAX_CANDIDATES) if newest_first else (MAX_CANDIDATES,):
            found = self._search(history, learning, pattern, paths, count, limit)
            for commit in found:
                if commit.sha not in seen:
                    seen.add(commit.sha)
                    yield commit
            if not found:
                return

    def _search(
        self,
        history: History,
        learning: Learning,
        pattern: str,
        paths: list[str],
        count: bool,
        limit: int,
    ) -> list[CommitRef]:
        top, tip = history.top, history.tip
        paths = [history.prefix + path for path in paths]

        def search() -> list[CommitRef]:
            found = commits_changing(top, pattern, paths, tip=tip, limit=limit, count_change=count)
            cut = shallow_boundary(top)
            return [c for c in found if c.sha not in cut]

        commits = search()
        while not commits and is_shallow(top):
            depth = history_depth(top, tip)
            if depth >= self.policy.max_depth or not deepen(top, DEEPEN_STEP):
                learning.notes.append(f"shallow clone: searched {depth} commit(s)")
                break
            commits = search()
        return commits

    def _find_rule(self, history: History, learning: Learning) -> None:
        brk, hierarchy = learning.brk, learning.hierarchy
        assert hierarchy is not None
        on_base, on_siblings, count = _patterns(brk)
        sibling_files = sorted({m.rel for m in hierarchy.members.values()})
        if learning.base_path is not None:
            candidates = self._candidates(
                history, learning, on_base, [learning.base_path], count, newest_first=True
            )
        else:
            candidates = self._candidates(
                history, learning, on_siblings, sibling_files, False, newest_first=False
            )
        family = frozenset({learning.base, *(m.facts.name for m in hierarchy.members.values())})
        examples: list[Example] = []
        first: CommitRef | None = None
        for commit in candidates:
            first = first or commit
            taught = commit_examples(history.top, commit, family, brk.method)
            learning.notes.extend(taught.notes)
            found = [e for e in taught.examples if _relevant(brk, e)]
            if found:
                learning.commit = commit
                examples = found
                if learning.base_path is not None:
                    break
        if first is None:
            problem = "contract commit not in history" + (
                f" ({learning.notes[-1]})" if learning.notes else ""
            )
            self._from_signature(learning, problem)
            return
        learning.commit = learning.commit or first
        if learning.base_path is not None and examples:
            later = commits_changing(
                history.top,
                on_siblings,
                [history.prefix + path for path in sibling_files],
                since=learning.commit.sha,
                tip=history.tip,
                limit=MAX_LATER_COMMITS,
            )
            for commit in later:
                more = commit_examples(history.top, commit, family, brk.method).examples
                examples.extend(e for e in more if _relevant(brk, e))
        learned = learn_rule(learning.base, brk.method, examples)
        if isinstance(learned, NoRule) and not examples:
            self._from_signature(learning, learned.reason)
        elif isinstance(learned, NoRule):
            learning.problem, learning.evidence = learned.reason, learned.evidence
        else:
            learning.rule = learned

    def _from_signature(self, learning: Learning, problem: str) -> None:
        """No sibling to learn from: for a base outside the repository, what its installed
        signature alone determines (``signature_rule``); else ``problem`` stands."""
        brk = learning.brk
        learning.problem = problem
        if learning.base_path is not None or "." not in learning.base_dotted:
            return
        installed = installed_method(self.root, learning.base_dotted, brk.method)
        if installed is None:
            learning.problem += (
                f"; {learning.base_dotted}.{brk.method} is not installed where repairbot can "
                "read it (the repository's virtualenv or repairbot's own)"
            )
            return
        learning.installed = installed
        override = None
        if brk.kind == "positional-count":
            mine = class_function(self.index, member_of(self.index, learning.failing), brk.method)
            override = params_of(mine) if mine is not None else ()
        rule = signature_rule(
            learning.base,
            brk.method,
            params_of(installed.function),
            keyword=brk.keyword if brk.kind == "unexpected-keyword" else None,
            override=override,
            origin=f"from the signature of {installed.where()}",
        )
        if isinstance(rule, NoRule):
            learning.problem = f"{problem}; {rule.reason}"
        else:
            learning.rule, learning.problem = rule, ""

    def _decide(self, learning: Learning) -> None:
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
        for qual in sorted(hierarchy.members, key=lambda q: (hierarchy.members[q].rel, q)):
            member = hierarchy.members[qual]
            decision, violation = self._one(learning, rule, words, hierarchy, member, base_member)
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
        stub = why
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
        missing = brk.kind == "missing-abstract" and not facts.abstract_methods
        if missing and not self._inherits(hierarchy, member, brk.method):
            return "reported", learning.problem
        return "skipped", f"not affected ({brk.method} is defined or inherited)"

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
        wanted = {p.name for p in rule.added}
        if wanted <= names:
            return "skipped", f"already takes {', '.join(sorted(wanted))}"
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
    ) -> tuple[Outcome, str] | str:
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
        source = stub_source(function, method)
        if source is None:
            return "reported", f"the signature of {learning.base}.{method} is not in the repository"
        return source
