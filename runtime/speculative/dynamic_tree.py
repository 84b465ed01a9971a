"""Dynamic-tree worker: drafts a tree (EAGLE-2 style) and verifies all of its branches at once.

Drafting: the draft (the target truncated to `draft_layers` blocks) reads the committed window;
its top-`w` next tokens are level 1. For each further level it re-reads every node drafted so far
with a tree mask (a node sees its ancestors), scores each frontier node's children by cumulative
log-probability and keeps the best `w` of all `w * V` children, so the tree's shape follows the
draft's confidence. Depth `max_draft_len` of the config, so `w * depth` nodes per step.

Verification: the next target forward reads `[root, nodes...]` under the ancestor mask. Walking
from the root, we follow the child whose token equals the target's greedy token at the current
node; the path's tokens are accepted and the target's greedy token at the path's end is emitted.

Extra transient state: during the draft loop the worker changes `all_rank_num_tokens` (tokens per
rank of each draft forward) and sets `force_prepare_spec_dec_tree_mask`. It snapshots the pair as a
tuple on `self` before the loop (`None` means nothing saved - `all_rank_num_tokens` itself may be
None), restores and clears it on the success path, and its restore-hook override does the same
after a failure.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.draft_models import DraftModel, LayerSkipDraft
from runtime.faults import fault_point
from runtime.model import KVCache, TinyLM
from runtime.profiling import nvtx_range
from runtime.resources import ResourceManager
from runtime.speculative.drafting import (
    DraftWindow,
    ancestor_mask,
    committed_window,
    last_valid,
    require_draft,
)
from runtime.speculative.interface import SpecConfig, SpecMetadata, SpecOutput, SpecWorkerBase


def accept_tree(
    logits: torch.Tensor, attn_metadata: AttentionMetadata, spec_metadata: SpecMetadata
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Greedy acceptance over verified trees.

    Returns (accepted_tokens [B, K+1], num_accepted [B], accepted_indices [B, K+1]); the indices
    are the verification-window positions of the accepted path, root (0) first.
    """
    bs, k = attn_metadata.num_seqs, spec_metadata.max_draft_len
    nc = attn_metadata.num_contexts
    assert spec_metadata.draft_parents is not None, "tree verification needs draft_parents"
    greedy = logits.argmax(-1).tolist()  # [B][T] target's greedy token at each window position
    seq_lens = attn_metadata.seq_lens_cuda[:bs].tolist()
    drafts = spec_metadata.draft_tokens[:bs].tolist()
    parents = spec_metadata.draft_parents[:bs].tolist()
    n_drafts = spec_metadata.num_draft_tokens[:bs].tolist()
    accepted = torch.full((bs, k + 1), -1, dtype=torch.long)
    indices = torch.zeros((bs, k + 1), dtype=torch.long)
    num_accepted = torch.zeros(bs, dtype=torch.long)
    for b in range(bs):
        if b < nc:  # context row: the greedy token after the last prompt token
            accepted[b, 0] = greedy[b][seq_lens[b] - 1]
            continue
        path = [0]
        while True:
            want = greedy[b][path[-1]]
            children = [i + 1 for i in range(n_drafts[b]) if parents[b][i] == path[-1]]
            match = [c for c in children if drafts[b][c - 1] == want]
            if not match:
                break
            path.append(match[0])  # siblings carry distinct tokens, so at most one matches
        tokens = [drafts[b][c - 1] for c in path[1:]] + [greedy[b][path[-1]]]
        accepted[b, : len(tokens)] = torch.tensor(tokens)
        indices[b, : len(path)] = torch.tensor(path)
        num_accepted[b] = len(path) - 1
    dev = logits.device
    return accepted.to(dev), num_accepted.to(dev), indices.to(dev)


@dataclass
class _Tree:
    """The nodes drafted so far, [B, n] each: token, parent's index in the node list (-1: the
    root) and cumulative log-probability."""

    tokens: torch.Tensor
    parents: torch.Tensor
    scores: torch.Tensor


def _first_level(
    draft: DraftModel,
    cache: KVCache,
    window: DraftWindow,
    attn_metadata: AttentionMetadata,
    width: int,
) -> _Tree:
    """Level 1: a causal forward over the committed window; top-`width` children of the new
    token."""
    bs = attn_metadata.num_seqs
    attn_metadata.spec_dec_tree_mask = None
    attn_metadata.kv_lens_cuda[:bs].copy_(window.starts)
    attn_metadata.seq_lens_cuda[:bs].copy_(window.lens)
    draft_logits, _ = draft(window.input_ids, window.position_ids, attn_metadata, cache)
    logp = torch.log_softmax(last_valid(draft_logits, window.lens).float(), -1)  # [B, V]
    scores, tokens = logp.topk(width)  # [B, w] cumulative log-prob and token of each node
    return _Tree(tokens, torch.full_like(tokens, -1), scores)


def _next_level(
    draft: DraftModel,
    cache: KVCache,
    attn_metadata: AttentionMetadata,
    tree: _Tree,
    positions: torch.Tensor,
    tree_base: torch.Tensor,
    width: int,
) -> _Tree:
    """Re-read every node (at `positions` [B, n]) under the tree mask and add the best `width`
    children of the frontier (the last `width` nodes) by cumulative score."""
    bs, n = attn_metadata.num_seqs, tree.tokens.shape[1]
    attn_metadata.all_rank_num_tokens = [bs * n]
    attn_metadata.kv_lens_cuda[:bs].copy_(tree_base)
    attn_metadata.seq_lens_cuda[:bs] = n
    attn_metadata.spec_dec_tree_mask = ancestor_mask(tree.parents)  # [B, n, n]
    draft_logits, _ = draft(tree.tokens, positions, attn_metadata, cache)
    frontier = torch.log_softmax(draft_logits[:, n - width :].float(), -1)  # [B, w, V]
    child = tree.scores[:, n - width :, None] + frontier  # [B, w, V] cumulative scores
    best, flat = child.flatten(1).topk(width)  # [B, w] best children over the frontier
    vocab = frontier.shape[-1]
    return _Tree(
        tokens=torch.cat([tree.tokens, flat % vocab], dim=1),
        parents=torch.cat([tree.parents, n - width + flat // vocab], dim=1),
        scores=torch.cat([tree.scores, best], dim=1),
    )


class DynamicTreeWorker(SpecWorkerBase):
    """Dynamic-tree drafting with a tree mask; extra metadata state snapshotted on `self`."""

    def __init__(self, spec_config: SpecConfig | None = None) -> None:
        super().__init__(spec_config)
        # (all_rank_num_tokens, force_prepare_spec_dec_tree_mask) saved before the draft loop;
        # None means nothing is saved (the saved all_rank_num_tokens may itself be None).
        self._saved_tree_state: tuple[list[int] | None, bool] | None = None

    @property
    def max_draft_len(self) -> int:
        """Nodes per drafted tree: branching x depth."""
        return self.spec_config.tree_branching * self.spec_config.max_draft_len

    @property
    def uses_tree(self) -> bool:
        """Drafts form a tree."""
        return True

    def make_draft_model(self, target: TinyLM) -> nn.Module:
        """The target truncated to its first `draft_layers` blocks (shared weights)."""
        return LayerSkipDraft(target, num_layers=self.spec_config.draft_layers)

    @nvtx_range("mtp_dyn.forward")
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
        """Accept along the verified trees, then draft the next trees."""
        draft = require_draft(draft_model)
        if resource_manager is None:
            raise ValueError("DynamicTreeWorker needs the resource manager (draft KV cache)")
        cache = resource_manager.require_draft_cache()
        accepted, num_accepted, indices = accept_tree(logits, attn_metadata, spec_metadata)
        fault_point("dynamic_tree.accept")
        window = committed_window(
            input_ids,
            hidden_states,
            accepted,
            num_accepted,
            attn_metadata,
            accepted_indices=indices,
            max_position=draft.pos_embed.num_embeddings - 1,
        )
        self._saved_tree_state = (
            attn_metadata.all_rank_num_tokens,
            attn_metadata.force_prepare_spec_dec_tree_mask,
        )
        attn_metadata.prepare_for_spec_dec("kv_lens_cuda", "seq_lens_cuda", "spec_dec_tree_mask")
        tree = self._draft_tree(draft, cache, window, attn_metadata)
        attn_metadata.restore_from_spec_dec()
        attn_metadata.all_rank_num_tokens, attn_metadata.force_prepare_spec_dec_tree_mask = (
            self._saved_tree_state
        )
        self._saved_tree_state = None
        # Verification window: node i sits at index i + 1, the root at 0.
        return SpecOutput(
            accepted,
            num_accepted,
            next_draft_tokens=tree.tokens,
            next_draft_parents=tree.parents + 1,
            accepted_indices=indices,
        )

    def _draft_tree(
        self,
        draft: DraftModel,
        cache: KVCache,
        window: DraftWindow,
        attn_metadata: AttentionMetadata,
    ) -> _Tree:
        """Draft the next trees, level by level; changes the metadata the caller saved."""
        width = self.spec_config.tree_branching
        max_pos = draft.pos_embed.num_embeddings - 1
        tree = _first_level(draft, cache, window, attn_metadata, width)
        root_pos = last_valid(window.position_ids, window.lens)  # [B]
        tree_base = window.starts + window.lens  # [B] draft-cache offset of node 0

        # Levels 2..depth: re-read all nodes under the tree mask, expand the frontier.
        attn_metadata.force_prepare_spec_dec_tree_mask = True
        for _level in range(1, self.spec_config.max_draft_len):
            fault_point("dynamic_tree.draft_level")
            n = tree.tokens.shape[1]
            depth = torch.arange(n, device=tree.tokens.device) // width + 1  # [n]
            pos = (root_pos[:, None] + depth[None, :]).clamp(max=max_pos)  # [B, n]
            tree = _next_level(draft, cache, attn_metadata, tree, pos, tree_base, width)
        return tree

    def _ensure_spec_dec_state_restored(
        self, attn_metadata: AttentionMetadata, spec_metadata: SpecMetadata | None
    ) -> None:
        """Restore the base save, then the tree state snapshotted on `self`, if any."""
        super()._ensure_spec_dec_state_restored(attn_metadata, spec_metadata)
        if self._saved_tree_state is None:
            return
        attn_metadata.all_rank_num_tokens, attn_metadata.force_prepare_spec_dec_tree_mask = (
            self._saved_tree_state
        )
        self._saved_tree_state = None
