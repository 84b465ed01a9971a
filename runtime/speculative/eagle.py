"""Eagle-style worker: a small draft head that reads the target's hidden states.

The head's input at position p is the embedding of token p plus a projection of the hidden state
at p - 1 (the target's for committed tokens, the head's own while chaining). Its blocks are the
target's first `draft_layers` blocks (shared); its LM head is the target's.
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


class EagleWorker(SpecWorkerBase):
    """Chain drafting with an Eagle head fed by the target's hidden states."""

    @property
    def max_draft_len(self) -> int:
        """Draft tokens per step."""
        return self.spec_config.max_draft_len

    def make_draft_model(self, target: TinyLM) -> nn.Module:
        """An Eagle head over the target's first `draft_layers` blocks."""
        layers = min(self.spec_config.draft_layers + 1, target.cfg.n_layers)
        return FusedDraftHead(target, num_layers=layers, fusion="eagle")

    @nvtx_range("eagle.forward")
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
        """Accept the verified drafts, then draft K more with the Eagle head."""
        return fused_head_step(
            self,
            "eagle",
            input_ids,
            hidden_states,
            logits,
            attn_metadata,
            spec_metadata,
            draft_model,
            resource_manager,
        )
