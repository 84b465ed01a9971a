"""Attention metadata shared by the target model, the draft models and the spec-dec workers.

One `AttentionMetadata` object lives as long as the engine (like the CUDA-graph buffers of a real
runtime): the engine rewrites it before every step with `update()`, the models read it, and a
speculative worker may *temporarily* change some of its fields while it drafts. Those temporary
changes are bracketed by `prepare_for_spec_dec(*fields)` (snapshot) and `restore_from_spec_dec()`
(put back). The pair must alternate: a second prepare while a save is pending means an earlier
forward leaked its state (DESIGN §4), and it fails loudly instead of silently stacking saves.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch


class SpecDecStateError(AssertionError):
    """A `prepare_for_spec_dec` / `restore_from_spec_dec` pairing was broken."""


def snapshot_value(value: Any) -> Any:
    """Deep copy of one metadata value: tensors are cloned (values, not storage, are compared)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return copy.deepcopy(value)


def snapshot_dataclass(obj: Any) -> dict[str, Any]:
    """Every dataclass field of `obj`, deep-copied, for before/after comparisons."""
    return {f.name: snapshot_value(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def values_equal(a: Any, b: Any) -> bool:
    """Exact equality that understands tensors (dtype, shape and every value) and nested values."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            return False
        return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a.cpu(), b.cpu()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return (
            type(a) is type(b)
            and len(a) == len(b)
            and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return bool(a == b)


def diff_snapshots(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Names of the fields whose values differ between two snapshots."""
    return [name for name in before if not values_equal(before[name], after.get(name))]


@dataclass(eq=False)
class AttentionMetadata:
    """Per-batch attention state. Host tensors drive the engine, `*_cuda` tensors the kernels.

    Buffers are allocated once for `max_num_seqs` sequences; only the first `num_seqs` entries are
    meaningful. Context (prefill) sequences come first: `[0, num_contexts)`, then generation ones.
    On a CPU run the "cuda" tensors are simply separate CPU tensors, so the host/device split and
    in-place updates behave the same as on a GPU.
    """

    max_num_seqs: int
    seq_lens: torch.Tensor  # [max_num_seqs] int32, host: new tokens of each sequence this step
    kv_lens: torch.Tensor  # [max_num_seqs] int32, host: tokens already in each KV cache
    seq_lens_cuda: torch.Tensor  # [max_num_seqs] int32, device copy of seq_lens
    kv_lens_cuda: torch.Tensor  # [max_num_seqs] int32, device copy of kv_lens (cache write offset)
    cache_slots: torch.Tensor  # [max_num_seqs] int64, device: KV-cache slot of each sequence
    num_contexts: int = 0
    num_seqs: int = 0
    # Tokens per rank for attention data parallelism; None when attention DP is off.
    all_rank_num_tokens: list[int] | None = None
    # When set, the model must be given a tree mask for this call (the dynamic-tree draft loop).
    force_prepare_spec_dec_tree_mask: bool = False
    # [num_seqs, T, T] bool: which new tokens each new token may attend to; None means causal.
    spec_dec_tree_mask: torch.Tensor | None = None
    _spec_dec_saved: dict[str, Any] | None = field(default=None, repr=False)

    @classmethod
    def allocate(cls, max_num_seqs: int, device: torch.device | str = "cpu") -> AttentionMetadata:
        """Zeroed buffers for up to `max_num_seqs` sequences on `device`."""
        dev = torch.device(device)

        def zeros(on: torch.device, dtype: torch.dtype = torch.int32) -> torch.Tensor:
            return torch.zeros(max_num_seqs, dtype=dtype, device=on)

        cpu = torch.device("cpu")
        return cls(
            max_num_seqs=max_num_seqs,
            seq_lens=zeros(cpu),
            kv_lens=zeros(cpu),
            seq_lens_cuda=zeros(dev),
            kv_lens_cuda=zeros(dev),
            cache_slots=zeros(dev, torch.int64),
        )

    def update(
        self,
        *,
        seq_lens: Sequence[int],
        kv_lens: Sequence[int],
        cache_slots: Sequence[int],
        num_contexts: int,
        all_rank_num_tokens: list[int] | None = None,
        spec_dec_tree_mask: torch.Tensor | None = None,
    ) -> None:
        """Describe the next batch (engine side), then sync the device buffers via `on_update`."""
        n = len(seq_lens)
        if not (n == len(kv_lens) == len(cache_slots)) or n > self.max_num_seqs:
            raise ValueError(
                f"batch of {n} sequences does not fit metadata for {self.max_num_seqs}"
            )
        if not 0 <= num_contexts <= n:
            raise ValueError(f"num_contexts={num_contexts} outside [0, {n}]")
        self.num_seqs = n
        self.num_contexts = num_contexts
        self.seq_lens.zero_()
        self.kv_lens.zero_()
        self.seq_lens[:n] = torch.tensor(list(seq_lens), dtype=torch.int32)
        self.kv_lens[:n] = torch.tensor(list(kv_lens), dtype=torch.int32)
        self.cache_slots.zero_()
        self.cache_slots[:n] = torch.tensor(list(cache_slots), dtype=torch.int64)
        self.all_rank_num_tokens = all_rank_num_tokens
        self.spec_dec_tree_mask = spec_dec_tree_mask
        self.on_update()

    def on_update(self) -> None:
        """Validate the host fields and copy them into the device buffers, in place."""
        n = self.num_seqs
        if bool((self.seq_lens[:n] <= 0).any()):
            raise ValueError("every scheduled sequence needs at least one new token")
        mask = self.spec_dec_tree_mask
        if mask is not None and (mask.dim() != 3 or mask.shape[0] != n):
            raise ValueError(
                f"spec_dec_tree_mask must be [num_seqs={n}, T, T], got {tuple(mask.shape)}"
            )
        self.seq_lens_cuda.copy_(self.seq_lens, non_blocking=True)
        self.kv_lens_cuda.copy_(self.kv_lens, non_blocking=True)

    # -- spec-dec save / restore ---------------------------------------------------------------

    @property
    def has_spec_dec_saved_state(self) -> bool:
        """True between `prepare_for_spec_dec` and `restore_from_spec_dec`."""
        return self._spec_dec_saved is not None

    def prepare_for_spec_dec(self, *field_names: str) -> None:
        """Snapshot the named fields so a worker may change them while it drafts."""
        if self._spec_dec_saved is not None:
            raise SpecDecStateError(
                "prepare_for_spec_dec() called while a previous save is still pending "
                f"(saved fields: {sorted(self._spec_dec_saved)}); a spec-dec forward must call "
                "restore_from_spec_dec() before the next prepare - did a failed forward leak it?"
            )
        if not field_names:
            raise ValueError("prepare_for_spec_dec() needs at least one field name")
        known = {f.name for f in dataclasses.fields(self)} - {"_spec_dec_saved", "max_num_seqs"}
        unknown = sorted(set(field_names) - known)
        if unknown:
            raise ValueError(f"cannot save unknown AttentionMetadata fields {unknown}")
        self._spec_dec_saved = {name: snapshot_value(getattr(self, name)) for name in field_names}

    def restore_from_spec_dec(self) -> None:
        """Put back the fields saved by `prepare_for_spec_dec` and clear the save."""
        saved = self._spec_dec_saved
        if saved is None:
            raise SpecDecStateError(
                "restore_from_spec_dec() called without a matching prepare_for_spec_dec()"
            )
        for name, value in saved.items():
            current = getattr(self, name)
            if (
                isinstance(current, torch.Tensor)
                and isinstance(value, torch.Tensor)
                and current.shape == value.shape
            ):
                current.copy_(value)  # in place: buffers captured elsewhere stay valid
            else:
                setattr(self, name, value)
        self._spec_dec_saved = None

    def snapshot(self) -> dict[str, Any]:
        """Every field (tensors cloned), including the pending save, for exact comparisons."""
        return snapshot_dataclass(self)
