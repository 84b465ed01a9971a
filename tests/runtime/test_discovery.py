"""Workers are discovered, never listed: a new module in `runtime/speculative/` is all it takes.

The fixture below adds a worker module to `runtime.speculative` for one test (its `__path__`
gains a temporary folder), the way a new `runtime/speculative/<name>.py` would: discovery, the
benchmark, the lossless test's parametrisation and the conformance suite all pick it up.
"""

# mypy: disable-error-code="no-untyped-call"

import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path

import pytest

import runtime.speculative
from runtime import conformance as conf
from runtime.discovery import DEFAULT_PACKAGE, discover_workers
from runtime.speculative.interface import SpecConfig, SpecWorkerBase

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
NEW_MODULE = f"{DEFAULT_PACKAGE}.skip_chain"

# A complete worker: chain drafting with the target truncated to its first block (layer skip),
# through the accept-then-draft step MTP and Eagle share.
NEW_WORKER = '''
"""Layer-skip chain drafting: a worker module added by the discovery test."""

from __future__ import annotations

import torch
from torch import nn

from runtime.attention import AttentionMetadata
from runtime.draft_models import LayerSkipDraft
from runtime.model import TinyLM
from runtime.resources import ResourceManager
from runtime.speculative.fused_head import fused_head_step
from runtime.speculative.interface import SpecMetadata, SpecOutput, SpecWorkerBase


class SkipChainWorker(SpecWorkerBase):
    """Chain drafting with the target's first `draft_layers` blocks."""

    @property
    def max_draft_len(self) -> int:
        return self.spec_config.max_draft_len

    def make_draft_model(self, target: TinyLM) -> nn.Module:
        return LayerSkipDraft(target, num_layers=self.spec_config.draft_layers)

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
        return fused_head_step(
            self, "skip_chain", input_ids, hidden_states, logits, attn_metadata,
            spec_metadata, draft_model, resource_manager,
        )
'''


def _load(path, name):
    """Execute a module file afresh under a private name (its module-level lists are rebuilt)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = list(sys.path)  # bench/runtime.py puts the checkout first on sys.path
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path[:] = saved
    return module


def _defined_workers():
    """Every SpecWorkerBase subclass that a module of runtime.speculative still defines."""
    found, stack = set(), [SpecWorkerBase]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            module = sys.modules.get(sub.__module__)
            if sub.__module__.startswith(f"{DEFAULT_PACKAGE}.") and (
                getattr(module, sub.__name__, None) is sub
            ):
                found.add(sub)
    return found


class _DefaultOptions:
    """What pytest's config answers for the conformance options when none is given."""

    def getoption(self, name):
        return {"--spec-package": DEFAULT_PACKAGE, "--spec-path": [], "--spec-no-guard": False}[
            name
        ]


@pytest.fixture
def new_worker(tmp_path, monkeypatch):
    """`runtime.speculative.skip_chain`, a worker module that exists during one test."""
    (tmp_path / "skip_chain.py").write_text(textwrap.dedent(NEW_WORKER))
    package = runtime.speculative
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    yield NEW_MODULE
    sys.modules.pop(NEW_MODULE, None)
    if hasattr(package, "skip_chain"):
        delattr(package, "skip_chain")


def test_discovery_finds_every_worker_the_package_defines():
    workers = discover_workers(DEFAULT_PACKAGE)
    assert len(workers) == len(set(workers)) >= 5
    assert set(workers) == _defined_workers()
    assert all(not inspect.isabstract(w) for w in workers)
    assert conf.discover_workers is discover_workers  # the suite's public name


def test_the_suites_and_the_benchmark_take_their_workers_from_discovery():
    workers = discover_workers(DEFAULT_PACKAGE)
    lossless = _load(HERE / "test_engine_lossless.py", "_discovery_lossless")
    assert workers == lossless.WORKERS
    suite = _load(HERE / "test_conformance.py", "_discovery_conformance")
    assert suite._discovery(_DefaultOptions())[1] == workers
    bench = _load(REPO / "bench" / "runtime.py", "_discovery_bench")
    assert list(bench.WORKERS.values()) == workers  # named after their modules, in order
    assert {w.__module__.rsplit(".", 1)[-1]: w for w in workers} == bench.WORKERS


def test_a_new_worker_module_is_discovered_benchmarked_and_checked(new_worker):
    workers = discover_workers(DEFAULT_PACKAGE)
    new = [w for w in workers if w.__module__ == new_worker]
    assert [w.__name__ for w in new] == ["SkipChainWorker"]
    (cls,) = new
    assert workers == _load(HERE / "test_engine_lossless.py", "_discovery_lossless_new").WORKERS
    assert _load(REPO / "bench" / "runtime.py", "_discovery_bench_new").WORKERS["skip_chain"] is cls

    # The conformance suite, as `python -m runtime.conformance runtime.speculative.skip_chain`.
    results = conf.run_suite(new_worker)
    assert {r.worker for r in results} == {f"{new_worker}.SkipChainWorker"}
    assert [r for r in results if not r.ok] == []
    checks = {r.check for r in results}
    assert {"guard", "instantiable", "success"} <= checks
    assert any(c.startswith("failure step1-skip_chain.draft_step") for c in checks), checks

    # The lossless check of test_engine_lossless.py, at two draft lengths.
    lossless = _load(HERE / "test_engine_lossless.py", "_discovery_lossless_check")
    for k in (1, 4):
        engine = lossless._check(cls, "cpu", 4, 5, 16, SpecConfig(max_draft_len=k))
        assert engine.stats.accepted > 0
