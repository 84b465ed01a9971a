"""MTP-style worker: one multi-token-prediction module, applied recurrently.

The module fuses the target's hidden state at position p with the embedding of token p+1
(RMSNorm both, concatenate, project) and runs one transformer block; the shared LM head turns it
into the prediction for position p+2. Chained K times, feeding back its own hidden state.
"""

from __future__ import annotations

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.draft_models import FusedDraftHead
from runtime.model import TinyLM
from runtime.profiling import nvtx_range
from runtime.resources import ResourceManager
from runtime.speculative.fused_head import fused_head_step
from runtime.speculative.interface import SpecMetadata, SpecOutput, SpecWorkerBase


class MTPWorker(SpecWorkerBase):
    """Chain drafting with an MTP module (DeepSeek layout, one shared block)."""

    @property
    def max_draft_len(self) -> int:
        """Draft tokens per step."""
        return self.spec_config.max_draft_len

    def make_draft_model(self, target: TinyLM) -> nn.Module:
        """One MTP module sharing the target's first block, embeddings and LM head."""
        return FusedDraftHead(target, num_layers=1, fusion="mtp")

    @nvtx_range("mtp.forward")
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
        """Accept the verified drafts, then draft K more with the MTP module."""
        return fused_head_step(
            self,
            "mtp",
            input_ids,
            hidden_states,
            logits,
            attn_metadata,
            spec_metadata,
            draft_model,
            resource_manager,
        )
