"""Spec-dec configuration, per-step metadata and the worker's output."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from runtime.attention import snapshot_dataclass


@dataclass(frozen=True)
class SpecConfig:
    """Knobs shared by the workers; each worker reads the ones it needs.

    Construction convention (what the conformance suite relies on): every concrete
    `SpecWorkerBase` subclass can be built as `cls(spec_config)` with all other arguments
    defaulted, and builds its own draft network with `make_draft_model(target)`.
    """

    max_draft_len: int = 3  # draft tokens per step (chain workers) or tree depth (tree worker)
    draft_layers: int = 1  # target blocks shared by layer-skip drafts
    tree_branching: int = 2  # dynamic tree: nodes kept per level
    ngram_max: int = 3  # n-gram lookup: longest suffix tried

    def __post_init__(self) -> None:
        if self.max_draft_len < 1 or self.draft_layers < 1 or self.tree_branching < 1:
            raise ValueError(f"invalid SpecConfig {self}")


@dataclass(eq=False)
class SpecMetadata:
    """What the engine tells a worker about the drafts it must verify this step."""

    max_draft_len: int
    max_num_seqs: int
    # [max_num_seqs, max_draft_len] int64: drafts being verified, per sequence (0-padded).
    draft_tokens: torch.Tensor
    # [max_num_seqs] int32: how many of them are real (0 for context requests).
    num_draft_tokens: torch.Tensor
    # [max_num_seqs, max_draft_len] int64 for tree drafting: the verification-window index of each
    # draft's parent (0 is the root token; draft i sits at window index i + 1). None for chains.
    draft_parents: torch.Tensor | None = None
    request_ids: list[int] = field(default_factory=list)
    num_generations: int = 0
    is_cuda_graph: bool = False  # set while the engine warms up / captures at max shape

    @classmethod
    def allocate(
        cls,
        max_num_seqs: int,
        max_draft_len: int,
        device: torch.device | str = "cpu",
        *,
        tree: bool = False,
    ) -> SpecMetadata:
        """Zeroed buffers; `tree=True` adds the `draft_parents` buffer."""
        dev = torch.device(device)
        shape = (max_num_seqs, max_draft_len)
        return cls(
            max_draft_len=max_draft_len,
            max_num_seqs=max_num_seqs,
            draft_tokens=torch.zeros(shape, dtype=torch.int64, device=dev),
            num_draft_tokens=torch.zeros(max_num_seqs, dtype=torch.int32, device=dev),
            draft_parents=torch.zeros(shape, dtype=torch.int64, device=dev) if tree else None,
        )

    def update(
        self,
        *,
        request_ids: Sequence[int],
        drafts: Sequence[Sequence[int]],
        parents: Sequence[Sequence[int]] | None,
        num_generations: int,
    ) -> None:
        """Describe this step's drafts (engine side); rows follow the attention metadata's order."""
        n = len(request_ids)
        host_tokens = torch.zeros(self.max_num_seqs, self.max_draft_len, dtype=torch.int64)
        host_counts = torch.zeros(self.max_num_seqs, dtype=torch.int32)
        for i, row in enumerate(drafts):
            host_tokens[i, : len(row)] = torch.tensor(list(row), dtype=torch.int64)
            host_counts[i] = len(row)
        self.draft_tokens.copy_(host_tokens)
        self.num_draft_tokens.copy_(host_counts)
        if self.draft_parents is not None:
            host_parents = torch.zeros(self.max_num_seqs, self.max_draft_len, dtype=torch.int64)
            for i, row in enumerate(parents or []):
                host_parents[i, : len(row)] = torch.tensor(list(row), dtype=torch.int64)
            self.draft_parents.copy_(host_parents)
        self.request_ids = list(request_ids)[:n]
        self.num_generations = num_generations

    def snapshot(self) -> dict[str, Any]:
        """Every field, tensors cloned, for exact before/after comparisons."""
        return snapshot_dataclass(self)


@dataclass
class SpecOutput:
    """A worker's result for one step (B = `attn_metadata.num_seqs`, K = `max_draft_len`)."""

    # [B, K+1] int64: tokens emitted this step, valid up to index num_accepted (then -1).
    accepted_tokens: torch.Tensor
    # [B] int64: accepted drafts per sequence; num_accepted + 1 tokens are emitted.
    num_accepted: torch.Tensor
    # [B, K] int64: drafts to verify next step.
    next_draft_tokens: torch.Tensor
    # [B, K] int64: window index of each next draft's parent (tree drafting), else None.
    next_draft_parents: torch.Tensor | None = None
    # [B, K+1] int64: verification-window index of every kept KV entry (tree drafting: the accepted
    # path, root first), else None meaning "the first num_accepted + 1 entries, in order".
    accepted_indices: torch.Tensor | None = None
