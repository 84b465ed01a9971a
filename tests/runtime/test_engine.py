# mypy: disable-error-code="no-untyped-call"
import pytest
import torch

from runtime.engine import Engine, EngineError, greedy_generate
from runtime.faults import FaultInjector
from runtime.model import build_model
from runtime.speculative.eagle import EagleWorker
from runtime.speculative.interface import SpecConfig

PROMPTS = [[3, 1, 4, 1, 5, 9, 2, 6], [2, 7, 1, 8], [1, 6, 1, 8, 0, 3, 3, 9, 8, 8, 7]]


@pytest.fixture(scope="module")
def target():
    return build_model("test", dtype=torch.float64)


def _engine(target, **kwargs):
    worker = EagleWorker(SpecConfig(max_draft_len=3))
    return Engine(target, worker, worker.make_draft_model(target), max_batch_size=2, **kwargs)


def test_tolerated_target_failure_is_retried_without_changing_tokens(target):
    engine = _engine(target, error_budget=1)
    with FaultInjector("engine.target_forward", at_call=3):
        out = engine.generate(PROMPTS, 12)
    assert out == greedy_generate(target, PROMPTS, 12)
    assert engine.stats.tolerated_failures == 1


def test_failure_beyond_the_error_budget_raises(target):
    engine = _engine(target, error_budget=0)
    with FaultInjector("eagle.draft_step", at_call=2), pytest.raises(EngineError) as info:
        engine.generate(PROMPTS, 12)
    assert "injected fault" in str(info.value.__cause__)


def test_warmup_succeeds_and_leaves_no_requests_behind(target):
    engine = _engine(target)
    assert engine.warmup()
    assert not engine.has_work() and engine.finished == {}
    assert not engine.spec_metadata.is_cuda_graph
    assert engine.generate(PROMPTS, 10) == greedy_generate(target, PROMPTS, 10)


def test_warmup_tolerates_a_failure(target):
    engine = _engine(target)
    with FaultInjector("draft_model", at_call=2) as faults:
        faults.attach(engine.draft_model, "draft_model")
        assert not engine.warmup()
    assert engine.generate(PROMPTS, 10) == greedy_generate(target, PROMPTS, 10)


@pytest.mark.parametrize(("prompt", "max_new"), [([], 4), ([1, 2], 0), ([1] * 250, 10)])
def test_add_request_rejects_bad_requests(target, prompt, max_new):
    with pytest.raises(ValueError):
        _engine(target).add_request(prompt, max_new)


def test_acceptance_statistics_are_consistent(target):
    engine = _engine(target)
    out = engine.generate(PROMPTS, 16)
    stats = engine.stats
    assert 0 < stats.accepted <= stats.drafted
    # every step emits at least one token per running request
    assert stats.steps <= sum(len(o) for o in out)
    assert 0.0 < stats.acceptance_rate <= 1.0
