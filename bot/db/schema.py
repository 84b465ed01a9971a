"""Every table of the service, in one ``MetaData``: the models module's and those kept in modules
of their own (the models module is at its size budget). Whatever needs all tables at once —
Alembic's comparison, a test that empties or drops the database — reads ``METADATA`` here, so a
table cannot be missed because nothing had imported its module yet."""

from __future__ import annotations

from sqlalchemy import MetaData

from bot.db import models
from bot.db.records import (
    bot_events,
    contract_checks,
    delivery_waits,
    github_statuses,
    github_writes,
    opt_outs,
    pr_notices,
    tallies,
)

TABLE_MODULES = (
    models,
    bot_events,
    contract_checks,
    delivery_waits,
    github_statuses,
    github_writes,
    opt_outs,
    pr_notices,
    tallies,
)
METADATA: MetaData = models.Base.metadata
