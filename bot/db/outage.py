"""Which database errors mean "the database is unavailable" rather than "this request is wrong".

One place decides it for the API (503 with Retry-After, ``bot.api.outage``) and for tasks
(retried until the database is back, ``bot.pipeline.task_base``).
"""

from __future__ import annotations

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

# The API answers 503 for these: SQLite's "database is locked" is an OperationalError as well,
# and waiting a few seconds is the right answer to it too.
API_UNAVAILABLE = (OperationalError, InterfaceError, PoolTimeoutError)


def database_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database server cannot be reached (down, restarting, the
    connection dropped, no pooled connection in time): worth waiting out, however long.

    SQLite's OperationalErrors are not: a missing table is one too, and would never pass.
    """
    if isinstance(exc, InterfaceError | PoolTimeoutError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    # psycopg raises OperationalError for a refused, failed or lost connection (its subclasses,
    # a deadlock or a cancelled statement, are transient as well).
    return isinstance(exc, OperationalError) and type(exc.orig).__module__.startswith("psycopg")
