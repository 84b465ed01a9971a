"""The dashboard's running totals: what every page header and ``/quality`` show, kept so that a
page reads a few hundred rows whatever the history holds.

Three tables:

- ``tallies``: one figure per ``(name, key, measure)``, a count and a sum of seconds (fix PRs
  per state, verifications per verdict, a signature's merged-unchanged PRs, one bucket of a
  duration histogram ...).
- ``tally_parts``: what each fix PR (kind ``f``) and each failure report (kind ``r``) adds to
  ``tallies`` as last counted, so a change to one row is counted again as a difference.
- ``tally_dirty``: the rows changed since they were last counted. Database triggers
  (migration 0014) mark them in the same transaction as the change, whatever code made it;
  ``bot.db.tally_fold`` counts them again (the reconciler durably, a page in memory). Every
  change adds a mark; a fold moves its rows' marks into the ``changes`` total, so all marks
  ever made, folded or not, are the data version the live refresh compares.

The figures are defined in ``bot.db.tally_parts``.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Float, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from bot.db.models import Base

FIX = "f"
REPORT = "r"


class Tally(Base):
    """One running total."""

    __tablename__ = "tallies"

    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    measure: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)


class TallyPart(Base):
    """What one fix PR or report adds to one total, as last counted."""

    __tablename__ = "tally_parts"

    kind: Mapped[str] = mapped_column(String(1), primary_key=True)
    owner_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(32), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    measure: Mapped[str] = mapped_column(String(255), primary_key=True)
    count: Mapped[int] = mapped_column(BigInteger, default=0)
    seconds: Mapped[float] = mapped_column(Float, default=0.0)


class TallyDirty(Base):
    """A fix PR or report changed since its parts were last counted (marked by triggers), and
    how many changes it had since (each adds one to the list's data version)."""

    __tablename__ = "tally_dirty"

    kind: Mapped[str] = mapped_column(String(1), primary_key=True)
    owner_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    marks: Mapped[int] = mapped_column(BigInteger, server_default="1")
