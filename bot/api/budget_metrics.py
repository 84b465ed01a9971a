"""``/metrics``' budget figures: every budget the bot keeps against abuse, and how much of each
is in use, computed from the database so every replica reports the same."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from bot.config import Settings
from bot.db.models import CommandInvocation, utcnow
from bot.db.records.github_writes import GitHubWrite

HOUR = timedelta(hours=1)


class BudgetCollector(Collector):
    """The budgets (settings) and their use: command answers, GitHub writes and their slots."""

    def __init__(self, session: Session, settings: Settings) -> None:
        self._session = session
        self._settings = settings

    def collect(self) -> Iterator[Metric]:
        """Yield the metric families for one scrape."""
        yield self._budgets()
        yield self._answers()
        yield self._writes()

    def _budgets(self) -> Metric:
        s = self._settings
        budgets = GaugeMetricFamily(
            "repairbot_budget", "Each budget the bot keeps, as configured", labels=["budget"]
        )
        for name, value in (
            ("github_writes_per_minute", s.github_writes_per_minute),
            ("reply_stranger_per_pr_hour", s.reply_budget_stranger_per_pr_hour),
            ("reply_per_author_hour", s.reply_budget_per_author_hour),
            ("reply_per_pr_hour", s.reply_budget_per_pr_hour),
            ("reply_per_repository_hour", s.reply_budget_per_repository_hour),
            ("bot_events_per_pr_hour", s.bot_event_budget_per_pr_hour),
            ("contract_check_write_files", s.contract_check_max_write_files),
            ("contract_check_write_bytes", s.contract_check_max_write_bytes),
        ):
            budgets.add_metric([name], float(value))
        return budgets

    def _answers(self) -> Metric:
        answers = GaugeMetricFamily(
            "repairbot_command_answers_last_hour",
            "Command comments of the last hour: answered on GitHub, or withheld by a reply budget",
            labels=["state"],
        )
        since = utcnow() - HOUR
        state = case(
            (CommandInvocation.answered.is_(True), "answered"),
            (CommandInvocation.withheld.is_not(None), "withheld"),
            else_="none",
        )
        counted = self._session.execute(
            select(state, func.count(CommandInvocation.id))
            .where(CommandInvocation.created_at >= since)
            .group_by(state)
        ).all()
        found: dict[str, int] = {str(name): int(n) for name, n in counted}
        for name in ("answered", "withheld", "none"):
            answers.add_metric([name], float(found.get(name, 0)))
        return answers

    def _writes(self) -> Metric:
        writes = GaugeMetricFamily(
            "repairbot_github_writes",
            "GitHub writes: deferred and not sent yet, refused by GitHub, slots of the last minute",
            labels=["state"],
        )
        pending = GitHubWrite.request.is_not(None) & GitHubWrite.remote_id.is_(None)
        minute = utcnow() - timedelta(minutes=1)
        row = self._session.execute(
            select(
                func.count(case((pending & GitHubWrite.error.is_(None), 1))),
                func.count(case((GitHubWrite.error.is_not(None), 1))),
                func.count(case((GitHubWrite.slot_at >= minute, 1))),
            )
        ).one()
        for name, value in zip(("pending", "refused", "slots_last_minute"), row, strict=True):
            writes.add_metric([name], float(value or 0))
        return writes
