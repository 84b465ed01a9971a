"""The before/after example record each codemod carries: its documentation and its tests."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Example:
    """Running the codemod with ``args`` on ``before`` gives ``after``; ``after=None`` means skip.

    ``skip_reason`` is a fragment of the expected ``SkipFile`` reason when ``after`` is None.
    """

    name: str
    before: str
    after: str | None
    args: dict[str, object] = field(default_factory=dict)
    skip_reason: str = ""
