"""A warm import check for the next repair attempt: its sandbox started before the attempt is.

The import evidence (``fixers.evidence.import_check``) runs in a sandboxed interpreter that first
imports the heavy packages (``torch``: seconds). So the repair worker keeps one *spare*: an import
server started ahead, for no repository yet, whose sandbox sees one empty folder of ours read-only,
``worktrees/spare-<token>``. An attempt claims it: the folder becomes the attempt's worktree
(renamed to ``run-<id>-<token>``, so its lease and pruning are those of any worktree; the sandbox
still sees it under its first name), the checkout fills it, and the server checks the fixed
modules without a cold start. The attempt then starts a spare to replace it, which warms up while
this attempt and the next work: ``import_spares`` (2) wait, so that back-to-back repairs find one
that finished its preload.

A spare serves one attempt and is never reused: nothing one repository's code did in a sandbox
can reach another's. Until it is claimed it has run no target code (its folder is empty). A spare
started with other settings than the attempt's, or one that died, is discarded and the attempt's
import check starts its own server, as it would without a spare.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from celery.signals import worker_process_shutdown

from bot.config import Settings
from bot.runner.sandbox import sandbox_options
from bot.runner.workdirs import leased
from fixers.evidence.import_check import ImportServer, start_server
from fixers.sandbox import SandboxOptions

log = logging.getLogger(__name__)

SPARE_PREFIX = "spare-"  # worktrees-dir folders of spares (pruned at start when abandoned)
STARTED_WITHIN_S = 30.0  # a spare whose sandbox has not started by then is not used


@dataclass
class Spare:
    """An import server started ahead, and the leased empty folder its sandbox sees."""

    slot: Path
    server: ImportServer
    options: SandboxOptions
    preload: tuple[str, ...]
    lease: contextlib.ExitStack
    pid: int = field(default_factory=os.getpid)

    @property
    def token(self) -> str:
        """The unique part of the folder's name, which the attempt's worktree keeps."""
        return self.slot.name.removeprefix(SPARE_PREFIX)

    def fits(self, settings: Settings) -> bool:
        """Whether this spare can serve an attempt under ``settings`` (same process, sandbox,
        preload and folder; still running, not yet used)."""
        return (
            self.pid == os.getpid()
            and self.options == sandbox_options(settings)
            and self.preload == tuple(settings.import_preload)
            and self.slot.parent == settings.worktrees_dir.resolve()
            and self.server.alive()
        )

    def claim(self, worktree: Path) -> ImportServer | None:
        """Make the folder the attempt's ``worktree`` (leased by the caller); its server, or
        None when the folder could not be moved (the server is then closed).

        Waits for the server's sandbox to be set up first (at once, unless it was started a
        moment ago): bubblewrap must have bound the folder before it moves.
        """
        try:
            if not self.server.wait_started(time.monotonic() + STARTED_WITHIN_S):
                raise OSError(f"its sandbox did not start: {self.server.problem or 'no word'}")
            os.rename(self.slot, worktree)
        except OSError as exc:
            log.warning("spare import check not used: %s", exc)
            self.discard()
            return None
        self.lease.close()
        return self.server

    def discard(self) -> None:
        """Stop the server and remove the folder and its lease."""
        self.server.close()
        with contextlib.suppress(OSError):
            self.slot.rmdir()
        self.lease.close()


_lock = threading.Lock()
_spares: deque[Spare] = deque()  # oldest (warmest) first
_exit_hook = 0  # the process that registered ``discard_spares`` to run at its exit


def start_spares(settings: Settings) -> None:
    """Start spares until ``settings.import_spares`` wait (none when it is 0).

    Never fails the caller: a spare that cannot be prepared is logged, and the next attempt's
    import check starts its own server.
    """
    global _exit_hook
    with _lock:
        for old in [spare for spare in _spares if spare.pid != os.getpid()]:
            _spares.remove(old)  # inherited through a fork: the parent's, not ours to stop
        missing = settings.import_spares - len(_spares)
        if missing > 0 and _exit_hook != os.getpid():
            atexit.register(discard_spares)  # folders and servers go with this process
            _exit_hook = os.getpid()
    for _ in range(missing):
        try:
            spare = _start_spare(settings)
        except OSError as exc:
            log.warning("no spare import check: %s", exc)
            return
        with _lock:
            _spares.append(spare)


def _start_spare(settings: Settings) -> Spare:
    slot = settings.worktrees_dir.resolve() / f"{SPARE_PREFIX}{uuid.uuid4().hex[:8]}"
    lease = contextlib.ExitStack()
    lease.enter_context(leased(slot))
    slot.mkdir()
    options = sandbox_options(settings)
    preload = tuple(settings.import_preload)
    server = start_server(slot, sandbox=options, preload=preload)
    return Spare(slot, server, options, preload, lease)


def take_spare(settings: Settings) -> Spare | None:
    """The warmest waiting spare that fits ``settings``, else None (unfit ones are discarded)."""
    while True:
        with _lock:
            spare = _spares.popleft() if _spares else None
        if spare is None:
            return None
        if spare.pid != os.getpid():
            continue
        if spare.fits(settings):
            return spare
        spare.discard()


def discard_spares() -> None:
    """Stop every spare of this process (at shutdown, or when a test is done with them)."""
    with _lock:
        spares = [spare for spare in _spares if spare.pid == os.getpid()]
        _spares.clear()
    for spare in spares:
        spare.discard()


@worker_process_shutdown.connect
def _discard_at_pool_exit(**_: object) -> None:
    """A prefork pool's child ends with ``os._exit``, past the ``atexit`` hook: its spares'
    run folders stayed in the temp dir at every worker shutdown or child recycled."""
    discard_spares()
