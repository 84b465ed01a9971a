"""PARD-style worker: parallel drafting with mask tokens, one draft forward per step.

The draft (the target truncated to `draft_layers` blocks) reads the committed window followed by
K - 1 mask tokens; the logits at the last real token and at each mask give the K drafts at once.

Metadata handling, as in the real workers that mutate tensors in place: the draft window of a
generation sequence starts one position after its root token, so the worker bumps
`kv_lens_cuda[nc:bs] += 1` in place and rewinds it only after the outputs are built (a deferred
rewind). `_kv_lens_rewind_pending` records that the bump is live; the restore hook honours it, so a
failure anywhere between the bump and the rewind still leaves `kv_lens_cuda` as it was.
"""

from __future__ import annotations

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.draft_models import LayerSkipDraft
from runtime.faults import fault_point
from runtime.model import TinyLM
from runtime.profiling import nvtx_range
from runtime.resources import ResourceManager
from runtime.speculative.drafting import committed_window, require_draft
from runtime.speculative.interface import SpecConfig, SpecMetadata, SpecOutput, SpecWorkerBase


class PardWorker(SpecWorkerBase):
    """Parallel (mask-token) drafting with an in-place, deferred-rewind `kv_lens` bump."""

    def __init__(self, spec_config: SpecConfig | None = None) -> None:
        super().__init__(spec_config)
        self._kv_lens_rewind_pending = False

    @property
    def max_draft_len(self) -> int:
        """Draft tokens per step."""
        return self.spec_config.max_draft_len

    def make_draft_model(self, target: TinyLM) -> nn.Module:
        """The target truncated to its first `draft_layers` blocks (shared weights)."""
        return LayerSkipDraft(target, num_layers=self.spec_config.draft_layers)

    @staticmethod
    def _rewind_kv_lens(attn_metadata: AttentionMetadata) -> None:
        nc, bs = attn_metadata.num_contexts, attn_metadata.num_seqs
        attn_metadata.kv_lens_cuda[nc:bs] -= 1

    @nvtx_range("pard.forward")
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
        """Accept the verified drafts, then draft K tokens in one parallel forward."""
        draft = require_draft(draft_model)
        if resource_manager is None:
            raise ValueError("PardWorker needs the resource manager (draft KV cache)")
        k = self.max_draft_len
        nc, bs = attn_metadata.num_contexts, attn_metadata.num_seqs
        accepted, num_accepted = self.accept_chain(logits, attn_metadata, spec_metadata)
        # window per row: [committed tokens..., new token, MASK x (K-1)]
        window = committed_window(
            input_ids,
            hidden_states,
            accepted,
            num_accepted,
            attn_metadata,
            num_mask_tokens=k - 1,
            mask_token_id=draft.vocab_size - 1,
            max_position=draft.pos_embed.num_embeddings - 1,
        )
        attn_metadata.prepare_for_spec_dec("seq_lens_cuda")
        # Generation rows: the draft cache already holds the root at kv_len -> start one later.
        attn_metadata.kv_lens_cuda[nc:bs] += 1
        self._kv_lens_rewind_pending = True
        attn_metadata.seq_lens_cuda[:bs].copy_(window.lens)
        fault_point("pard.draft")
        draft_logits, _ = draft(
            window.input_ids,
            window.position_ids,
            attn_metadata,
            resource_manager.require_draft_cache(),
        )
        # Position lens-K is the real last token (predicts draft 1); the K-1 masks predict 2..K.
        offsets = torch.arange(k, device=draft_logits.device)  # [K]
        cols = (window.lens.long() - k)[:, None] + offsets  # [B, K]
        rows = torch.arange(bs, device=draft_logits.device)[:, None]
        drafts = draft_logits[rows, cols].argmax(-1)  # [B, K]
        attn_metadata.restore_from_spec_dec()
        fault_point("pard.rewind")
        # Deferred rewind of the in-place bump.
        self._rewind_kv_lens(attn_metadata)
        self._kv_lens_rewind_pending = False
        return SpecOutput(accepted, num_accepted, drafts)

    def _ensure_spec_dec_state_restored(
        self, attn_metadata: AttentionMetadata, spec_metadata: SpecMetadata | None
    ) -> None:
        """Restore the base save first, then rewind a `kv_lens_cuda` bump still pending."""
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
        if not self._kv_lens_rewind_pending:
            return
        self._rewind_kv_lens(attn_metadata)
        self._kv_lens_rewind_pending = False
