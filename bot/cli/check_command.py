"""``repairbot check``: fail when the working tree adds contract violations relative to a base.

The ratchet for pre-commit and CI: violations the base already has are counted, not failed on,
so a repository can adopt a contract before its last old violation is fixed. Exit 0 when nothing
is introduced, 1 when something is, 2 for a usage error (not a git work tree, a base that does
not resolve).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from bot.cli.check_output import CheckPrinter, visible
from bot.cli.sweep_command import CONFIG_INVALID
from bot.config import get_settings
from bot.runner.sandbox import sandbox_options
from fixers.check.base_tree import (
    GitTreeError,
    WorkTree,
    changed_python_files,
    default_base,
    materialised,
    resolve_commit,
    work_tree,
)
from fixers.check.tree_check import FixOutcome, TreeCheck, check_tree, fix_introduced
from fixers.contracts.model import CONFIG_FILES
from fixers.sweep.index import IndexCache


def register(app: typer.Typer) -> None:
    """Add the ``check`` command to the application."""
    app.command("check")(check_command)


def _usage_error(message: str) -> typer.Exit:
    Console(stderr=True, emoji=False, soft_wrap=True).print(
        f"[red]error:[/red] {escape(visible(message))}"
    )
    return typer.Exit(2)


def tree_argument(paths: list[Path] | None) -> Path:
    """The directory to check: the first argument when it is a directory, else ``.``.

    pre-commit appends the names of the files being committed when a hook passes filenames;
    they are accepted and ignored, since an edit in one file can introduce a violation in
    another (a renamed hook in a base class makes every subclass violate it).
    """
    if paths and paths[0].is_dir():
        return paths[0]
    if paths and not paths[0].exists():
        raise _usage_error(f"{paths[0]}: no such file or directory")
    return Path(".")


def choose_base(tree: WorkTree, ref: str | None) -> tuple[str, str]:
    """``(commit, how it was chosen)``: ``ref``, else the merge base with the default branch."""
    if ref is not None:
        return resolve_commit(tree.top, ref), f"--base {ref}"
    return default_base(tree.top)


def _print_fix(printer: CheckPrinter, outcome: FixOutcome) -> None:
    for change in outcome.result.changes:
        if change.path in outcome.written:
            evidence = change.evidence
            status = evidence.import_status if evidence else "not-run"
            detail = f": {evidence.import_detail}" if evidence and evidence.import_detail else ""
            imports = "" if status == "not-run" else f" (imports in the sandbox: {status}{detail})"
            printer.line(
                f"wrote {visible(printer.path(change.path))}: {', '.join(change.codemods)} "
                f"on {visible(', '.join(change.classes))}{imports}"
            )
    for skip in outcome.result.skips:
        printer.skip(skip, label="not fixed")


# The command's parameters (as Typer types, so the command reads as its behaviour).
PathsArgument = Annotated[
    list[Path] | None,
    typer.Argument(
        help="PATH: the directory to check (default .), inside a git work tree. File names "
        "after it (pre-commit's) are accepted and ignored: whole trees are compared",
        show_default=False,
    ),
]
BaseOption = Annotated[
    str | None,
    typer.Option(
        "--base",
        help="Commit to compare with. Default: the merge base of HEAD with the default "
        "branch (origin/HEAD, else main, else master)",
    ),
]
FixOption = Annotated[
    bool, typer.Option("--fix", help="Apply the codemods to the introduced violations, then check")
]
ImportCheckOption = Annotated[
    bool,
    typer.Option(
        "--import-check",
        help="With --fix: import each changed module in the sandbox before writing it",
    ),
]
AnnotationsOption = Annotated[
    bool | None,
    typer.Option(
        "--github-annotations/--plain",
        help="Print GitHub workflow commands, or plain lines. Default: workflow commands "
        "when GITHUB_ACTIONS is true (GitHub's runners set it)",
        show_default=False,
    ),
]
# GitHub's variable, not a setting of ours: read as text, so any value is harmless.
InActionsOption = Annotated[
    str, typer.Option("--in-github-actions", envvar="GITHUB_ACTIONS", hidden=True)
]


def check_command(
    paths: PathsArgument = None,
    base: BaseOption = None,
    fix: FixOption = False,
    import_check: ImportCheckOption = False,
    github: AnnotationsOption = None,
    in_actions: InActionsOption = "",
) -> None:
    """Exit 1 when PATH adds contract violations relative to the base commit."""
    if github is None:
        github = in_actions.strip().lower() == "true"
    root = tree_argument(paths)
    try:
        tree = work_tree(root)
        commit, how = choose_base(tree, base)
    except GitTreeError as exc:
        raise _usage_error(str(exc)) from exc
    printer = CheckPrinter(github=github, prefix=tree.prefix)
    printer.line(f"base: {visible(how)} ({commit[:12]})")
    cache = IndexCache()
    try:
        changed = changed_python_files(tree, commit)
        with materialised(tree, commit, also=sorted(CONFIG_FILES)) as base_root:
            check = check_tree(root, base_root, cache, changed=changed)
    except GitTreeError as exc:
        raise _usage_error(f"cannot read the base tree: {exc}") from exc
    if fix and check.introduced:
        check = _fix(printer, root, check, cache, import_check)
    printer.report(check)
    if check.head.report.config_errors:
        raise typer.Exit(CONFIG_INVALID)
    if check.introduced:
        raise typer.Exit(1)


def _fix(
    printer: CheckPrinter, root: Path, check: TreeCheck, cache: IndexCache, imports: bool
) -> TreeCheck:
    """Fix the introduced violations, say what was written, and return the check after it."""
    printer.line(f"{len(check.introduced)} introduced: fixing")
    settings = get_settings()
    outcome = fix_introduced(
        root,
        check,
        cache,
        imports=imports,
        sandbox=sandbox_options(settings),
        preload=settings.import_preload,
    )
    _print_fix(printer, outcome)
    return outcome.after
