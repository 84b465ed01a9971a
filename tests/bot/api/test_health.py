"""Readiness: the database, and how target code is confined on this host."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from bot.app import create_app
from bot.db.migrate import upgrade
from tests.conftest import make_settings


def test_readyz_says_whether_cgroups_bound_target_code_and_why_not(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "data")
    upgrade(settings.resolved_database_url)
    with TestClient(create_app(settings)) as client:
        ready = client.get("/readyz").json()
    assert ready["status"] == "ready" and ready["sandbox"] == "bubblewrap"
    assert ready["tree_limits"] == f"a cgroup per command under {settings.sandbox_cgroup_root}"
    plain = settings.model_copy(update={"sandbox_cgroup_root": tmp_path})  # no cgroup fs
    with TestClient(create_app(plain)) as client:
        ready = client.get("/readyz")
    assert ready.status_code == 200  # the API is ready; verifications say the same per run
    assert ready.json()["tree_limits"].startswith(
        f"per-process rlimits only: no cgroup filesystem at {tmp_path}"
    )
