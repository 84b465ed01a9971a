"""N-gram (prompt lookup) worker: drafts by copying what followed the latest earlier occurrence of
the sequence's suffix. No draft model and no metadata changes."""

from __future__ import annotations

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.faults import fault_point
from runtime.profiling import nvtx_range
from runtime.resources import ResourceManager
from runtime.speculative.interface import SpecMetadata, SpecOutput, SpecWorkerBase


def propose_ngram(tokens: list[int], num_tokens: int, max_n: int) -> list[int]:
    """Draft `num_tokens` tokens: find the longest suffix (up to `max_n`) seen earlier and copy
    what followed its most recent earlier occurrence; pad by repeating. Falls back to repeating
    the last token."""
    for n in range(min(max_n, len(tokens) - 1), 0, -1):
        suffix = tokens[-n:]
        for start in range(len(tokens) - n - 1, -1, -1):
            if tokens[start : start + n] == suffix:
                follow = tokens[start + n : start + n + num_tokens]
                return follow + [follow[-1]] * (num_tokens - len(follow))
    return [tokens[-1]] * num_tokens


class NGramWorker(SpecWorkerBase):
    """Prompt-lookup drafting from each request's own tokens."""

    @property
    def max_draft_len(self) -> int:
        """Draft tokens per step."""
        return self.spec_config.max_draft_len

    @nvtx_range("ngram.forward")
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
        """Accept the verified drafts, then look up the next ones in each request's history."""
        if resource_manager is None:
            raise ValueError("NGramWorker needs the resource manager (token history)")
        accepted, num_accepted = self.accept_chain(logits, attn_metadata, spec_metadata)
        emitted = accepted.tolist()
        counts = num_accepted.tolist()
        drafts = []
        for b, rid in enumerate(spec_metadata.request_ids[: attn_metadata.num_seqs]):
            fault_point("ngram.lookup")
            history = resource_manager.committed_tokens(rid) + emitted[b][: counts[b] + 1]
            drafts.append(propose_ngram(history, self.max_draft_len, self.spec_config.ngram_max))
        next_drafts = torch.tensor(drafts, dtype=torch.long, device=logits.device)
        return SpecOutput(accepted, num_accepted, next_drafts)
