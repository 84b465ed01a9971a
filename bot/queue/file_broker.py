"""The embedded default's broker: kombu's filesystem transport with atomic writes.

kombu writes a message file in place, so a consumer that lists the folder between the file's
creation and its write reads an empty file and the worker dies on the JSON error (seen with
concurrent producers). Here a message is written under a name no consumer looks at, then renamed
into the queue in one step.
"""

from __future__ import annotations

import os
import uuid
from functools import cached_property
from pathlib import Path
from time import monotonic
from typing import Any

from kombu.transport import TRANSPORT_ALIASES, filesystem
from kombu.utils.json import dumps

SCHEME = "durable-files"


class Channel(filesystem.Channel):
    """A filesystem channel whose messages appear whole or not at all."""

    @cached_property
    def control_folder(self) -> Path:
        """Exchange tables beside the messages, never in the working directory (kombu's default)."""
        configured = self.transport_options.get("control_folder")
        return Path(configured) if configured else Path(self.data_folder_in) / "control"

    def _put(self, queue: Any, payload: Any, **kwargs: Any) -> None:  # type: ignore[override]
        name = f"{round(monotonic() * 1000)}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = final + ".part"
        with open(partial, "wb") as stream:
            stream.write(dumps(payload).encode())  # type: ignore[no-untyped-call]
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(partial, final)


class Transport(filesystem.Transport):
    """``durable-files://`` — the filesystem transport with the channel above."""

    Channel = Channel


def register() -> None:
    """Make ``durable-files://`` URLs resolve to this transport (idempotent)."""
    TRANSPORT_ALIASES.setdefault(SCHEME, f"{__name__}:Transport")
