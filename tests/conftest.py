"""Shared fixtures: settings on a temporary data dir, real SQLite and PostgreSQL databases."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

PG_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
SECRET = "webhook-secret-for-tests-0123456789"
CI_TOKEN = "ci-token-for-tests-0123456789"


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, dropped afterwards."""
    from sqlalchemy import create_engine, text

    name = f"repairbot_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    finally:
        from bot.db.session import engine_for

        engine_for.cache_clear()
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def make_settings(data_dir: Path, **overrides: object):
    """Test settings: real secrets, everything under ``data_dir``."""
    from bot.config import Settings

    values: dict[str, object] = {
        "environment": "test",
        "data_dir": data_dir,
        "github_webhook_secret": SECRET,
        "ci_token": CI_TOKEN,
        "stale_after_s": 1.0,
        "reconcile_interval_s": 0.5,
        # Required outside development; tests build their target repositories beside data_dir.
        "repository_roots": [data_dir.parent],
        # No import check started ahead (each would import torch in the background for a repair
        # that is not coming); tests/bot/pipeline/repair/test_import_spare.py turns them on.
        "import_spares": 0,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request: pytest.FixtureRequest, tmp_path: Path):
    """Settings on SQLite and on PostgreSQL (each test runs on both), migrated."""
    from bot.db.migrate import upgrade

    overrides: dict[str, object] = {}
    if request.param == "postgresql":
        base = request.getfixturevalue("postgres_url")
        overrides["database_url"] = base
    built = make_settings(tmp_path / "data", **overrides)
    upgrade(built.resolved_database_url)
    if request.param == "postgresql":
        _truncate(built.resolved_database_url)
    yield built
    # Each SQLite test has its own URL, so its engine (cached per URL) would keep its pooled
    # connections, three descriptors each, for the whole session.
    from bot.db.session import engine_for

    engine_for(built.resolved_database_url).dispose()


@pytest.fixture
def task_settings() -> Iterator[Callable[[Any], Any]]:
    """``task_settings(settings)``: the tasks this test runs read ``settings``, as a worker's would.

    Injects them like a process that builds a worker (``bot.queue.celery_app.configure_tasks``)
    and returns them; calling it again replaces them. Afterwards tasks read the environment's.
    """
    from bot.queue.celery_app import configure_tasks, unconfigure_tasks

    def inject(settings: Any) -> Any:
        configure_tasks(settings)
        return settings

    yield inject
    unconfigure_tasks()


def _truncate(url: str) -> None:
    from sqlalchemy import text

    from bot.db.schema import METADATA
    from bot.db.session import engine_for

    tables = ", ".join(table.name for table in METADATA.sorted_tables)
    with engine_for(url).begin() as connection:
        connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


def drop_all_tables(url: str) -> None:
    """An empty PostgreSQL database again: every table and the migration stamp dropped."""
    from sqlalchemy import create_engine, text

    from bot.db.schema import METADATA

    # The search table migration 0015 makes on PostgreSQL is outside the models (env.UNMODELLED).
    made_by_migrations = ["fixes_search", "alembic_version"]
    tables = ", ".join([table.name for table in METADATA.sorted_tables] + made_by_migrations)
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text(f"DROP TABLE IF EXISTS {tables} CASCADE"))
    engine.dispose()


# The Buildkite-API double, and settings pointing at it.
from tests.fakes.buildkite.deliveries import bk_settings  # noqa: E402, F401
from tests.fakes.buildkite.server import buildkite_api  # noqa: E402, F401

# The one GitHub-API double (a real HTTP server on 127.0.0.1), shared by every test.
from tests.fakes.github_api import github_api  # noqa: E402, F401

# The GitLab-API double, and settings pointing at it.
from tests.fakes.gitlab.deliveries import gl_settings  # noqa: E402, F401
from tests.fakes.gitlab.server import gitlab_api  # noqa: E402, F401


class PrivateRedis:
    """A redis-server of one test's own on a free port (``bench.soak.start_redis``): stopping it
    disturbs nobody else, unlike the machine's shared one on 6379."""

    def __init__(self) -> None:
        from bench.service import free_port

        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._process: Any = None

    def start(self) -> PrivateRedis:
        """Start it (again, on the same port) and wait until it answers."""
        from bench.soak import start_redis

        self._process = start_redis(self.port)
        return self

    def kill(self) -> None:
        """Stop it as a crash would (nothing is persisted: its messages are gone)."""
        if self._process is not None:
            self._process.kill()
            self._process.wait(timeout=30)
            self._process = None


@pytest.fixture
def private_redis() -> Iterator[PrivateRedis]:
    """A started :class:`PrivateRedis`, killed afterwards."""
    server = PrivateRedis().start()
    yield server
    server.kill()
