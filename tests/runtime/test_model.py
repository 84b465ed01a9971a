# mypy: disable-error-code="no-untyped-call"
import pytest
import torch

from runtime.attention import AttentionMetadata
from runtime.draft_models import FusedDraftHead, LayerSkipDraft
from runtime.model import build_model


def _forward(model, cache, meta, ids, start, slot=0, tree=None):
    t = ids.shape[1]
    meta.update(
        seq_lens=[t],
        kv_lens=[start],
        cache_slots=[slot],
        num_contexts=int(start == 0),
        spec_dec_tree_mask=tree,
    )
    pos = torch.arange(start, start + t)[None]
    return model(ids, pos, meta, cache)


@pytest.fixture(scope="module")
def model():
    return build_model("test", dtype=torch.float64)


def test_prefill_equals_token_by_token_decoding(model):
    ids = torch.randint(0, 128, (1, 12), generator=torch.Generator().manual_seed(3))
    meta = AttentionMetadata.allocate(1)
    full, _ = _forward(model, model.new_cache(1, 32), meta, ids, 0)
    cache = model.new_cache(1, 32)
    steps = [_forward(model, cache, meta, ids[:, i : i + 1], i)[0] for i in range(12)]
    torch.testing.assert_close(full, torch.cat(steps, 1))


def test_right_padding_and_batching_do_not_change_a_sequence(model):
    gen = torch.Generator().manual_seed(4)
    short = torch.randint(0, 128, (5,), generator=gen)
    long = torch.randint(0, 128, (11,), generator=gen)
    meta = AttentionMetadata.allocate(2)
    alone, _ = _forward(
        model, model.new_cache(1, 32), AttentionMetadata.allocate(1), short[None], 0
    )
    ids = torch.zeros(2, 11, dtype=torch.long)
    ids[0, :5], ids[1] = short, long
    meta.update(seq_lens=[5, 11], kv_lens=[0, 0], cache_slots=[1, 0], num_contexts=2)
    batched, _ = model(ids, torch.arange(11).repeat(2, 1), meta, model.new_cache(2, 32))
    torch.testing.assert_close(batched[0, :5], alone[0])


def test_chain_tree_mask_equals_causal_and_branches_are_isolated(model):
    ids = torch.tensor([[5, 6, 7, 8]])
    meta = AttentionMetadata.allocate(1)
    causal, _ = _forward(model, model.new_cache(1, 16), meta, ids, 0)
    chain = torch.ones(4, 4, dtype=torch.bool).tril()[None]
    tree_out, _ = _forward(model, model.new_cache(1, 16), meta, ids, 0, tree=chain)
    torch.testing.assert_close(causal, tree_out)
    # Tree 5 -> {6, 7}, 7 -> 8: node 2 (token 7) is a sibling of node 1, at depth 1.
    fork = torch.tensor(
        [[[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 1, 1]]], dtype=torch.bool
    )
    meta.update(seq_lens=[4], kv_lens=[0], cache_slots=[0], num_contexts=1, spec_dec_tree_mask=fork)
    forked, _ = model(ids, torch.tensor([[0, 1, 1, 2]]), meta, model.new_cache(1, 16))
    # The branch 5 -> 7 -> 8 must compute exactly what the plain sequence [5, 7, 8] computes.
    branch, _ = _forward(model, model.new_cache(1, 16), meta, torch.tensor([[5, 7, 8]]), 0)
    torch.testing.assert_close(forked[0, [0, 2, 3]], branch[0])
    torch.testing.assert_close(forked[0, 1], causal[0, 1])


def test_force_tree_mask_without_a_mask_is_an_error(model):
    meta = AttentionMetadata.allocate(1)
    meta.update(seq_lens=[2], kv_lens=[0], cache_slots=[0], num_contexts=1)
    meta.force_prepare_spec_dec_tree_mask = True
    with pytest.raises(RuntimeError, match="force_prepare_spec_dec_tree_mask"):
        model(torch.tensor([[1, 2]]), torch.tensor([[0, 1]]), meta, model.new_cache(1, 8))


def test_cache_overflow_is_an_error(model):
    meta = AttentionMetadata.allocate(1)
    with pytest.raises(RuntimeError, match="overflow"):
        _forward(model, model.new_cache(1, 4), meta, torch.tensor([[1, 2, 3, 4, 5]]), 0)


def test_weights_are_seeded():
    a, b = build_model("test"), build_model("test")
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


def test_drafts_share_the_target_weights(model):
    skip = LayerSkipDraft(model, 2)
    head = FusedDraftHead(model, 1, "mtp")
    assert skip.layers[1] is model.layers[1] and head.lm_head is model.lm_head
    with pytest.raises(ValueError):
        LayerSkipDraft(model, 0)


def test_layer_skip_draft_with_all_layers_is_the_target(model):
    ids = torch.tensor([[9, 8, 7]])
    meta = AttentionMetadata.allocate(1)
    full = LayerSkipDraft(model, model.cfg.n_layers)
    want, _ = _forward(model, model.new_cache(1, 8), meta, ids, 0)
    got, _ = full(ids, torch.arange(3)[None], meta, full.new_cache(1, 8))
    torch.testing.assert_close(got, want)
