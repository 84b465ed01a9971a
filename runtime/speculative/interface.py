"""The SpecWorkerBase contract.

A speculative-decoding worker runs after the target model's forward: it accepts or rejects the
drafts the target just verified, then drafts the next ones. While drafting it may change
`AttentionMetadata` temporarily (bracketed by `prepare_for_spec_dec` / `restore_from_spec_dec`).

If a forward fails half-way - an OOM during the engine's warm-up, an exception the server's error
budget tolerates - that temporary state must not leak into the next forward. So:

- `SpecWorkerBase.forward` is final. It runs `_forward_impl` inside `try` and, in `finally`,
  always calls `_ensure_spec_dec_state_restored(attn_metadata, spec_metadata)`.
- A subclass that defines `forward` is rejected when the class is created (`__init_subclass__`).
- A worker that keeps extra transient state (its own snapshot, a pending in-place bump) overrides
  `_ensure_spec_dec_state_restored`: call `super()` first, then undo its own state.

`contract_guard_disabled()` switches the class-creation guard off, only so that pre-contract code
(tests/fixtures/legacy_workers) can be imported and its behaviour compared.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.model import TinyLM
from runtime.resources import ResourceManager
from runtime.speculative.metadata import SpecConfig, SpecMetadata, SpecOutput

__all__ = [
    "AttentionMetadata",
    "ResourceManager",
    "SpecConfig",
    "SpecMetadata",
    "SpecOutput",
    "SpecWorkerBase",
    "contract_guard_disabled",
    "contract_guard_enabled",
    "guard_message",
    "violates_guard",
]

logger = logging.getLogger(__name__)

_guard_lock = threading.Lock()
_guard_disabled_depth = 0


def guard_message(cls_name: str) -> str:
    """The exact TypeError message for a subclass that overrides `forward`."""
    return (
        f"{cls_name} must not override SpecWorkerBase.forward; implement _forward_impl instead. "
        "SpecWorkerBase.forward guarantees spec-dec attn-metadata cleanup when a forward fails "
        "(https://nvbugs/6442074)."
    )


def contract_guard_enabled() -> bool:
    """Whether class creation currently rejects `forward` overrides (the default)."""
    return _guard_disabled_depth == 0


@contextlib.contextmanager
def contract_guard_disabled() -> Iterator[None]:
    """Switch the class-creation guard off inside the block (legacy comparisons only)."""
    global _guard_disabled_depth
    with _guard_lock:
        _guard_disabled_depth += 1
    try:
        yield
    finally:
        with _guard_lock:
            _guard_disabled_depth -= 1


def violates_guard(cls: type) -> bool:
    """True when `cls`, or a class between it and SpecWorkerBase, defines its own `forward`."""
    for klass in cls.__mro__:
        if klass is SpecWorkerBase:
            return False
        if "forward" in vars(klass):
            return True
    return False


def _find_metadata(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[AttentionMetadata | None, SpecMetadata | None]:
    """The metadata objects of a worker call: by keyword first, else by type among positionals."""
    attn = kwargs.get("attn_metadata")
    spec = kwargs.get("spec_metadata")
    for arg in args:
        if attn is None and isinstance(arg, AttentionMetadata):
            attn = arg
        elif spec is None and isinstance(arg, SpecMetadata):
            spec = arg
    return attn, spec


def _delegate_to_legacy_forward(self: SpecWorkerBase, *args: Any, **kwargs: Any) -> Any:
    """`_forward_impl` of a pre-contract worker (guard off): its own `forward`."""
    return type(self).forward(self, *args, **kwargs)


class SpecWorkerBase(nn.Module, ABC):
    """Base of every speculative worker; subclasses implement `_forward_impl`, `max_draft_len`."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "forward" not in vars(cls):
            return
        if contract_guard_enabled():
            raise TypeError(guard_message(cls.__name__))
        # Guard off: behave as the pre-contract base did, where a worker's own `forward` was its
        # implementation and nothing wrapped it. `_forward_impl` delegates to that `forward`, so
        # the class is not abstract and an unbound `SpecWorkerBase.forward(worker, ...)` works.
        if "_forward_impl" not in vars(cls):
            cls._forward_impl = _delegate_to_legacy_forward  # type: ignore[method-assign]

    def __init__(self, spec_config: SpecConfig | None = None) -> None:
        super().__init__()
        self.spec_config = spec_config if spec_config is not None else SpecConfig()

    @property
    @abstractmethod
    def max_draft_len(self) -> int:
        """Draft tokens proposed per sequence and step (tree workers: nodes per tree)."""

    @property
    def uses_tree(self) -> bool:
        """Whether drafts form a tree (`SpecOutput.next_draft_parents` is set)."""
        return False

    def make_draft_model(self, target: TinyLM) -> nn.Module | None:
        """The draft network this worker drives, built from `target` (None: model-free drafting)."""
        return None

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Run `_forward_impl`, then always give the restore hook a chance to clean up."""
        attn_metadata, spec_metadata = _find_metadata(args, kwargs)
        try:
            return self._forward_impl(*args, **kwargs)
        finally:
            if attn_metadata is not None:
                self._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)

    @abstractmethod
    def _forward_impl(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        hidden_states: torch.Tensor,
        logits: torch.Tensor,
        attn_metadata: AttentionMetadata,
        spec_metadata: SpecMetadata,
        draft_model: nn.Module | None,
        resource_manager: ResourceManager | None = None,
    ) -> SpecOutput:
        """Accept/reject this step's drafts and propose the next ones."""

    def _ensure_spec_dec_state_restored(
        self, attn_metadata: AttentionMetadata, spec_metadata: SpecMetadata | None
    ) -> None:
        """Undo a save that `_forward_impl` left behind (it failed between prepare and restore)."""
        if attn_metadata.has_spec_dec_saved_state:
            logger.warning(
                "%s: forward left spec-dec state saved on attn_metadata; restoring it",
                type(self).__name__,
            )
            attn_metadata.restore_from_spec_dec()

    # -- shared accept/reject helpers ----------------------------------------------------------

    @staticmethod
    def accept_chain(
        logits: torch.Tensor, attn_metadata: AttentionMetadata, spec_metadata: SpecMetadata
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Greedy (temperature 0) acceptance of chain drafts.

        Row b verified the window `[root, d_1 .. d_n]` (n = num_draft_tokens[b], 0 for a context
        row, whose window is its last prompt token). Let g_i be the target's argmax at window
        position i: it is exactly the token greedy decoding emits after `root, d_1 .. d_i`. So d_1
        is right iff d_1 == g_0, and while d_j == g_{j-1} the next g_j is again the greedy token.
        We keep the longest matching prefix (a = num_accepted) and emit g_0 .. g_a: the a accepted
        drafts plus one token from the target (the correction at the first mismatch, or a bonus
        token when every draft matched). The output therefore equals greedy decoding, token for
        token, whatever the draft proposed.

        Returns (accepted_tokens [B, K+1] with -1 after index a, num_accepted [B]).
        """
        bs, k = attn_metadata.num_seqs, spec_metadata.max_draft_len
        dev = logits.device
        n_draft = spec_metadata.num_draft_tokens[:bs].long()  # [B]
        seq_lens = attn_metadata.seq_lens_cuda[:bs].long()  # [B]
        first = seq_lens - 1 - n_draft  # [B] window start (the root token)
        steps = torch.arange(k + 1, device=dev)  # [K+1]
        idx = (first[:, None] + steps).clamp(max=logits.shape[1] - 1)  # [B, K+1]
        greedy = logits.argmax(-1).gather(1, idx)  # [B, K+1] g_0 .. g_K
        drafts = spec_metadata.draft_tokens[:bs, :k]  # [B, K]
        match = (drafts == greedy[:, :k]) & (steps[None, :k] < n_draft[:, None])  # [B, K]
        num_accepted = match.long().cumprod(1).sum(1)  # [B] matching prefix length
        keep = steps[None, :] <= num_accepted[:, None]  # [B, K+1]
        accepted = torch.where(keep, greedy, torch.full_like(greedy, -1))
        return accepted, num_accepted
