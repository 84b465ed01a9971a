"""``python -m runtime.conformance <package> [--path DIR] [-q]``: the suite on its workers."""

from __future__ import annotations

import argparse
import logging

import torch
from rich.console import Console
from rich.markup import escape

from runtime.conformance import CheckResult, run_suite
from runtime.discovery import DEFAULT_PACKAGE


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m runtime.conformance",
        description="Run the SpecWorkerBase conformance suite on every worker of a package.",
    )
    parser.add_argument("package", nargs="?", default=DEFAULT_PACKAGE, help="module path to scan")
    parser.add_argument("--path", action="append", default=[], help="directory to put on sys.path")
    parser.add_argument(
        "--no-guard", action="store_true", help="import with the class-creation guard off"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the runtime's warnings (restore hooks)"
    )
    args = parser.parse_args(argv)
    logging.getLogger("runtime").setLevel(logging.WARNING if args.verbose else logging.ERROR)
    torch.set_num_threads(1)  # tiny models: intra-op threads only add contention

    console = Console()

    def show(result: CheckResult) -> None:
        if result.ok and not args.quiet:
            console.print(f"[green]PASS[/] {result.worker} {result.check}")
        for problem in result.problems:
            console.print(f"[red]FAIL[/] {escape(f'{result.worker} {result.check}: {problem}')}")

    try:
        results = run_suite(
            args.package, paths=tuple(args.path), guard=not args.no_guard, progress=show
        )
    except Exception as exc:
        console.print(f"cannot import {args.package}: {type(exc).__name__}: {exc}", markup=False)
        return 1
    if not results:
        console.print(f"no SpecWorkerBase subclass found in {args.package}")
        return 1
    failed = [r for r in results if not r.ok]
    workers = len({r.worker for r in results})
    console.print(f"{len(results) - len(failed)}/{len(results)} checks passed on {workers} workers")
    return 1 if failed else 0


if __name__ == "__main__":
    # The command line lives apart from the suite: it needs rich, the runtime itself only torch.
    raise SystemExit(main())
