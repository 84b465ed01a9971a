"""Batched generation: target-only greedy decoding and speculative decoding with a worker.

One engine step:
1. schedule: admit waiting requests into free KV-cache slots; context (prefill) requests first;
2. describe the batch in the long-lived `AttentionMetadata` / `SpecMetadata`;
3. target forward over each sequence's window: the whole prompt for a context request,
   `[root, drafts...]` for a generation request (`root` = last committed token, not yet cached);
4. `worker(...)`: accept/reject the drafts, propose the next ones;
5. commit: extend the tokens, advance `kv_len` past the kept cache entries (compacting a tree's
   accepted path), store the next drafts.

Failures are tolerated the way serving engines tolerate them: the max-shape warm-up survives a
failure (as an OOM there is survived), and serving steps may fail up to `error_budget` times; a
failed step commits nothing and is simply retried. Whether the retry is correct depends on the
worker leaving the metadata clean - which is the SpecWorkerBase contract.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.faults import fault_point
from runtime.model import TinyLM
from runtime.resources import ResourceManager
from runtime.speculative.drafting import ancestor_mask, tree_depths
from runtime.speculative.interface import SpecMetadata, SpecOutput, SpecWorkerBase

logger = logging.getLogger(__name__)


class EngineError(RuntimeError):
    """A step failed and the error budget is spent."""


@dataclass
class Request:
    """One generation request and its progress."""

    rid: int
    prompt: list[int]
    max_new_tokens: int
    tokens: list[int] = field(default_factory=list)  # prompt + generated
    slot: int = -1
    kv_len: int = 0  # target KV entries committed (all tokens but the last, once prefilled)
    drafts: list[int] = field(default_factory=list)
    parents: list[int] | None = None

    @property
    def generated(self) -> list[int]:
        """Tokens produced so far."""
        return self.tokens[len(self.prompt) :]

    @property
    def done(self) -> bool:
        """Whether the request produced all its tokens."""
        return len(self.generated) >= self.max_new_tokens


@dataclass
class Step:
    """One scheduled batch and the target's output for it."""

    requests: list[Request]
    num_contexts: int
    input_ids: torch.Tensor  # [B, T]
    position_ids: torch.Tensor  # [B, T]
    logits: torch.Tensor  # [B, T, V]
    hidden_states: torch.Tensor  # [B, T, D]


@dataclass
class EngineStats:
    """Counters for one engine; acceptance = accepted drafts / verified drafts."""

    steps: int = 0
    drafted: int = 0
    accepted: int = 0
    tolerated_failures: int = 0

    @property
    def acceptance_rate(self) -> float:
        """Fraction of verified draft tokens that were accepted."""
        return self.accepted / self.drafted if self.drafted else 0.0


class Engine:
    """Speculative decoding of many requests with `worker` (and its `draft_model`)."""

    def __init__(
        self,
        target: TinyLM,
        worker: SpecWorkerBase,
        draft_model: nn.Module | None = None,
        *,
        max_batch_size: int = 8,
        error_budget: int = 0,
    ) -> None:
        self.target, self.worker, self.draft_model = target, worker, draft_model
        self.max_batch_size, self.error_budget = max_batch_size, error_budget
        self.device = target.embed.weight.device
        self.max_draft_len = worker.max_draft_len
        self.max_seq_len = target.cfg.max_seq_len
        # Room past the last position for the verification window and the draft's scratch tokens.
        cache_len = self.max_seq_len + 2 * self.max_draft_len + 4
        draft_cache = None
        new_cache = getattr(draft_model, "new_cache", None)
        if callable(new_cache):
            draft_cache = new_cache(max_batch_size, cache_len)
        self.resources = ResourceManager(target.new_cache(max_batch_size, cache_len), draft_cache)
        self.attn_metadata = AttentionMetadata.allocate(max_batch_size, self.device)
        self.spec_metadata = SpecMetadata.allocate(
            max_batch_size, self.max_draft_len, self.device, tree=worker.uses_tree
        )
        self.stats = EngineStats()
        self._next_rid = 0
        self._free_slots = list(range(max_batch_size))
        self._waiting: deque[Request] = deque()
        self._running: list[Request] = []
        self.finished: dict[int, Request] = {}

    # -- requests ------------------------------------------------------------------------------

    def add_request(self, prompt: list[int], max_new_tokens: int) -> int:
        """Queue a request; returns its id."""
        if not prompt or max_new_tokens < 1:
            raise ValueError("a request needs a non-empty prompt and max_new_tokens >= 1")
        if len(prompt) + max_new_tokens + self.max_draft_len + 2 > self.max_seq_len:
            raise ValueError(f"prompt + output does not fit max_seq_len={self.max_seq_len}")
        rid = self._next_rid
        self._next_rid += 1
        self._waiting.append(Request(rid, list(prompt), max_new_tokens, tokens=list(prompt)))
        return rid

    def has_work(self) -> bool:
        """Whether any request is waiting or running."""
        return bool(self._waiting or self._running)

    def _schedule(self) -> list[Request]:
        while self._waiting and self._free_slots:
            req = self._waiting.popleft()
            req.slot = self._free_slots.pop(0)
            self.resources.set_tokens(req.rid, req.tokens)
            self._running.append(req)
        # Context requests first, as the attention metadata expects.
        return sorted(self._running, key=lambda r: r.kv_len > 0)

    # -- one step, in pieces (the conformance suite calls them one by one) ----------------------

    def prepare_step(self) -> Step:
        """Schedule, describe the batch in the metadata, and run the target forward."""
        batch = self._schedule()
        if not batch:
            raise RuntimeError("no request to run")
        num_contexts = sum(r.kv_len == 0 for r in batch)
        windows: list[tuple[list[int], list[int]]] = []  # (tokens, positions)
        masks: list[torch.Tensor] = []
        for r in batch:
            if r.kv_len == 0:
                n = len(r.tokens)
                windows.append((r.tokens, list(range(n))))
                masks.append(torch.ones(n, n, dtype=torch.bool).tril())
            else:
                parents = r.parents if r.parents is not None else list(range(len(r.drafts)))
                depths = tree_depths(parents)
                windows.append(([r.tokens[-1], *r.drafts], [r.kv_len + d for d in depths]))
                masks.append(ancestor_mask(torch.tensor([[-1, *parents]]))[0])
        width = max(len(w[0]) for w in windows)
        ids = torch.zeros(len(batch), width, dtype=torch.long)
        pos = torch.zeros(len(batch), width, dtype=torch.long)
        tree = torch.eye(width, dtype=torch.bool).repeat(len(batch), 1, 1)  # padding sees itself
        for b, ((tokens, positions), mask) in enumerate(zip(windows, masks, strict=True)):
            n = len(tokens)
            ids[b, :n] = torch.tensor(tokens)
            pos[b, :n] = torch.tensor(positions)
            pos[b, n:] = positions[-1]
            tree[b, :n, :n] = mask
        use_tree = self.worker.uses_tree and num_contexts < len(batch)
        self.attn_metadata.update(
            seq_lens=[len(w[0]) for w in windows],
            kv_lens=[r.kv_len for r in batch],
            cache_slots=[r.slot for r in batch],
            num_contexts=num_contexts,
            spec_dec_tree_mask=tree.to(self.device) if use_tree else None,
        )
        self.spec_metadata.update(
            request_ids=[r.rid for r in batch],
            drafts=[r.drafts if r.kv_len else [] for r in batch],
            parents=[r.parents or [] for r in batch] if self.worker.uses_tree else None,
            num_generations=len(batch) - num_contexts,
        )
        ids, pos = ids.to(self.device), pos.to(self.device)
        fault_point("engine.target_forward")
        logits, hidden = self.target(ids, pos, self.attn_metadata, self.resources.target_cache)
        return Step(batch, num_contexts, ids, pos, logits, hidden)

    def run_worker(self, step: Step) -> SpecOutput:
        """Call the worker the way a model engine does (keyword arguments)."""
        out: SpecOutput = self.worker(
            input_ids=step.input_ids,
            position_ids=step.position_ids,
            hidden_states=step.hidden_states,
            logits=step.logits,
            attn_metadata=self.attn_metadata,
            spec_metadata=self.spec_metadata,
            draft_model=self.draft_model,
            resource_manager=self.resources,
        )
        return out

    def commit(self, step: Step, out: SpecOutput) -> None:
        """Apply a worker's output to the requests and the target KV cache."""
        emitted = out.accepted_tokens.tolist()
        counts = out.num_accepted.tolist()
        next_drafts = out.next_draft_tokens.tolist()
        parents = out.next_draft_parents.tolist() if out.next_draft_parents is not None else None
        paths = out.accepted_indices.tolist() if out.accepted_indices is not None else None
        cache = self.resources.target_cache
        for b, req in enumerate(step.requests):
            a = counts[b]
            if b < step.num_contexts:
                req.kv_len = len(req.tokens)
            else:
                self.stats.drafted += len(req.drafts)
                self.stats.accepted += a
                path = paths[b][: a + 1] if paths is not None else list(range(a + 1))
                if path != list(range(a + 1)):  # tree: move the accepted path's entries together
                    src = torch.tensor(path, device=self.device) + req.kv_len
                    dst = torch.arange(a + 1, device=self.device) + req.kv_len
                    cache.move(req.slot, src, dst)
                req.kv_len += a + 1
            budget = req.max_new_tokens - len(req.generated)
            req.tokens.extend(emitted[b][: a + 1][:budget])
            req.drafts = next_drafts[b]
            req.parents = parents[b] if parents is not None else None
            if req.done:
                self._finish(req)
        self.stats.steps += 1

    def _finish(self, req: Request) -> None:
        self._running.remove(req)
        self._free_slots.append(req.slot)
        self._free_slots.sort()
        self.resources.drop(req.rid)
        self.finished[req.rid] = req

    def step(self) -> None:
        """One step; a failure is tolerated (the step is retried later) while budget remains."""
        try:
            step = self.prepare_step()
            out = self.run_worker(step)
        except Exception as exc:
            if self.stats.tolerated_failures >= self.error_budget:
                raise EngineError(f"step failed and the error budget is spent: {exc}") from exc
            self.stats.tolerated_failures += 1
            logger.warning(
                "step failed (tolerated, %d so far): %s", self.stats.tolerated_failures, exc
            )
            return
        self.commit(step, out)

    # -- whole runs ----------------------------------------------------------------------------

    def run(self) -> dict[int, list[int]]:
        """Step until every request is done; returns generated tokens by request id."""
        while self.has_work():
            self.step()
        return {rid: req.generated for rid, req in self.finished.items()}

    @torch.inference_mode()
    def generate(self, prompts: list[list[int]], max_new_tokens: int) -> list[list[int]]:
        """Generate `max_new_tokens` greedy tokens for every prompt (in prompt order)."""
        rids = [self.add_request(p, max_new_tokens) for p in prompts]
        done = self.run()
        return [done[rid] for rid in rids]

    @torch.inference_mode()
    def warmup(self, prompt_len: int = 16) -> bool:
        """A max-shape prefill and generation step on dummy requests, tolerating a failure.

        Real engines run this to size memory / capture CUDA graphs and survive an OOM here; state
        a failing worker leaves in the metadata stays behind. Returns whether it succeeded.
        """
        saved = (self._waiting, self._running, self.finished, self._next_rid)
        self._waiting, self._running, self.finished = deque(), [], {}
        self.spec_metadata.is_cuda_graph = True
        ok = True
        try:
            for i in range(self.max_batch_size):
                self.add_request([(7 * i + j) % 97 + 1 for j in range(prompt_len)], 2)
            for _ in range(2):
                step = self.prepare_step()
                self.commit(step, self.run_worker(step))
        except Exception as exc:
            logger.warning("warm-up failed (tolerated, as an OOM would be): %s", exc)
            ok = False
        finally:
            for req in self._running:
                self.resources.drop(req.rid)
            self._free_slots = list(range(self.max_batch_size))
            self._waiting, self._running, self.finished, self._next_rid = saved
            self.spec_metadata.is_cuda_graph = False
        return ok


@torch.inference_mode()
def greedy_generate(
    target: TinyLM, prompts: list[list[int]], max_new_tokens: int
) -> list[list[int]]:
    """Target-only greedy decoding, one token per forward: the reference (and the baseline).

    All prompts are decoded together: one batched prefill, then one-token steps.
    """
    bs, dev = len(prompts), target.embed.weight.device
    cache = target.new_cache(bs, max(len(p) for p in prompts) + max_new_tokens + 1)
    meta = AttentionMetadata.allocate(bs, dev)
    width = max(len(p) for p in prompts)
    ids = torch.zeros(bs, width, dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, : len(p)] = torch.tensor(p)
    pos = torch.arange(width).repeat(bs, 1)
    lens = [len(p) for p in prompts]
    meta.update(seq_lens=lens, kv_lens=[0] * bs, cache_slots=list(range(bs)), num_contexts=bs)
    logits, _ = target(ids.to(dev), pos.to(dev), meta, cache)
    last = torch.tensor(lens, device=dev) - 1
    tok = logits[torch.arange(bs, device=dev), last].argmax(-1)  # [B]
    out = [tok]
    kv = torch.tensor(lens, device=dev)
    for _ in range(max_new_tokens - 1):
        meta.update(
            seq_lens=[1] * bs, kv_lens=kv.tolist(), cache_slots=list(range(bs)), num_contexts=0
        )
        logits, _ = target(tok[:, None], kv[:, None], meta, cache)
        tok = logits[:, -1].argmax(-1)
        out.append(tok)
        kv = kv + 1
    return torch.stack(out, 1).tolist()
