# mypy: disable-error-code="no-untyped-call"
import logging

import pytest
import torch

from runtime.attention import AttentionMetadata
from runtime.profiling import nvtx_range
from runtime.speculative.drafting import ancestor_mask, tree_depths
from runtime.speculative.dynamic_tree import accept_tree
from runtime.speculative.interface import (
    SpecMetadata,
    SpecWorkerBase,
    contract_guard_disabled,
    contract_guard_enabled,
    guard_message,
    violates_guard,
)
from runtime.speculative.ngram import propose_ngram

MESSAGE = (
    "{} must not override SpecWorkerBase.forward; implement _forward_impl instead. "
    "SpecWorkerBase.forward guarantees spec-dec attn-metadata cleanup when a forward fails "
    "(https://nvbugs/6442074)."
)


class _Leaky(SpecWorkerBase):
    """Saves metadata, changes it, then fails or returns without restoring."""

    def __init__(self, fail: bool):
        super().__init__()
        self.fail = fail
        self.calls: list[tuple[AttentionMetadata, SpecMetadata]] = []

    @property
    def max_draft_len(self):
        return 1

    def _forward_impl(
        self,
        input_ids,
        position_ids,
        hidden_states,
        logits,
        attn_metadata,
        spec_metadata,
        draft_model,
        resource_manager=None,
    ):
        self.calls.append((attn_metadata, spec_metadata))
        attn_metadata.prepare_for_spec_dec("kv_lens_cuda")
        attn_metadata.kv_lens_cuda += 3
        if self.fail:
            raise RuntimeError("boom")
        return "out"


def _metadata():
    attn = AttentionMetadata.allocate(2)
    attn.update(seq_lens=[2, 2], kv_lens=[4, 6], cache_slots=[0, 1], num_contexts=0)
    return attn, SpecMetadata.allocate(2, 1)


def test_guard_message_is_exact():
    assert guard_message("W") == MESSAGE.format("W")
    with pytest.raises(TypeError) as info:

        class BadWorker(SpecWorkerBase):
            @nvtx_range("bad.forward")
            def forward(self, *args, **kwargs):
                return None

    assert str(info.value) == MESSAGE.format("BadWorker")


def test_guard_applies_to_grandchildren():
    class Good(_Leaky):
        pass

    with pytest.raises(TypeError, match=r"^Grandchild must not override"):

        class Grandchild(Good):
            def forward(self, *args, **kwargs):
                return None


def test_guard_can_be_switched_off_for_legacy_code_only_inside_the_block():
    with contract_guard_disabled():
        with contract_guard_disabled():
            assert not contract_guard_enabled()

        class Legacy(SpecWorkerBase):
            max_draft_len = 1

            def forward(self, attn_metadata, spec_metadata):
                return "legacy"

    assert contract_guard_enabled()
    worker = Legacy()  # type: ignore[abstract]  # not abstract at runtime: _forward_impl delegates to the legacy forward
    assert violates_guard(Legacy) and not violates_guard(_Leaky)
    attn, spec = _metadata()
    assert worker(attn, spec) == "legacy"
    assert SpecWorkerBase.forward(worker, attn, spec) == "legacy"


def test_worker_without_forward_impl_is_abstract():
    class _Worker(SpecWorkerBase):
        @property
        def max_draft_len(self):
            return 1

    with pytest.raises(TypeError, match="Can't instantiate abstract class _Worker") as info:
        _Worker()  # type: ignore[abstract]
    assert "_forward_impl" in str(info.value)


@pytest.mark.parametrize("style", ["keywords", "positional", "unbound"])
def test_forward_finds_metadata_and_restores_after_a_failure(style, caplog):
    attn, spec = _metadata()
    worker = _Leaky(fail=True)
    ids = torch.zeros(2, 2, dtype=torch.long)
    with caplog.at_level(logging.WARNING), pytest.raises(RuntimeError, match="boom"):
        if style == "keywords":
            worker(
                input_ids=ids,
                position_ids=ids,
                hidden_states=None,
                logits=None,
                attn_metadata=attn,
                spec_metadata=spec,
                draft_model=None,
            )
        elif style == "positional":
            worker(ids, ids, None, None, attn, spec, None)
        else:
            SpecWorkerBase.forward(worker, ids, ids, None, None, attn, spec, None)
    assert worker.calls == [(attn, spec)]
    assert not attn.has_spec_dec_saved_state
    assert attn.kv_lens_cuda[:2].tolist() == [4, 6]
    assert "_Leaky: forward left spec-dec state saved" in caplog.text


def test_forward_restores_a_successful_forward_that_forgot_to(caplog):
    attn, spec = _metadata()
    assert _Leaky(fail=False)(None, None, None, None, attn, spec, None) == "out"
    assert not attn.has_spec_dec_saved_state and attn.kv_lens_cuda[:2].tolist() == [4, 6]


def test_base_restore_hook_does_nothing_without_a_save(caplog):
    attn, spec = _metadata()
    with caplog.at_level(logging.WARNING):
        _Leaky(fail=False)._ensure_spec_dec_state_restored(attn, spec)
    assert caplog.text == ""


def _logits(greedy):
    """Logits whose argmax at [b, t] is greedy[b][t]."""
    g = torch.tensor(greedy)
    return torch.nn.functional.one_hot(g, 50).double()


@pytest.mark.parametrize(
    ("drafts", "greedy", "n_accepted", "emitted"),
    [
        ([7, 8, 9], [7, 8, 9, 4], 3, [7, 8, 9, 4]),  # all accepted + bonus
        ([7, 8, 9], [7, 5, 9, 4], 1, [7, 5]),  # first mismatch at 2: correction 5
        ([7, 8, 9], [1, 8, 9, 4], 0, [1]),  # nothing accepted
        ([7, 1, 9], [7, 8, 9, 4], 1, [7, 8]),  # a later match after a mismatch does not count
    ],
)
def test_accept_chain(drafts, greedy, n_accepted, emitted):
    attn = AttentionMetadata.allocate(1)
    attn.update(seq_lens=[4], kv_lens=[10], cache_slots=[0], num_contexts=0)
    spec = SpecMetadata.allocate(1, 3)
    spec.update(request_ids=[0], drafts=[drafts], parents=None, num_generations=1)
    tokens, n = SpecWorkerBase.accept_chain(_logits([greedy]), attn, spec)
    assert n.tolist() == [n_accepted]
    assert tokens[0, : n_accepted + 1].tolist() == emitted
    assert (tokens[0, n_accepted + 1 :] == -1).all()


def test_accept_chain_context_row_emits_the_greedy_token_after_the_prompt():
    attn = AttentionMetadata.allocate(2)
    attn.update(seq_lens=[3, 2], kv_lens=[0, 5], cache_slots=[0, 1], num_contexts=1)
    spec = SpecMetadata.allocate(2, 1)
    spec.update(request_ids=[0, 1], drafts=[[], [6]], parents=None, num_generations=1)
    tokens, n = SpecWorkerBase.accept_chain(_logits([[1, 2, 3], [6, 9, 0]]), attn, spec)
    assert n.tolist() == [0, 1]
    assert tokens.tolist() == [[3, -1], [6, 9]]


def test_tree_helpers_and_tree_acceptance():
    #   root(0) -> a(1)=7, b(2)=8 ; a -> c(3)=9 ; b -> d(4)=9
    parents = [0, 0, 1, 2]
    assert tree_depths(parents) == [0, 1, 1, 2, 2]
    mask = ancestor_mask(torch.tensor([[-1, *parents]]))[0]
    assert mask[3].tolist() == [True, True, False, True, False]
    assert mask[4].tolist() == [True, False, True, False, True]
    attn = AttentionMetadata.allocate(1)
    attn.update(seq_lens=[5], kv_lens=[3], cache_slots=[0], num_contexts=0)
    spec = SpecMetadata.allocate(1, 4, tree=True)
    spec.update(request_ids=[0], drafts=[[7, 8, 9, 9]], parents=[parents], num_generations=1)
    # greedy: after root -> 8 (branch b), after b -> 9 (node d), after d -> 2
    tokens, n, path = accept_tree(_logits([[8, 1, 9, 1, 2]]), attn, spec)
    assert n.tolist() == [2]
    assert path[0, :3].tolist() == [0, 2, 4]
    assert tokens[0, :3].tolist() == [8, 9, 2]


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        ([1, 2, 3, 4, 1, 2], [3, 4, 1]),  # suffix [1, 2] seen before -> copy what followed
        ([5, 6, 7, 8], [8, 8, 8]),  # nothing repeats -> repeat the last token
        ([1, 2, 1], [2, 1, 1]),  # continuation shorter than K is padded
    ],
)
def test_propose_ngram(tokens, expected):
    assert propose_ngram(tokens, 3, 3) == expected
