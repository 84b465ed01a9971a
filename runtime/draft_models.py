"""Draft networks derived from the target `TinyLM` (no separate training, nothing downloaded).

How each draft relates to the target (this is what makes acceptance rates non-trivial):

- `LayerSkipDraft`: a truncated copy. It *shares* the target's embeddings, its first `num_layers`
  blocks, its final norm and its LM head, and skips the remaining blocks (self-speculation).
- `FusedDraftHead`: an Eagle/MTP-style head. Same shared truncated stack, but its input also mixes
  in the hidden state of the previous position (the target's, or its own while chaining) through a
  small seeded fusion layer, the stand-in for a trained head. `fusion="eagle"` adds a projection of
  the hidden state to the token embedding; `fusion="mtp"` concatenates the normalised embedding and
  normalised hidden state and projects them back to the model width (DeepSeek-MTP layout).

Each draft keeps its own KV cache (`new_cache`), indexed by the same slots as the target's.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.model import KVCache, TinyLM, run_layers


class DraftModel(nn.Module):
    """A draft network with its own `num_layers`-layer KV cache."""

    num_layers: int

    def __init__(self, target: TinyLM, num_layers: int) -> None:
        super().__init__()
        if not 1 <= num_layers <= target.cfg.n_layers:
            raise ValueError(f"num_layers={num_layers} outside [1, {target.cfg.n_layers}]")
        self.num_layers = num_layers
        self.dim = target.cfg.dim
        self.n_heads, self.head_dim = target.cfg.n_heads, target.cfg.head_dim
        self.vocab_size = target.cfg.vocab_size
        # Shared modules (same Parameter objects as the target).
        self.embed = target.embed
        self.pos_embed = target.pos_embed
        self.layers = nn.ModuleList(list(target.layers)[:num_layers])
        self.norm = target.norm
        self.lm_head = target.lm_head

    def new_cache(self, num_slots: int, max_len: int) -> KVCache:
        """A zeroed cache for this draft's layers, on the draft's device and dtype."""
        ref = self.embed.weight
        return KVCache(
            self.num_layers,
            num_slots,
            self.n_heads,
            max_len,
            self.head_dim,
            device=ref.device,
            dtype=ref.dtype,
        )

    def input_embeds(
        self,
        input_ids: torch.Tensor,  # [B, T]
        position_ids: torch.Tensor,  # [B, T]
        prev_hidden: torch.Tensor | None,  # [B, T, D] hidden state of the previous position
    ) -> torch.Tensor:
        """Input embeddings [B, T, D]; the base (layer-skip) draft ignores `prev_hidden`."""
        x: torch.Tensor = self.embed(input_ids) + self.pos_embed(position_ids)
        return x

    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        attn_metadata: AttentionMetadata,
        kv_cache: KVCache,
        prev_hidden: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (logits [B, T, V], hidden states [B, T, D]) of the draft."""
        x = self.input_embeds(input_ids, position_ids, prev_hidden)
        hidden = run_layers(list(self.layers), x, attn_metadata, kv_cache)
        return self.lm_head(self.norm(hidden)), hidden


class LayerSkipDraft(DraftModel):
    """The target truncated to its first `num_layers` blocks (shared weights)."""


class FusedDraftHead(DraftModel):
    """Eagle/MTP-style head: truncated shared stack fed with token embedding + previous hidden."""

    def __init__(
        self,
        target: TinyLM,
        num_layers: int,
        fusion: Literal["eagle", "mtp"],
        *,
        hidden_weight: float = 0.05,
        seed: int = 1,
    ) -> None:
        super().__init__(target, num_layers)
        self.fusion = fusion
        ref = target.embed.weight
        gen = torch.Generator().manual_seed(seed)
        d = self.dim
        noise = torch.randn(d, d, generator=gen) * (hidden_weight / d**0.5)
        if fusion == "eagle":
            # x = embed + pos + W_h @ h_prev
            self.fc = nn.Linear(d, d, bias=False)
            weight = noise
        else:
            # x = W @ [rmsnorm(embed + pos), rmsnorm(h_prev)], W initialised as [I | noise]
            self.fc = nn.Linear(2 * d, d, bias=False)
            weight = torch.cat([torch.eye(d), noise], dim=1)
            self.enorm = nn.RMSNorm(d).to(device=ref.device, dtype=ref.dtype)
            self.hnorm = nn.RMSNorm(d).to(device=ref.device, dtype=ref.dtype)
        with torch.no_grad():
            self.fc.weight.copy_(weight)
        self.fc.to(device=ref.device, dtype=ref.dtype)

    def input_embeds(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        prev_hidden: torch.Tensor | None,
    ) -> torch.Tensor:
        """Token embedding fused with the previous position's hidden state ([B, T, D])."""
        tok: torch.Tensor = self.embed(input_ids) + self.pos_embed(position_ids)  # [B, T, D]
        if prev_hidden is None:
            prev_hidden = torch.zeros_like(tok)
        if self.fusion == "eagle":
            fused: torch.Tensor = tok + self.fc(prev_hidden)
            return fused
        scale = tok.pow(2).mean(-1, keepdim=True).sqrt()  # keep the embedding's magnitude
        mixed: torch.Tensor = self.fc(torch.cat([self.enorm(tok), self.hnorm(prev_hidden)], -1))
        return mixed * scale
