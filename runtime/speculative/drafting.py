"""Helpers shared by the drafting workers: what the draft must read this step, and tree masks.

Draft-cache invariant (all model-based workers): when a worker's forward starts, the draft KV cache
of each generation sequence is valid up to and including its root token (cache position
`kv_len`). A context sequence's draft cache is empty.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.draft_models import DraftModel
from runtime.faults import fault_point
from runtime.model import KVCache


@dataclass
class DraftWindow:
    """Right-padded tokens a draft model must process next ([B, T] unless noted)."""

    input_ids: torch.Tensor  # [B, T]
    position_ids: torch.Tensor  # [B, T]
    prev_hidden: torch.Tensor  # [B, T, D] target hidden state of the previous position (0 if none)
    starts: torch.Tensor  # [B] int32 draft-cache offset of the first token
    lens: torch.Tensor  # [B] int32 valid tokens per row


# One row of a draft window: (tokens, draft-cache offset of the first one, previous hidden [n, D]).
_Row = tuple[list[int], int, torch.Tensor]


def committed_window(
    input_ids: torch.Tensor,  # [B, T] the target's input this step
    hidden_states: torch.Tensor,  # [B, T, D] the target's hidden states this step
    accepted: torch.Tensor,  # [B, K+1] tokens emitted this step (-1 padded)
    num_accepted: torch.Tensor,  # [B]
    attn_metadata: AttentionMetadata,
    *,
    accepted_indices: torch.Tensor | None = None,  # [B, K+1] tree path (window indices)
    num_mask_tokens: int = 0,
    mask_token_id: int = 0,
    max_position: int | None = None,
) -> DraftWindow:
    """The tokens the draft has not seen yet: this step's committed tokens plus the new one.

    Generation row (root already in the draft cache at `kv_len`): the accepted drafts and the
    target's extra token, `accepted[:a+1]`, at cache positions `kv_len+1 ..`. Their "previous
    hidden" is the target's hidden at the root and at each accepted draft.
    Context row: the whole prompt plus the first generated token, from position 0; the previous
    hidden of position p > 0 is the target's hidden at p - 1.
    `num_mask_tokens` placeholder tokens are appended (PARD's parallel drafting).
    """
    bs, nc = attn_metadata.num_seqs, attn_metadata.num_contexts
    kv_lens = attn_metadata.kv_lens_cuda[:bs].tolist()
    seq_lens = attn_metadata.seq_lens_cuda[:bs].tolist()
    acc = accepted.tolist()
    n_acc = num_accepted.tolist()
    paths = accepted_indices.tolist() if accepted_indices is not None else None

    rows: list[_Row] = []
    for b in range(bs):
        if b < nc:
            row = _context_row(input_ids[b], hidden_states[b], seq_lens[b], acc[b][0])
        else:
            a = n_acc[b]
            idx = paths[b][: a + 1] if paths is not None else list(range(a + 1))
            row = _generation_row(hidden_states[b], acc[b][: a + 1], idx, kv_lens[b] + 1)
        rows.append(_append_mask_tokens(row, num_mask_tokens, mask_token_id))
    return _pad_rows(rows, hidden_states, max_position)


def _context_row(
    input_ids: torch.Tensor, hidden_states: torch.Tensor, length: int, first_token: int
) -> _Row:
    """A context row ([T] ids, [T, D] hidden): the prompt plus the first generated token, from 0."""
    tokens = [*input_ids[:length].tolist(), first_token]
    prev = torch.cat([hidden_states.new_zeros(1, hidden_states.shape[-1]), hidden_states[:length]])
    return tokens, 0, prev


def _generation_row(
    hidden_states: torch.Tensor, tokens: list[int], indices: list[int], start: int
) -> _Row:
    """A generation row ([T, D] hidden): the emitted tokens, each paired with the target's hidden
    state at the window position it follows (`indices`: the root, then the accepted drafts)."""
    prev = hidden_states[torch.tensor(indices, device=hidden_states.device)]
    return tokens, start, prev


def _append_mask_tokens(row: _Row, num_mask_tokens: int, mask_token_id: int) -> _Row:
    """`num_mask_tokens` placeholders after the row's tokens, with a zero previous hidden."""
    tokens, start, prev = row
    zeros = prev.new_zeros(num_mask_tokens, prev.shape[-1])
    return tokens + [mask_token_id] * num_mask_tokens, start, torch.cat([prev, zeros])


def _pad_rows(
    rows: list[_Row], hidden_states: torch.Tensor, max_position: int | None
) -> DraftWindow:
    """Right-pad the rows into one window; padding continues each row's positions."""
    bs, dim, dev = len(rows), hidden_states.shape[-1], hidden_states.device
    width = max(len(r[0]) for r in rows)
    ids = torch.zeros(bs, width, dtype=torch.long)
    pos = torch.zeros(bs, width, dtype=torch.long)
    prev_hidden = hidden_states.new_zeros(bs, width, dim)
    for b, (tokens, start, prev) in enumerate(rows):
        n = len(tokens)
        ids[b, :n] = torch.tensor(tokens)
        pos[b] = start + torch.arange(width)  # padding continues the positions
        prev_hidden[b, :n] = prev
    if max_position is not None:
        pos = pos.clamp(max=max_position)
    return DraftWindow(
        input_ids=ids.to(dev),
        position_ids=pos.to(dev),
        prev_hidden=prev_hidden,
        starts=torch.tensor([r[1] for r in rows], dtype=torch.int32, device=dev),
        lens=torch.tensor([len(r[0]) for r in rows], dtype=torch.int32, device=dev),
    )


def last_valid(x: torch.Tensor, lens: torch.Tensor) -> torch.Tensor:
    """x[b, lens[b] - 1] for every row: [B, T, ...] -> [B, ...]."""
    idx = (lens.long() - 1).clamp(min=0)
    return x[torch.arange(x.shape[0], device=x.device), idx]


def ancestor_mask(parents: torch.Tensor) -> torch.Tensor:
    """Tree attention mask: [B, N] parent indices (-1 = no parent in the list) -> [B, N, N] bool.

    mask[b, i, j] is True when node j is node i or one of its ancestors. Parents must come before
    their children, so row i is row parents[i] plus node i itself.
    """
    bs, n = parents.shape
    mask = torch.eye(n, dtype=torch.bool, device=parents.device).repeat(bs, 1, 1)  # [B, N, N]
    for i in range(n):
        p = parents[:, i]  # [B]
        has = p >= 0
        if bool(has.any()):
            inherited = mask[torch.arange(bs, device=parents.device), p.clamp(min=0)]  # [B, N]
            mask[:, i] |= inherited & has[:, None]
    return mask


def tree_depths(parents: list[int]) -> list[int]:
    """Depth of every node of a window whose index 0 is the root; `parents[i]` is node i+1's."""
    depths = [0]
    for p in parents:
        depths.append(depths[p] + 1)
    return depths


def require_draft(draft_model: nn.Module | None) -> DraftModel:
    """The draft model as a `DraftModel`; a model-based worker cannot run without one."""
    if not isinstance(draft_model, DraftModel):
        raise TypeError(f"expected a DraftModel, got {type(draft_model).__name__}")
    return draft_model


def chain_draft(
    draft: DraftModel,
    cache: KVCache,
    window: DraftWindow,
    attn_metadata: AttentionMetadata,
    num_tokens: int,
    point: str,
) -> torch.Tensor:
    """Autoregressive drafting: returns [B, num_tokens] greedy draft tokens.

    Changes `kv_lens_cuda` / `seq_lens_cuda` (the draft's cache offsets): the caller brackets this
    with `prepare_for_spec_dec("kv_lens_cuda", "seq_lens_cuda")` / `restore_from_spec_dec()`.
    The first draft forward reads the whole committed window; each later one feeds back the token
    just drafted, paired with the draft's own last hidden state (Eagle/MTP chaining).
    """
    bs = attn_metadata.num_seqs
    max_pos = draft.pos_embed.num_embeddings - 1
    attn_metadata.kv_lens_cuda[:bs].copy_(window.starts)
    attn_metadata.seq_lens_cuda[:bs].copy_(window.lens)
    logits, hidden = draft(
        window.input_ids, window.position_ids, attn_metadata, cache, window.prev_hidden
    )
    tok = last_valid(logits, window.lens).argmax(-1)  # [B]
    h = last_valid(hidden, window.lens)  # [B, D]
    pos = last_valid(window.position_ids, window.lens)  # [B]
    out = [tok]
    for _ in range(num_tokens - 1):
        fault_point(point)
        # Everything fed so far is now cached: move the offsets past it, one new token per row.
        attn_metadata.kv_lens_cuda[:bs] += attn_metadata.seq_lens_cuda[:bs]
        attn_metadata.seq_lens_cuda[:bs] = 1
        pos = (pos + 1).clamp(max=max_pos)
        logits, hidden = draft(tok[:, None], pos[:, None], attn_metadata, cache, h[:, None])
        tok = logits[:, -1].argmax(-1)
        h = hidden[:, -1]
        out.append(tok)
    return torch.stack(out, dim=1)  # [B, K]
