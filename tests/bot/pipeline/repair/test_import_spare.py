"""Spare import checks: started ahead on an empty folder, claimed by one attempt, never reused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.git import fresh_worktree, remove_worktree
from bot.pipeline.reconcile.cleanup import prune_stale_work
from bot.pipeline.repair.import_spare import SPARE_PREFIX, discard_spares, start_spares, take_spare
from bot.runner.workdirs import lease_path, leased
from fixers.evidence.import_check import check_imports
from fixers.sandbox import sandbox_problem
from fixers.sweep.outcome import FileChange
from tests.bot.runner.conftest import TinyRepo, tiny_repo  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(sandbox_problem() is not None, reason=str(sandbox_problem()))


@pytest.fixture
def spare_settings(settings) -> Iterator[object]:
    """Settings with one spare and no preload (no torch: these modules do not need it)."""
    yield settings.model_copy(update={"import_spares": 1, "import_preload": []})
    discard_spares()


def _change(path: str, module: str, after: str) -> FileChange:
    return FileChange(path, module, "", after, ["x"], ["A"])


def test_the_next_attempt_claims_the_spare_and_it_checks_that_worktree(
    spare_settings,
    tiny_repo: TinyRepo,  # noqa: F811
) -> None:
    start_spares(spare_settings)
    spare = take_spare(spare_settings)
    assert spare is not None
    slot = spare.slot
    assert slot.name.startswith(SPARE_PREFIX) and slot.is_dir() and not any(slot.iterdir())
    assert take_spare(spare_settings) is None  # one spare, taken
    worktree = spare_settings.worktrees_dir.resolve() / f"run-1-{spare.token}"
    with leased(worktree):
        server = spare.claim(worktree)
        assert server is not None and not slot.exists() and not lease_path(slot).exists()
        try:
            fresh_worktree(tiny_repo.path, worktree, tiny_repo.base)
            changes = [
                _change("calc/ops.py", "calc.ops", "def add(a, b):\n    return a + b\n"),
                _change("calc/extra.py", "calc.extra", "from calc import nothing_here\n"),
            ]
            answers = check_imports(worktree, changes, server=server, preload=[])
        finally:
            server.close()
            remove_worktree(tiny_repo.path, worktree)
    assert answers["calc/ops.py"] == ("ok", "")
    assert answers["calc/extra.py"][0] == "unverified"  # a name that calc does not have


def test_a_spare_made_for_other_settings_is_discarded(spare_settings) -> None:
    start_spares(spare_settings)
    other = spare_settings.model_copy(update={"import_preload": ["json"]})
    assert take_spare(other) is None
    assert not list(spare_settings.worktrees_dir.resolve().glob(f"{SPARE_PREFIX}*"))
    start_spares(other)
    spare = take_spare(other)
    assert spare is not None and spare.fits(other)
    spare.discard()
    assert not spare.server.alive() and not spare.slot.exists()


def test_spares_are_kept_to_the_configured_number(spare_settings) -> None:
    two = spare_settings.model_copy(update={"import_spares": 2})
    start_spares(two)
    start_spares(two)
    folders = list(two.worktrees_dir.resolve().glob(f"{SPARE_PREFIX}*"))
    assert len([f for f in folders if f.is_dir()]) == 2
    none = spare_settings.model_copy(update={"import_spares": 0})
    discard_spares()
    start_spares(none)
    assert take_spare(none) is None


def test_an_abandoned_spare_folder_is_pruned_and_a_live_one_kept(spare_settings) -> None:
    start_spares(spare_settings)
    root = spare_settings.worktrees_dir.resolve()
    live = [f for f in root.glob(f"{SPARE_PREFIX}*") if f.is_dir()]
    abandoned = root / f"{SPARE_PREFIX}deadbeef"  # its holder was killed: no lease is held
    abandoned.mkdir()
    pruned = prune_stale_work(spare_settings)
    assert pruned.work_dirs == [abandoned] and not abandoned.exists()
    assert len(live) == 1 and live[0].is_dir()


def test_a_repair_uses_the_spare_its_evidence_holds_and_the_next_one_waits(
    spare_settings, task_settings, tmp_path
) -> None:
    from fastapi.testclient import TestClient

    from bot.app import create_app
    from bot.cli.demo_target import build_target, run_tests
    from bot.pipeline.repair.task import repair
    from bot.pipeline.triage import triage
    from tests.bot.pipeline.repair.test_task_in_process import _post

    settings = task_settings(spare_settings.model_copy(update={"import_preload": ["torch"]}))
    repo = tmp_path / "target"
    head = build_target(repo)
    report_id = _post(settings, run_tests(repo).console, f"?repository={repo}&head_sha={head}")
    triage.run(report_id)
    start_spares(settings)
    (waiting,) = [
        f for f in settings.worktrees_dir.resolve().glob(f"{SPARE_PREFIX}*") if f.is_dir()
    ]
    with TestClient(create_app(settings)) as client:
        (run,) = client.get(f"/api/v1/reports/{report_id}").json()["runs"]
        repair.run(run["id"])
        (run,) = client.get(f"/api/v1/reports/{report_id}").json()["runs"]
        body = client.get(f"/api/v1/fixes/{run['fix_id']}").json()["body"]
    assert run["state"] == "pr_opened", run
    swept = next(t for t in run["transitions"] if t["to"] == "swept")
    assert "import evidence" in swept["reason"] and "worktree" in swept["reason"]
    evidence = [line for line in body.splitlines() if "imports in the sandbox" in line]
    assert evidence and all("imports in the sandbox: ok" in line for line in evidence), body
    assert not waiting.exists()  # claimed: it became the worktree, which is gone now
    (fresh,) = [f for f in settings.worktrees_dir.resolve().glob(f"{SPARE_PREFIX}*") if f.is_dir()]
    assert fresh != waiting  # the next attempt's, started by this one
