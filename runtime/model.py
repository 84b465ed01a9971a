"""A tiny decoder-only transformer with a slot-based KV cache, plus the draft models built on it.

Weights are seeded random numbers: nothing is downloaded. The model reads its per-sequence cache
offsets and masks from `AttentionMetadata`, exactly like a real attention backend, so whatever a
speculative worker leaves in the metadata changes what the next forward computes.

Batches are right-padded `[B, T]`. Sequence `b` writes its new keys/values at cache positions
`kv_lens_cuda[b] + 0..T-1` of slot `cache_slots[b]` and attends to every cached position before
`kv_lens_cuda[b]` plus the new positions its mask allows (causal, or `spec_dec_tree_mask`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from runtime.attention import AttentionMetadata


@dataclass(frozen=True)
class ModelConfig:
    """Shape and initialisation of a `TinyLM`."""

    vocab_size: int = 128
    dim: int = 64
    n_layers: int = 4
    n_heads: int = 4
    max_seq_len: int = 256
    # Scale of each block's output projection. Small values keep the residual stream close to the
    # embeddings, so a truncated copy of the model (a layer-skip draft) agrees with it often.
    residual_scale: float = 0.35
    logit_scale: float = 4.0
    seed: int = 0

    @property
    def head_dim(self) -> int:
        """Width of one attention head."""
        return self.dim // self.n_heads


PRESETS: dict[str, ModelConfig] = {
    # Unit tests: a few milliseconds per step on one CPU core.
    "test": ModelConfig(),
    # Benchmark: big enough that a forward is dominated by its matmuls, not Python overhead.
    # Deep and narrow-residual: the 1-block drafts agree with it often (see bench/runtime.py).
    "bench": ModelConfig(
        vocab_size=2048, dim=512, n_layers=20, n_heads=8, max_seq_len=512, residual_scale=0.03
    ),
}


class KVCache:
    """Keys/values of `num_layers` layers for `num_slots` sequences of up to `max_len` tokens."""

    def __init__(
        self,
        num_layers: int,
        num_slots: int,
        n_heads: int,
        max_len: int,
        head_dim: int,
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
    ) -> None:
        shape = (num_layers, num_slots, n_heads, max_len, head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # [L, N, H, S, Dh]
        self.v = torch.zeros(shape, device=device, dtype=dtype)
        self.max_len = max_len

    def move(self, slot: int, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy cache positions `src` to `dst` ([n] long each) of one slot, in every layer."""
        self.k[:, slot, :, dst] = self.k[:, slot, :, src]
        self.v[:, slot, :, dst] = self.v[:, slot, :, src]


def attention_mask(
    starts: torch.Tensor, seq_len: int, cache_len: int, tree_mask: torch.Tensor | None
) -> torch.Tensor:
    """Boolean mask [B, 1, T, S]: may new token t of sequence b attend to cache position s?

    Cached positions `s < starts[b]` are always visible. New positions `starts[b] + j` are visible
    when `j <= t` (causal) or, with a tree, when `tree_mask[b, t, j]` (node j is t or its ancestor).
    """
    s = torch.arange(cache_len, device=starts.device)  # [S]
    rel = s[None, :] - starts[:, None].long()  # [B, S]: position relative to the first new token
    in_new = (rel >= 0) & (rel < seq_len)  # [B, S]
    rel_c = rel.clamp(0, seq_len - 1)  # [B, S]
    t = torch.arange(seq_len, device=starts.device)  # [T]
    if tree_mask is None:
        new_ok = rel_c[:, None, :] <= t[None, :, None]  # [B, T, S]
    else:
        idx = rel_c[:, None, :].expand(-1, seq_len, -1)  # [B, T, S]
        new_ok = torch.gather(tree_mask.to(torch.bool), 2, idx)  # [B, T, S]
    visible = (rel < 0)[:, None, :] | (in_new[:, None, :] & new_ok)  # [B, T, S]
    return visible[:, None]  # [B, 1, T, S]


class Attention(nn.Module):
    """Multi-head self-attention over the slot cache."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_heads, self.head_dim = cfg.n_heads, cfg.head_dim
        self.wqkv = nn.Linear(cfg.dim, 3 * cfg.dim, bias=False)
        self.wo = nn.Linear(cfg.dim, cfg.dim, bias=False)

    def forward(
        self,
        x: torch.Tensor,  # [B, T, D]
        cache_k: torch.Tensor,  # [N, H, S_max, Dh] this layer's cache
        cache_v: torch.Tensor,
        write_pos: torch.Tensor,  # [B, T] cache positions of the new tokens
        slots: torch.Tensor,  # [B]
        mask: torch.Tensor,  # [B, 1, T, S]
    ) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.wqkv(x).view(b, t, 3, self.n_heads, self.head_dim).unbind(2)  # [B,T,H,Dh]
        # Advanced indices (slot, position) around a slice put the batch dims first: [B, T, H, Dh].
        cache_k[slots[:, None], :, write_pos] = k
        cache_v[slots[:, None], :, write_pos] = v
        s = mask.shape[-1]
        keys = cache_k[slots, :, :s]  # [B, H, S, Dh]
        values = cache_v[slots, :, :s]
        out = F.scaled_dot_product_attention(q.transpose(1, 2), keys, values, attn_mask=mask)
        y: torch.Tensor = self.wo(out.transpose(1, 2).reshape(b, t, d))  # [B, T, D]
        return y


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm(x)), then + mlp(norm(x))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.attn_norm = nn.RMSNorm(cfg.dim)
        self.attn = Attention(cfg)
        self.mlp_norm = nn.RMSNorm(cfg.dim)
        self.w_up = nn.Linear(cfg.dim, 4 * cfg.dim, bias=False)
        self.w_down = nn.Linear(4 * cfg.dim, cfg.dim, bias=False)

    def forward(
        self,
        x: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        write_pos: torch.Tensor,
        slots: torch.Tensor,
        mask: torch.Tensor,
    ) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cache_k, cache_v, write_pos, slots, mask)
        mlp: torch.Tensor = self.w_down(F.gelu(self.w_up(self.mlp_norm(x))))
        return x + mlp


def run_layers(
    layers: Sequence[nn.Module],
    x: torch.Tensor,  # [B, T, D] input embeddings
    attn_metadata: AttentionMetadata,
    kv_cache: KVCache,
) -> torch.Tensor:
    """Run `layers` over new tokens, reading offsets, slots and masks from `attn_metadata`."""
    bs, t = x.shape[0], x.shape[1]
    if bs != attn_metadata.num_seqs:
        raise ValueError(f"batch of {bs} rows but attn_metadata.num_seqs={attn_metadata.num_seqs}")
    tree = attn_metadata.spec_dec_tree_mask
    if attn_metadata.force_prepare_spec_dec_tree_mask and tree is None:
        raise RuntimeError("force_prepare_spec_dec_tree_mask is set but no spec_dec_tree_mask")
    if tree is not None and tuple(tree.shape) != (bs, t, t):
        raise RuntimeError(
            f"spec_dec_tree_mask {tuple(tree.shape)} does not fit a [{bs}, {t}] batch"
        )
    starts = attn_metadata.kv_lens_cuda[:bs]  # [B]
    slots = attn_metadata.cache_slots[:bs]  # [B]
    write_pos = starts[:, None].long() + torch.arange(t, device=x.device)  # [B, T]
    cache_len = int(write_pos.max()) + 1  # one host sync per forward
    if cache_len > kv_cache.max_len:
        raise RuntimeError(
            f"KV cache overflow: need {cache_len} positions, have {kv_cache.max_len}"
        )
    mask = attention_mask(starts, t, cache_len, tree)
    for i, layer in enumerate(layers):
        x = layer(x, kv_cache.k[i], kv_cache.v[i], write_pos, slots, mask)
    return x


class TinyLM(nn.Module):
    """Decoder-only LM: token + learned position embeddings, blocks, RMSNorm, untied LM head."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.pos_embed = nn.Embedding(cfg.max_seq_len, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = nn.RMSNorm(cfg.dim)
        self.lm_head = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self._init_weights()

    @torch.no_grad()
    def _init_weights(self) -> None:
        gen = torch.Generator().manual_seed(self.cfg.seed)
        d = self.cfg.dim
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                continue
            if name in ("embed.weight", "pos_embed.weight"):
                std = 1.0 if name == "embed.weight" else 0.5
            elif name == "lm_head.weight":
                std = self.cfg.logit_scale / math.sqrt(d)
            else:
                std = 1.0 / math.sqrt(p.shape[1])
                if name.endswith(("attn.wo.weight", "w_down.weight")):
                    std *= self.cfg.residual_scale
            p.copy_(torch.randn(p.shape, generator=gen) * std)

    def new_cache(self, num_slots: int, max_len: int, *, num_layers: int | None = None) -> KVCache:
        """A zeroed KV cache matching this model's device and dtype."""
        ref = self.embed.weight
        return KVCache(
            self.cfg.n_layers if num_layers is None else num_layers,
            num_slots,
            self.cfg.n_heads,
            max_len,
            self.cfg.head_dim,
            device=ref.device,
            dtype=ref.dtype,
        )

    def embed_tokens(self, input_ids: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        """[B, T] ids and positions -> [B, T, D] input embeddings."""
        x: torch.Tensor = self.embed(input_ids) + self.pos_embed(position_ids)
        return x

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """Final hidden states [B, T, D] -> logits [B, T, V]."""
        logits: torch.Tensor = self.lm_head(self.norm(hidden))
        return logits

    def forward(
        self,
        input_ids: torch.Tensor,  # [B, T]
        position_ids: torch.Tensor,  # [B, T]
        attn_metadata: AttentionMetadata,
        kv_cache: KVCache,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Returns (logits [B, T, V], final hidden states [B, T, D])."""
        x = self.embed_tokens(input_ids, position_ids)
        hidden = run_layers(list(self.layers), x, attn_metadata, kv_cache)
        return self.head(hidden), hidden


def build_model(
    preset: str | ModelConfig = "test",
    *,
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
) -> TinyLM:
    """A seeded `TinyLM` from a preset name (see `PRESETS`) or a config, in eval mode."""
    cfg = PRESETS[preset] if isinstance(preset, str) else preset
    return TinyLM(cfg).to(device=device, dtype=dtype).eval()
