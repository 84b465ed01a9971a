"""The `resource_manager` a worker receives: KV caches and the committed tokens of each request."""

from __future__ import annotations

from runtime.model import KVCache


class ResourceManager:
    """Owns the target KV cache, the draft KV cache (if any) and per-request token history."""

    def __init__(self, target_cache: KVCache, draft_cache: KVCache | None = None) -> None:
        self.target_cache = target_cache
        self.draft_cache = draft_cache
        self._tokens: dict[int, list[int]] = {}

    def require_draft_cache(self) -> KVCache:
        """The draft model's cache; a worker that drafts with a model cannot run without it."""
        if self.draft_cache is None:
            raise RuntimeError("this worker needs a draft KV cache but none was allocated")
        return self.draft_cache

    def set_tokens(self, request_id: int, tokens: list[int]) -> None:
        """Record the committed tokens (prompt + generated) of a request (engine side)."""
        self._tokens[request_id] = tokens

    def drop(self, request_id: int) -> None:
        """Forget a finished request."""
        self._tokens.pop(request_id, None)

    def committed_tokens(self, request_id: int) -> list[int]:
        """A copy of the committed tokens of `request_id`, the last one not yet in the KV cache."""
        return list(self._tokens[request_id])
