"""The chaos soak (bench/chaos.py) on CI's short schedule: two API replicas and three workers on a
PostgreSQL and a Redis of their own, traffic of every kind over both replicas, while a worker
is SIGKILLed mid-work, an API replica SIGKILLed mid-burst, Redis killed with nothing saved and
PostgreSQL crash-stopped. Afterwards every kind of effect, counted on the database and on the
GitHub double, is there exactly once and nothing is left unfinished.

The worker pause (SIGSTOP past the visibility timeout) is left to the ten-minute run: it alone
takes two minutes.
"""

from __future__ import annotations

import shutil

import pytest

from bench.chaos import run_chaos

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
FAULTS = ["kill-worker", "kill-api", "restart-redis", "restart-postgres"]


def test_every_effect_exactly_once_through_the_faults():
    result = run_chaos(minutes=2.5, repos=3, prs=2, faults=FAULTS)
    table = "\n".join(str(row) for row in result.rows)
    where = f"{table}\nfaults: {result.faults}\nlogs: {result.logs}"
    assert len(result.faults) == len(FAULTS), where
    # Every kind of traffic reached the service, so each count below was put to the test.
    assert all(row.expected > 0 for row in result.rows), where
    assert result.ledger.forged and not result.ledger.forged_accepted, where
    assert (result.lost, result.duplicated, result.unfinished) == (0, 0, 0), where
    shutil.rmtree(result.logs, ignore_errors=True)
