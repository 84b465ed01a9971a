"""The step MTP and Eagle workers share: accept the verified chain, then chain-draft K more with
a fused draft head (they differ only in how the head fuses the previous hidden state)."""

from __future__ import annotations

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.faults import fault_point
from runtime.resources import ResourceManager
from runtime.speculative.drafting import chain_draft, committed_window, require_draft
from runtime.speculative.interface import SpecMetadata, SpecOutput, SpecWorkerBase


def fused_head_step(
    worker: SpecWorkerBase,
    label: str,
    input_ids: torch.Tensor,
    hidden_states: torch.Tensor,
    logits: torch.Tensor,
    attn_metadata: AttentionMetadata,
    spec_metadata: SpecMetadata,
    draft_model: nn.Module | None,
    resource_manager: ResourceManager | None,
) -> SpecOutput:
    """Accept, then draft; fault points are ``<label>.accept`` and ``<label>.draft_step``."""
    draft = require_draft(draft_model)
    if resource_manager is None:
        raise ValueError(f"{type(worker).__name__} needs the resource manager (draft KV cache)")
    accepted, num_accepted = worker.accept_chain(logits, attn_metadata, spec_metadata)
    fault_point(f"{label}.accept")
    window = committed_window(
        input_ids,
        hidden_states,
        accepted,
        num_accepted,
        attn_metadata,
        max_position=draft.pos_embed.num_embeddings - 1,
    )
    attn_metadata.prepare_for_spec_dec("kv_lens_cuda", "seq_lens_cuda")
    drafts = chain_draft(
        draft,
        resource_manager.require_draft_cache(),
        window,
        attn_metadata,
        worker.max_draft_len,
        f"{label}.draft_step",
    )
    attn_metadata.restore_from_spec_dec()
    return SpecOutput(accepted, num_accepted, drafts)
