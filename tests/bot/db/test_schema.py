"""``bot.db.schema`` lists every module of ``bot.db`` (and its packages) that defines a table: a new table module
left out of it would be missed by Alembic's comparison and by the tests that empty the database."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import bot.db
from bot.db.models import Base
from bot.db.schema import METADATA, TABLE_MODULES


def _modules_defining_tables() -> set[str]:
    found = set()
    for info in pkgutil.walk_packages(bot.db.__path__, "bot.db."):
        if ".migrations" in info.name:
            continue  # Alembic's environment runs a migration when imported
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == info.name and issubclass(value, Base) and value is not Base:
                found.add(info.name)
    return found


def test_every_table_module_is_listed() -> None:
    assert _modules_defining_tables() == {module.__name__ for module in TABLE_MODULES}


def test_the_metadata_holds_the_new_tables() -> None:
    assert {"pr_notices", "bot_events", "pr_opt_outs", "contract_checks", "github_writes"} <= set(
        METADATA.tables
    )
