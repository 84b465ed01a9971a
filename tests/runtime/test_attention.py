import pytest
import torch

from runtime.attention import AttentionMetadata, SpecDecStateError, diff_snapshots


def _meta() -> AttentionMetadata:
    meta = AttentionMetadata.allocate(4)
    meta.update(seq_lens=[3, 4, 4], kv_lens=[0, 10, 12], cache_slots=[2, 0, 1], num_contexts=1)
    return meta


def test_update_fills_host_and_device_buffers():
    meta = _meta()
    assert meta.num_seqs == 3 and meta.num_contexts == 1
    assert meta.seq_lens_cuda.tolist() == [3, 4, 4, 0]
    assert meta.kv_lens_cuda.tolist() == [0, 10, 12, 0]
    assert meta.cache_slots[:3].tolist() == [2, 0, 1]


def test_on_update_copies_host_fields_in_place():
    meta = _meta()
    buffer = meta.kv_lens_cuda
    meta.kv_lens[1] = 99
    meta.on_update()
    assert meta.kv_lens_cuda is buffer and buffer[1].item() == 99


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"seq_lens": [1] * 5, "kv_lens": [0] * 5, "cache_slots": [0] * 5}, "does not fit"),
        ({"seq_lens": [1, 1], "kv_lens": [0], "cache_slots": [0, 1]}, "does not fit"),
        ({"seq_lens": [1, 0], "kv_lens": [0, 0], "cache_slots": [0, 1]}, "at least one new token"),
    ],
)
def test_update_rejects_inconsistent_batches(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AttentionMetadata.allocate(4).update(num_contexts=0, **kwargs)


def test_update_rejects_bad_num_contexts():
    with pytest.raises(ValueError, match="num_contexts"):
        AttentionMetadata.allocate(4).update(
            seq_lens=[1], kv_lens=[0], cache_slots=[0], num_contexts=2
        )


def test_restore_puts_back_every_saved_field_in_place():
    meta = _meta()
    before = meta.snapshot()
    kv_buffer = meta.kv_lens_cuda
    meta.prepare_for_spec_dec("kv_lens_cuda", "seq_lens_cuda", "all_rank_num_tokens")
    pending = meta.has_spec_dec_saved_state
    assert pending
    meta.kv_lens_cuda[:3] += 5
    meta.seq_lens_cuda[:3] = 1
    meta.all_rank_num_tokens = [7]
    meta.restore_from_spec_dec()
    assert not meta.has_spec_dec_saved_state
    assert meta.kv_lens_cuda is kv_buffer  # restored in place
    assert diff_snapshots(before, meta.snapshot()) == []


def test_restore_rebinds_fields_whose_shape_changed():
    meta = _meta()
    meta.prepare_for_spec_dec("spec_dec_tree_mask")
    meta.spec_dec_tree_mask = torch.ones(3, 2, 2, dtype=torch.bool)
    meta.restore_from_spec_dec()
    assert meta.spec_dec_tree_mask is None


def test_prepare_while_a_save_is_pending_fails_loudly():
    meta = _meta()
    meta.prepare_for_spec_dec("kv_lens_cuda")
    with pytest.raises(SpecDecStateError, match="still pending"):
        meta.prepare_for_spec_dec("seq_lens_cuda")


def test_restore_without_prepare_fails_loudly():
    with pytest.raises(SpecDecStateError, match="without a matching prepare_for_spec_dec"):
        _meta().restore_from_spec_dec()


@pytest.mark.parametrize("names", [(), ("no_such_field",), ("max_num_seqs",)])
def test_prepare_rejects_unknown_or_missing_fields(names):
    with pytest.raises(ValueError):
        _meta().prepare_for_spec_dec(*names)


def test_snapshot_diff_sees_tensor_values_and_plain_fields():
    meta = _meta()
    before = meta.snapshot()
    meta.kv_lens_cuda[2] += 1
    meta.force_prepare_spec_dec_tree_mask = True
    assert diff_snapshots(before, meta.snapshot()) == [
        "kv_lens_cuda",
        "force_prepare_spec_dec_tree_mask",
    ]
