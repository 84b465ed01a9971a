"""The decisive test of the engine: at temperature 0 speculative decoding emits exactly the
target's greedy tokens, for every worker, at batch sizes 1 and 8, with prompts of mixed lengths.

The workers are discovered (`conformance.discover_workers`), never listed: a new worker module in
`runtime/speculative/` is tested here without touching this file.
"""

# mypy: disable-error-code="no-untyped-call"

import pytest
import torch

from runtime import conformance as conf
from runtime.engine import Engine, greedy_generate
from runtime.model import build_model
from runtime.speculative.eagle import EagleWorker
from runtime.speculative.interface import SpecConfig

WORKERS = conf.discover_workers(conf.DEFAULT_PACKAGE)


def _prompts(n, seed=0):
    gen = torch.Generator().manual_seed(seed)
    lens = torch.randint(2, 40, (n,), generator=gen).tolist()
    # Repetitive prompts give the n-gram worker something to find.
    return [
        torch.randint(1, 20 if i % 2 else 127, (k,), generator=gen).tolist()
        for i, k in enumerate(lens)
    ]


def _check(worker_cls, device, batch_size, num_prompts, max_new, spec_config):
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    target = build_model("test", device=device, dtype=torch.float64)
    prompts = _prompts(num_prompts)
    expected = greedy_generate(target, prompts, max_new)
    worker = worker_cls(spec_config).to(device)
    engine = Engine(target, worker, worker.make_draft_model(target), max_batch_size=batch_size)
    assert engine.generate(prompts, max_new) == expected
    return engine


@pytest.mark.parametrize("batch_size", [1, 8])
@pytest.mark.parametrize("worker_cls", WORKERS, ids=lambda c: c.__name__)
def test_speculative_equals_greedy(worker_cls, batch_size, device):
    # batch 1: requests one after another; batch 8: 11 requests, so context and generation
    # requests share steps once the first ones finish.
    num_prompts = 3 if batch_size == 1 else 11
    engine = _check(worker_cls, device, batch_size, num_prompts, 20, SpecConfig(max_draft_len=3))
    if engine.draft_model is not None:  # the drafts share the target's layers: some are accepted
        assert engine.stats.accepted > 0
    assert engine.stats.drafted > 0


@pytest.mark.parametrize("max_draft_len", [1, 6])
@pytest.mark.parametrize("worker_cls", WORKERS, ids=lambda c: c.__name__)
def test_speculative_equals_greedy_for_other_draft_lengths(worker_cls, max_draft_len):
    _check(worker_cls, "cpu", 4, 5, 16, SpecConfig(max_draft_len=max_draft_len, draft_layers=2))


def test_float32_on_the_benchmark_shape_family():
    """float32 too (the benchmark's dtype), on a small bench-like model."""
    target = build_model("test")
    prompts = _prompts(4, seed=7)
    worker = EagleWorker(SpecConfig(max_draft_len=4))
    engine = Engine(target, worker, worker.make_draft_model(target), max_batch_size=4)
    assert engine.generate(prompts, 24) == greedy_generate(target, prompts, 24)


@pytest.mark.gpu
@pytest.mark.parametrize("worker_cls", WORKERS, ids=lambda c: c.__name__)
def test_conformance_scenarios_on_cuda(worker_cls):
    """The conformance checks (success + every fault case) with the metadata on the GPU."""
    scenario = conf.Scenario(device="cuda")
    assert conf.check_success(worker_cls, scenario) == []
    reference = conf.clean_run(worker_cls, scenario)
    for case in conf.fault_cases(worker_cls, scenario):
        assert conf.check_failure(worker_cls, case, scenario, reference=reference) == [], case
