"""How ``repairbot check`` prints a comparison: GitHub workflow commands, or plain lines.

File names and details come from the repository under check, so they are hostile input: in
workflow commands they are escaped as GitHub's rules say (``%``, CR and LF everywhere, and
``:`` and ``,`` in properties too, so a name cannot end a property or start a new one); in plain
lines Rich markup is escaped and control characters are shown as escapes, so a name cannot
colour the output or forge a line of its own.
"""

from __future__ import annotations

import re

import typer
from rich.console import Console
from rich.markup import escape

from fixers.check.tree_check import TreeCheck
from fixers.sweep.outcome import Skip
from fixers.sweep.violation_types import Violation

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def command_data(text: str) -> str:
    """``text`` escaped for the message of a workflow command (after ``::``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command_property(text: str) -> str:
    """``text`` escaped for a property value of a workflow command (``file=``, ``title=``)."""
    return command_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(level: str, path: str, line: int, title: str, message: str) -> str:
    """``::level file=...,line=...,title=...::message`` with every part escaped."""
    props = f"file={command_property(path)},line={line},title={command_property(title)}"
    return f"::{level} {props}::{command_data(message)}"


def visible(text: str) -> str:
    """``text`` with control characters as ``\\xNN`` escapes (one printed line stays one)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def fix_label(violation: Violation) -> str:
    """The codemod that fixes ``violation``, or ``needs a human``."""
    return violation.fix or "needs a human"


class CheckPrinter:
    """Prints comparisons to stdout: workflow commands with ``github``, else plain lines."""

    def __init__(self, *, github: bool, prefix: str) -> None:
        self.github = github
        self.prefix = prefix  # the checked directory below the top of the work tree
        self.console = Console(soft_wrap=True, emoji=False, highlight=False)

    def path(self, rel: str) -> str:
        """``rel`` (relative to the checked directory) relative to the top of the work tree."""
        return f"{self.prefix}{rel}"

    def line(self, text: str) -> None:
        """A line of our own words (no markup in it)."""
        self.console.print(text, markup=False)

    def violation(self, v: Violation) -> None:
        """One introduced violation."""
        if self.github:
            how = f"fix: repairbot check --fix ({v.fix})" if v.fix else "needs a human"
            self._raw(
                workflow_command(
                    "error", self.path(v.path), v.line, f"repairbot {v.kind}", f"{v.detail} [{how}]"
                )
            )
            return
        where = escape(visible(f"{self.path(v.path)}:{v.line}"))
        self.console.print(
            f"{where}: [bold]{v.kind}[/bold] ({fix_label(v)}) {escape(visible(v.detail))}"
        )

    def skip(self, skip: Skip, *, label: str = "skipped") -> None:
        """A file (or class) left alone, and why."""
        if self.github:
            self._raw(
                workflow_command(
                    "warning", self.path(skip.path), 1, f"repairbot {label}", skip.reason
                )
            )
            return
        where = self.path(skip.path)
        if skip.class_qualname:
            where = f"{where} ({skip.class_qualname})"
        self.console.print(
            f"[yellow]{label}[/yellow] {escape(visible(where))}: {escape(visible(skip.reason))}"
        )

    def report(self, check: TreeCheck) -> None:
        """Config problems, introduced violations, new skips, then the summary line."""
        for error in check.head.report.config_errors:
            self.line(f"config: {visible(error)}")
        for v in check.introduced:
            self.violation(v)
        new_skips = check.new_skips()
        for skip in new_skips:
            self.skip(skip)
        self.line(summary(check, len(new_skips)))

    def _raw(self, text: str) -> None:
        # Workflow commands must reach the runner as written: no wrapping, markup or tab expansion.
        typer.echo(text)


def summary(check: TreeCheck, new_skips: int) -> str:
    """``N introduced, M already on the base (not counted)`` plus the files skipped."""
    text = f"{len(check.introduced)} introduced, {check.existing} already on the base (not counted)"
    skipped = len(check.head.report.skips)
    if skipped:
        text += f"; {skipped} file(s) skipped ({new_skips} not skipped on the base)"
    return text
