"""Planning shared by the codemods that override the contract's restore hook.

``snapshot_state`` and ``pending_fixup`` both add an override of the restore hook, so only one
of them may run on a class (a human must combine two), and both take the same typed options.
"""

from __future__ import annotations

from fixers.codemods.registry import PlanContext
from fixers.codemods.rename_forbidden import RENAMED
from fixers.sweep.fix_types import hook_annotations, type_checking_only
from fixers.sweep.index import Hierarchy
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

RESTORE_HOOK = "restore-hook"  # the plan mark: a step already overrides this class's hook


def claim_restore_hook(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> Skip | None:
    """Claim ``v``'s class's restore hook for this step, or the skip when a step already has."""
    if context.marked(RESTORE_HOOK, v):
        return Skip(
            v.path,
            f"{v.detail}; another fix already overrides {hierarchy.contract.restore_hook} in "
            "this class: a human must combine both in one override",
            v.class_qualname,
        )
    context.mark(RESTORE_HOOK, v)
    return None


def hook_options(context: PlanContext, hierarchy: Hierarchy, v: Violation) -> dict[str, object]:
    """The options every restore-hook codemod takes: method, hook, parameters, typing, layout."""
    index = context.index
    contract = hierarchy.contract
    member = hierarchy.members[v.class_qualname]
    method = v.method or contract.hook
    entries, imports = hook_annotations(index, hierarchy, v.class_qualname, v.path, method)
    if context.marked(RENAMED, v) and method == contract.forbidden:
        method = contract.hook
    data = index.read(v.path) or b""
    future = b"from __future__ import annotations" in data
    tree = index.tree(v.path)
    guarded = type_checking_only(tree) if tree is not None else set()
    names = {entry.partition("=")[2].split(".")[0] for entry in entries}
    python = context.python
    quote = not future and (
        bool(imports) or bool(names & guarded) or (python is not None and python < (3, 10))
    )
    return {
        "classes": [member.facts.qualname],
        "method": method,
        "restore_hook": contract.restore_hook,
        "params": list(contract.metadata_params),
        "annotations": entries,
        "type_imports": imports,
        "quote_annotations": quote,
        "line_length": context.line_length,
    }
