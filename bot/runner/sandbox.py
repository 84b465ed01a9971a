"""The service's sandbox policy: settings → ``fixers.sandbox.SandboxOptions``.

The launcher itself lives in ``fixers.sandbox`` (the import probe needs it too, and ``fixers``
never imports ``bot``); this module only says what the service's settings allow and hide.
"""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from fixers.sandbox import SandboxOptions


def sandbox_options(settings: Settings) -> SandboxOptions:
    """Confinement for every target process the service starts.

    The data dir (SQLite files, the broker, every repository checkout) and the GitHub App key are
    never visible, even when a path the sandbox sees contains them.
    """
    hidden = [settings.data_dir]
    if settings.github_private_key_path is not None:
        hidden.append(settings.github_private_key_path)
    # A path that does not exist has nothing to hide, and bubblewrap cannot make a mount point
    # for it inside a read-only bind (the default data dir ``./.repairbot``, from a checkout).
    return SandboxOptions(
        allow_unsandboxed=settings.allow_unsandboxed,
        hidden=tuple(Path(p).absolute() for p in hidden if Path(p).exists()),
    )
