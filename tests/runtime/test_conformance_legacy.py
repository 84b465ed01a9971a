"""Legacy (pre-contract) workers against conforming ones, with the guard switched off.

The legacy tree lives in tests/fixtures/legacy_workers (see its README). Its workers define
`forward` themselves, so nothing cleans up after a failing forward: a tolerated failure leaks the
saved spec-dec state and the next forward fails. The conformance suite must see that, and the
conforming workers must pass the very same scenarios.
"""

# mypy: disable-error-code="no-untyped-call"

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
import torch

from runtime import conformance as conf
from runtime.engine import Engine, EngineError, greedy_generate
from runtime.faults import FaultInjector
from runtime.model import build_model
from runtime.speculative.dynamic_tree import DynamicTreeWorker
from runtime.speculative.eagle import EagleWorker
from runtime.speculative.interface import SpecConfig, contract_guard_disabled, guard_message
from runtime.speculative.mtp import MTPWorker
from runtime.speculative.ngram import NGramWorker
from runtime.speculative.pard import PardWorker

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_workers"


@pytest.fixture(scope="module")
def legacy():
    if str(FIXTURE) not in sys.path:
        sys.path.insert(0, str(FIXTURE))
    with contract_guard_disabled():
        import legacy_spec  # type: ignore[import-not-found]
    return legacy_spec


def _pairs(legacy):
    return {
        "mtp": (legacy.MTPWorker, MTPWorker, "draft_model", 2),
        "eagle": (legacy.Eagle3OneModelWorker, EagleWorker, "eagle.draft_step", 1),
        "pard": (legacy.PARDWorker, PardWorker, "pard.rewind", 1),
        "tree": (
            legacy.MTPEagleDynamicTreeWorker,
            DynamicTreeWorker,
            "dynamic_tree.draft_level",
            1,
        ),
    }


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("module", ["mtp", "eagle", "pard", "dynamic_tree", "ngram"])
def test_legacy_modules_break_import_under_the_guard(module):
    with pytest.raises(TypeError) as info:
        _load(FIXTURE / "legacy_spec" / f"{module}.py", f"_guarded_legacy_{module}")
    assert str(info.value) == guard_message(str(info.value).split(" must")[0])


def test_legacy_test_double_cannot_be_instantiated():
    module = _load(FIXTURE / "tests" / "test_worker_double.py", "_legacy_worker_double")
    with pytest.raises(TypeError, match="Can't instantiate abstract class _Worker") as info:
        module.test_base_forward_restores_leaked_spec_dec_state()
    assert "_forward_impl" in str(info.value)


def test_suite_discovers_every_legacy_worker_and_flags_the_guard(legacy):
    workers = conf.discover_workers("legacy_spec", paths=(str(FIXTURE),), guard=False)
    assert {w.__name__ for w in workers} == {
        "MTPWorker",
        "Eagle3OneModelWorker",
        "PARDWorker",
        "MTPEagleDynamicTreeWorker",
        "NGramWorker",
    }
    for worker in workers:
        assert conf.check_guard(worker) == [guard_message(worker.__name__)]
        assert conf.check_instantiable(worker) == []  # guard off: the pre-contract base


@pytest.mark.parametrize("name", ["mtp", "eagle", "pard", "tree"])
def test_suite_detects_the_leak_and_passes_the_conforming_worker(legacy, name):
    legacy_cls, conforming_cls, point, call = _pairs(legacy)[name]
    case = conf.FaultCase(step=1, point=point, call=call)
    problems = conf.check_failure(legacy_cls, case)
    assert any("changed AttentionMetadata" in p for p in problems), problems
    assert conf.check_failure(conforming_cls, case) == []


@pytest.mark.parametrize("name", ["mtp", "eagle", "tree"])
def test_tolerated_failure_leaks_state_and_the_next_forward_fails(legacy, name):
    legacy_cls, _, point, call = _pairs(legacy)[name]
    problems = conf.check_failure(legacy_cls, conf.FaultCase(step=1, point=point, call=call))
    assert any("left spec-dec state saved" in p for p in problems), problems
    assert any(p.startswith("the next forward after") for p in problems), problems


@pytest.mark.parametrize("name", ["mtp", "eagle", "pard", "tree"])
def test_warmup_failure_poisons_serving_only_for_the_legacy_worker(legacy, name):
    legacy_cls, conforming_cls, _, _ = _pairs(legacy)[name]
    target = build_model("test", dtype=torch.float64)
    prompts = [[5, 4, 3, 2, 1], [9, 9, 8, 1, 2, 3, 4, 7, 7]]
    expected = greedy_generate(target, prompts, 10)
    for cls in (legacy_cls, conforming_cls):
        worker = cls(SpecConfig(max_draft_len=3))
        engine = Engine(target, worker, worker.make_draft_model(target), max_batch_size=2)
        assert engine.draft_model is not None
        with FaultInjector("draft_model", at_call=1) as faults:  # the "OOM" in warm-up
            faults.attach(engine.draft_model, "draft_model")
            assert not engine.warmup()
        if cls is legacy_cls:
            with pytest.raises(EngineError):
                engine.generate(prompts, 10)
        else:
            assert engine.generate(prompts, 10) == expected


def test_legacy_ngram_only_breaks_the_guard(legacy):
    case = conf.FaultCase(step=1, point="ngram.lookup", call=1)
    assert conf.check_failure(legacy.NGramWorker, case) == []
    assert conf.check_failure(NGramWorker, case) == []


def test_rename_alone_fixes_all_but_the_dynamic_tree_worker(tmp_path):
    """What `repairbot fix` must do beyond renaming: the tree worker's locals leak on failure."""
    package = tmp_path / "renamed_spec"
    shutil.copytree(FIXTURE / "legacy_spec", package)
    for path in package.glob("*.py"):
        path.write_text(path.read_text().replace("    def forward(", "    def _forward_impl("))
    workers = {w.__name__: w for w in conf.discover_workers("renamed_spec", paths=(str(tmp_path),))}
    assert len(workers) == 5
    for name, point in [("MTPWorker", "mtp.draft_step"), ("PARDWorker", "pard.rewind")]:
        assert conf.check_guard(workers[name]) == []
        assert conf.check_failure(workers[name], conf.FaultCase(1, point, 1)) == []
    tree = workers["MTPEagleDynamicTreeWorker"]
    problems = conf.check_failure(tree, conf.FaultCase(1, "dynamic_tree.draft_level", 1))
    assert any("force_prepare_spec_dec_tree_mask" in p for p in problems), problems
