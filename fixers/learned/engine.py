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
from fnmatch import fnmatch
from pathlib import Path

from fixers.check.base_tree import GitTreeError, work_tree
from fixers.classify.failures import Finding
from fixers.contracts.model import Contract
from fixers.learned.breaks import ContractBreak, breaks_of
from fixers.learned.decisions import SubclassDecider
from fixers.learned.examples import BaseRef, commit_examples
from fixers.learned.history import (
    DEEPEN_STEP,
    History,
    commits_changing,
    deepen,
    history_depth,
    is_shallow,
    shallow_boundary,
)
from fixers.learned.installed import installed_method
from fixers.learned.learning import Learning
from fixers.learned.locate import locate, named_classes, undefined_reason
from fixers.learned.lookup import (
    class_function,
    find_base,
    member_of,
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
from fixers.learned.signature_edit import params_of
from fixers.sweep.index import RepoIndex

MAX_CANDIDATES = 20
NEW_ABSTRACT = ("made abstract", "added")  # what a base's commit did that a stub answers
MAX_LATER_COMMITS = 10


def _patterns(brk: ContractBreak) -> tuple[str, str, bool]:
    """(pattern on the base's file, pattern on the siblings' files, count change?). A method
    that became abstract may have kept its ``def`` line (only the decorator was added): the
    base's file is searched for either line, and a candidate that did not change the base's
    method is passed over (``CommitExamples.base_changed``)."""
    define = rf"def\s+{re.escape(brk.method)}\s*\("
    if brk.kind == "unexpected-keyword" and brk.keyword:
        # The base's file may pass it (``amount=amount``) or take it (``amount: int = 1``).
        word = rf"\b{re.escape(brk.keyword)}\b"
        return word, word, False
    if brk.kind == "positional-count":
        return rf"\.{re.escape(brk.method)}\s*\(", define, False
    return rf"(def\s+{re.escape(brk.method)}\s*\(|abstractmethod)", define, False


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
        for brk in (located for named in breaks for located in locate(self.index, named)):
            if not _decided(learnings, brk):
                learnings.append(self._learn(brk))
        return learnings

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
        named = named_classes(self.index, brk)
        if not named:
            learning.problem = undefined_reason(self.index, brk.class_name)
            return learning
        base_qual, base_rel = find_base(
            self.index, named[0], brk.method, caller=brk.kind != "missing-abstract"
        )
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
        SubclassDecider(self.index, self.policy).decide(learning)
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
        top, tip = history.top, history.tip
        paths = [history.prefix + path for path in paths]

        def search(limit: int) -> list[CommitRef]:
            found = commits_changing(top, pattern, paths, tip=tip, limit=limit, count_change=count)
            cut = shallow_boundary(top)
            return [c for c in found if c.sha not in cut]

        seen: set[str] = set()
        for limit in (1, MAX_CANDIDATES) if newest_first else (MAX_CANDIDATES,):
            found = search(limit)
            while not found and is_shallow(top):
                depth = history_depth(top, tip)
                if depth >= self.policy.max_depth or not deepen(top, DEEPEN_STEP):
                    learning.notes.append(f"shallow clone: searched {depth} commit(s)")
                    break
                found = search(limit)
            for commit in found:
                if commit.sha not in seen:
                    seen.add(commit.sha)
                    yield commit
            if not found:
                return

    def _find_rule(self, history: History, learning: Learning) -> None:
        brk, hierarchy = learning.brk, learning.hierarchy
        assert hierarchy is not None
        on_base, on_siblings, count = _patterns(brk)
        sibling_files = sorted({m.rel for m in hierarchy.members.values()})
        family = frozenset({learning.base, *(m.facts.name for m in hierarchy.members.values())})
        examples: list[Example] = []
        base_change: str | None = None
        if learning.base_path is not None:
            candidates = self._candidates(
                history, learning, on_base, [learning.base_path], count, newest_first=True
            )
            examples, base_change = self._contract_commit(history, learning, candidates, family)
        if learning.commit is None:
            # An outside base, or a change made elsewhere (the call that passes the new
            # argument lives in another module): the siblings' own edits are the trail.
            candidates = self._candidates(
                history, learning, on_siblings, sibling_files, False, newest_first=False
            )
            examples, base_change = self._contract_commit(history, learning, candidates, family)
        if learning.commit is None:
            problem = "contract commit not in history" + (
                f" ({learning.notes[-1]})" if learning.notes else ""
            )
            self._from_signature(learning, problem)
            return
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
        # A twin family (a library's asyncio copy: same class names, another base module) edits
        # in the same commit; the base's own subclasses' edits are the examples when there are.
        own_files = {history.prefix + m.rel for m in hierarchy.members.values()}
        examples = [e for e in examples if e.path in own_files] or examples
        self._adopt(learning, learn_rule(learning.base, brk.method, examples), base_change)

    @staticmethod
    def _contract_commit(
        history: History,
        learning: Learning,
        candidates: Iterable[CommitRef],
        family: frozenset[str],
    ) -> tuple[list[Example], str | None]:
        """Sets ``learning.commit`` to the contract commit: the newest candidate that teaches
        (for an outside base, the oldest: the upgrade), else the newest that changed the
        contract. Returns its examples and what it did to the base's method (``base_change``)."""
        brk = learning.brk
        base = (
            BaseRef(learning.base, history.prefix + learning.base_path)
            if learning.base_path is not None and brk.kind == "missing-abstract"
            else None
        )
        examples: list[Example] = []
        first: tuple[CommitRef, str | None] | None = None
        for commit in candidates:
            taught = commit_examples(history.top, commit, family, brk.method, base)
            if taught.base_change == "":
                continue  # touched the base's file, not its contract for this method
            first = first or (commit, taught.base_change)
            learning.notes.extend(taught.notes)
            found = [e for e in taught.examples if _relevant(brk, e)]
            if found:
                learning.commit, examples = commit, found
                if learning.base_path is not None:
                    break
        if first is None:
            return [], None
        learning.commit = learning.commit or first[0]
        return examples, first[1] if learning.commit == first[0] else None

    def _adopt(
        self, learning: Learning, learned: MigrationRule | NoRule, base_change: str | None
    ) -> None:
        """Keep the learned rule, or say why there is none (from a signature when it can)."""
        brk = learning.brk
        assert learning.commit is not None
        # No evidence: no sibling was migrated (the evidence is each sibling's edit).
        if isinstance(learned, NoRule) and not learned.evidence and base_change in NEW_ABSTRACT:
            # No sibling needed migrating (they already had the method): the base's own
            # signature is all a test double's stub takes.
            learning.rule = MigrationRule(
                learning.base, brk.method, "new-method", None, (), (), (), (),
                origin=f"{base_change} in {learning.base} by {learning.commit.short()}",
            )  # fmt: skip
        elif isinstance(learned, NoRule) and not learned.evidence:
            self._from_signature(learning, learned.reason)
        elif isinstance(learned, NoRule):
            learning.problem, learning.evidence = learned.reason, learned.evidence
        else:
            learning.rule = learned
            learning.notes.extend(
                f"{e.class_name} also kept {e.edit.old_name} as a wrapper: its own API "
                "decision, not part of the rule"
                for e in learned.examples
                if e.edit.old_kept
            )

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
