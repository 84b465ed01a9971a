"""The import evidence: every changed module imported, with its new source, in the sandbox.

Importing runs the target's module-level code, so it runs like its tests: in the sandbox, with
the repository read-only and nothing else of the host. One ``ImportServer`` (``import_probe.py``
in bubblewrap) serves one change set: it imports the heavy packages once (``DEFAULT_PRELOAD``),
then checks each module in a forked child of its own. A server can be started ahead of need on an
empty folder that later receives the checkout (the repair stage keeps spares ready for its next
attempts); the folder is bound into the sandbox, so what appears in it is what the server sees.

The answers travel on a pipe of their own that only the server writes, never through the target's
output. A module whose import kills the server is answered ``unverified`` (it ended the server)
and the modules after it are checked again by a fresh server, until the time limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from fixers.evidence.fd_wait import readable, writable
from fixers.sandbox import (
    GIB,
    STRICT,
    Limits,
    Running,
    SandboxOptions,
    SandboxUnavailable,
    start_isolated,
    stop_isolated,
    wait_isolated,
)
from fixers.sandbox.run_dirs import RunDir, make_run_dir
from fixers.sweep.outcome import FileChange, ImportStatus

PROBE = Path(__file__).with_name("import_probe.py")
# Importing a module should take seconds: these bound a hostile one (a fork bomb, a 20 GiB
# allocation, an endless loop at import) long before the repair's own budget.
PROBE_LIMITS = Limits(
    timeout_s=120,
    max_memory_bytes=8 * GIB,
    max_processes=256,
    max_cpu_s=240,
    max_file_bytes=64 << 20,
)
RUN_DIR_PREFIX = "repairbot-import-probe-"
MODULE_TIMEOUT_S = 60.0  # one module's import, within the overall limit
# Imported once per server before any target code, from the interpreter's own paths: the
# packages that ML code imports everywhere and that take seconds to import (a missing one is
# skipped; one the repository shadows is dropped before its modules import).
DEFAULT_PRELOAD = ("torch",)
ANSWERS_LIMIT = 4 << 20  # bytes read from one server
STATUSES = ("ok", "failed", "unverified")

Results = dict[str, tuple[ImportStatus, str]]


@dataclass
class ImportServer:
    """A sandboxed import server for the repository the sandbox sees at ``seen_root``.

    ``running`` is None when it could not start; ``problem`` then says why. A server serves one
    request, then ends.
    """

    seen_root: Path
    lease: RunDir
    running: Running | None
    answers: int  # the read end of the server's answer pipe (-1 when not running)
    problem: str = ""
    started: bool = False  # it said so: its sandbox is set up (its view's paths are bound)
    _partial: bytes = b""
    _received: int = 0

    def messages(self, deadline: float) -> list[list[str]] | None:
        """The well-formed messages of the server's next write (waiting until ``deadline``);
        None once it closed its pipe, went past ``ANSWERS_LIMIT``, or the time is up."""
        remaining = deadline - time.monotonic()
        if self.answers < 0 or remaining <= 0:
            return None
        ready = readable([self.answers], remaining)
        chunk = os.read(self.answers, 1 << 16) if ready else b""
        self._received += len(chunk)
        if not chunk or self._received > ANSWERS_LIMIT:
            return None
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        found = [message for message in map(_message, lines) if message is not None]
        self.started = self.started or ["started"] in found
        return [message for message in found if message != ["started"]]

    def wait_started(self, deadline: float) -> bool:
        """Wait (until ``deadline``) for the server to say its sandbox is set up.

        A folder the sandbox binds may be moved only then: bubblewrap looks its paths up while
        it starts.
        """
        while not self.started:
            if self.messages(deadline) is None:
                return False
        return True

    def alive(self) -> bool:
        """Whether the server still runs and has not been given its request yet."""
        return (
            self.running is not None
            and self.running.process.poll() is None
            and self.running.stdin is not None
            and not self.running.stdin.closed
        )

    def close(self) -> None:
        """Stop the server (its whole tree) and remove its run dir; safe to call twice."""
        if self.running is not None:
            stop_isolated(self.running)
        if self.answers >= 0:
            os.close(self.answers)
            self.answers = -1
        self.lease.release()

    @property
    def run_dir(self) -> Path:
        """The server's run folder (its log and outputs)."""
        return self.lease.path


def start_server(
    seen_root: Path,
    *,
    python: str = sys.executable,
    sandbox: SandboxOptions = STRICT,
    limits: Limits = PROBE_LIMITS,
    preload: Sequence[str] = DEFAULT_PRELOAD,
    later: Sequence[str] = (),
) -> ImportServer:
    """Start an import server that sees ``seen_root`` read-only (it may still be empty).

    It imports ``preload`` at once, and ``later`` once a module's import needed it.

    Never raises for a sandbox that cannot start: the server then answers nothing, and
    ``problem`` says why (``check_imports`` reports it as the modules' detail).
    """
    seen_root = seen_root.absolute()  # bound and entered by path: never relative to the sandbox
    lease = make_run_dir(RUN_DIR_PREFIX)  # a killed maker's folders go with the next start
    run_dir = lease.path
    options = dataclasses.replace(
        sandbox, readonly=(*sandbox.readonly, seen_root, PROBE), interpreters=(python,)
    )
    read_end, write_end = os.pipe()
    command = [python, "-I", "-B", str(PROBE), str(write_end), "--sandboxed"]
    command += [f"--preload={name}" for name in preload]
    command += [f"--later={name}" for name in later if name not in preload]
    try:
        running = start_isolated(
            command,
            cwd=seen_root,
            run_dir=run_dir,
            log_path=run_dir / "probe.log",
            limits=limits,
            options=options,
            stdin=True,
            pass_fds=(write_end,),
        )
    except (SandboxUnavailable, OSError) as exc:
        os.close(read_end)
        return ImportServer(seen_root, lease, None, -1, str(exc))
    finally:
        os.close(write_end)
    return ImportServer(seen_root, lease, running, read_end)


def probe_request(
    root: Path, changes: Iterable[FileChange], seen_root: Path, timeout_s: float
) -> dict[str, object]:
    """What the server imports: each changed module with its new source, as the sandbox sees it
    (``root`` on the host is ``seen_root`` inside; they differ for a server started ahead)."""
    base = root.resolve()

    def seen(path: Path) -> Path:
        return seen_root / path.relative_to(base) if path.is_relative_to(base) else path

    modules: dict[str, list[str]] = {}
    roots: list[str] = []
    for change in changes:
        path = (root / change.path).resolve()
        modules[change.module] = [str(seen(path)), change.after]
        top = import_root(path, change.module)
        if top.is_relative_to(base):  # only the repository itself is visible in the sandbox
            roots.append(str(seen(top)))
    roots.append(str(seen_root))
    return {"path": list(dict.fromkeys(roots)), "modules": modules, "timeout_s": timeout_s}


def imported_of(preload: Sequence[str], imported: Iterable[str]) -> tuple[str, ...]:
    """The packages of ``preload`` among the dotted names ``imported`` (or their packages)."""
    tops = {name.partition(".")[0] for name in imported}
    return tuple(name for name in preload if name.partition(".")[0] in tops)


def import_root(path: Path, module: str) -> Path:
    """The ``sys.path`` entry from which ``module`` (at ``path``) imports."""
    depth = len(module.split(".")) - (0 if path.name == "__init__.py" else 1)
    return path.parents[depth]


def _message(line: bytes) -> list[str] | None:
    """One line from the server, checked: ``["started"]``, ``["checking", module]`` or
    ``["answer", module, status, detail]``; None for anything else."""
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, list) or not all(isinstance(part, str) for part in message):
        return None
    if message == ["started"] or (len(message) == 2 and message[0] == "checking"):
        return message
    if len(message) == 4 and message[0] == "answer" and message[2] in STATUSES:
        return message
    return None


def _read_answers(
    server: ImportServer, modules: set[str], deadline: float
) -> tuple[dict[str, list[str]], str]:
    """The server's answers until each of ``modules`` has one, it closes its pipe, or
    ``deadline``; and the module it was checking when it stopped without answering ("" when
    none)."""
    answers: dict[str, list[str]] = {}
    checking = ""
    while not modules <= answers.keys():
        messages = server.messages(deadline)
        if messages is None:
            break
        for message in messages:
            if message[0] == "checking":
                checking = message[1]
            else:
                answers[message[1]] = [message[2], message[3]]
                checking = ""
    return answers, checking


def _send_request(running: Running, data: bytes, deadline: float) -> str:
    """Write the request to the server's stdin and close it; "" or why it could not.

    Never blocks past ``deadline``: a server that does not read (still importing, or stuck)
    cannot hold the service.
    """
    stdin = running.stdin
    if stdin is None:
        return "the import server has no input"
    fd = stdin.fileno()
    os.set_blocking(fd, False)
    try:
        while data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timed out before the import server read its request"
            if writable(fd, remaining):
                with contextlib.suppress(BlockingIOError):
                    data = data[os.write(fd, data) :]
    except OSError as exc:  # the server is already gone
        return f"the import server ended before its request: {exc}"
    finally:
        with contextlib.suppress(OSError):
            stdin.close()
    return ""


def _last_line(log: Path) -> str:
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("$ ")]
    return lines[-1] if lines else ""


def _one_round(
    server: ImportServer,
    root: Path,
    changes: list[FileChange],
    deadline: float,
    module_timeout_s: float,
) -> tuple[Results, str, str]:
    """Send ``changes`` to ``server`` and gather its answers; ``(results, checking, why)``:
    ``checking`` is the module it was importing when it ended early, ``why`` how it ended."""
    if server.running is None or server.running.stdin is None:
        return {}, "", server.problem
    timeout_s = min(module_timeout_s, max(deadline - time.monotonic(), 1.0))
    request = probe_request(root, changes, server.seen_root, timeout_s)
    problem = _send_request(server.running, json.dumps(request).encode(), deadline)
    if problem:
        return {}, "", problem
    answers, checking = _read_answers(server, {c.module for c in changes}, deadline)
    ended = wait_isolated(server.running, timeout_s=max(deadline - time.monotonic(), 0.1))
    why = "timed out" if ended.timed_out else _last_line(ended.log_path) or "no answer"
    if ended.returncode not in (0, None) and not ended.timed_out:
        why = f"{why} (exit {ended.returncode})"
    if ended.hits and not ended.timed_out:  # what stopped it, rather than its last words
        why = f"sandbox limit hit ({ended.hits[0].name}): its process tree {ended.hits[0].detail}"
    mark = "NOT SANDBOXED" if ended.isolation.startswith("NOT SANDBOXED") else ""
    results: Results = {}
    for change in changes:
        entry = answers.get(change.module)
        if entry is not None:
            detail = "; ".join(filter(None, [mark, entry[1]]))
            results[change.path] = (entry[0], detail[:300])  # type: ignore[assignment]
    return results, checking, why


def check_imports(
    root: Path,
    changes: list[FileChange],
    python: str = sys.executable,
    *,
    sandbox: SandboxOptions = STRICT,
    limits: Limits = PROBE_LIMITS,
    server: ImportServer | None = None,
    preload: Sequence[str] = DEFAULT_PRELOAD,
    later: Sequence[str] = (),
    module_timeout_s: float = MODULE_TIMEOUT_S,
) -> Results:
    """Import every changed module, with its new source, in the sandbox; ``path -> (status,
    detail)``.

    ``server``, when given and still waiting, is used first (and closed); otherwise one is
    started here (importing ``preload`` first, ``later`` once needed). Each module's import may take
    ``module_timeout_s``, all of them ``limits.timeout_s``. A missing dependency gives
    ``unverified``, and so does a sandbox that cannot run (with the reason) unless ``sandbox``
    allows running unconfined, which the detail then says.
    """
    # The sandbox binds and enters the tree by path: a relative one would be read against
    # the sandbox's own working directory, not the caller's.
    root = root.absolute()
    deadline = time.monotonic() + limits.timeout_s
    results: Results = {}
    pending, why = list(changes), ""
    while pending:
        if server is None or not server.alive():
            if server is not None:
                server.close()
            server = start_server(
                root, python=python, sandbox=sandbox, limits=limits, preload=preload, later=later
            )
        try:
            found, checking, why = _one_round(server, root, pending, deadline, module_timeout_s)
        finally:
            server.close()
            server = None
        results.update(found)
        blamed = [c for c in pending if c.path not in found and c.module == checking]
        for change in blamed:
            results[change.path] = (
                "unverified",
                f"its import ended the import server: {why}"[:300],
            )
        pending = [c for c in pending if c.path not in results]
        if not blamed or time.monotonic() >= deadline:
            break  # no module to blame: the server itself could not run
    for change in pending:
        results[change.path] = ("unverified", f"probe failed: {why}"[:300])
    return results
