"""The one error type intake raises: its message says what is wrong and where."""

from __future__ import annotations

from pydantic import ValidationError


class IntakeError(ValueError):
    """Input that cannot be read as a CI failure report."""


def describe_validation_error(exc: ValidationError) -> str:
    """The first problem of a pydantic validation error, with its location, and the count."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "document"
    return f"{where}: {error['msg']} ({exc.error_count()} error(s) in all)"
