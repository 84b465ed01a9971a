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
# Connection exceptions (08), shutting down or starting (57P01-57P03), too many connections
# (53300), a deadlock or a serialization failure (40P01, 40001): each passes if waited out.
OUTAGE_SQLSTATES = ("08", "57P01", "57P02", "57P03", "53300", "40P01", "40001")


def database_unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` says the database server cannot be reached (down, restarting, the
    connection dropped, no pooled connection in time): worth waiting out, however long.

    SQLite's OperationalErrors are not: a missing table is one too, and would never pass.
    """
    if isinstance(exc, InterfaceError | PoolTimeoutError):
        return True
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    if not isinstance(exc, OperationalError) or not type(exc.orig).__module__.startswith("psycopg"):
        return False
    # A refused, failed or lost connection has no SQLSTATE; a server shutting down, starting or
    # out of connections says so by class. A full disk, a statement over a limit or a cancelled
    # statement is an OperationalError too, but would fail the same way forever.
    sqlstate = getattr(exc.orig, "sqlstate", None)
    return sqlstate is None or sqlstate.startswith(OUTAGE_SQLSTATES)
