"""Charts as plain geometry for server-rendered SVG: no JavaScript, no inline styles.

Each builder returns a :class:`Chart` of rectangles and text labels in a fixed view box; the
template draws them with CSS classes, and every bar carries a ``<title>`` for a tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

from bot.dashboard.formatting import duration_text

WIDTH, HEIGHT = 360, 150
PLOT_TOP, PLOT_BOTTOM, PLOT_LEFT = 14, 122, 26
TIME_BUCKETS: tuple[tuple[float, str], ...] = (  # upper bound in seconds, label (en dashes)
    (10, "<10s"),
    (30, "10\u201330s"),
    (60, "30s\u20131m"),
    (300, "1\u20135m"),
    (1800, "5\u201330m"),
    (7200, "30m\u20132h"),
    (float("inf"), ">2h"),
)


@dataclass(frozen=True)
class Bar:
    """A rectangle with a CSS class and a tooltip."""

    x: float
    y: float
    width: float
    height: float
    css: str
    tip: str


@dataclass(frozen=True)
class Label:
    """A text label; ``anchor`` is ``start``, ``middle`` or ``end``."""

    x: float
    y: float
    text: str
    anchor: str = "middle"
    css: str = "axis"


@dataclass
class Chart:
    """A chart to draw, plus the sentence that describes it for screen readers."""

    title: str
    summary: str
    bars: list[Bar] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def empty(self) -> bool:
        """Whether there is nothing to draw."""
        return not self.bars


def _scale(peak: int) -> float:
    return (PLOT_BOTTOM - PLOT_TOP) / peak if peak else 0.0


def fixes_per_day(
    days: Sequence[date], counts: dict[tuple[date, str], int], states: Sequence[str]
) -> Chart:
    """Stacked bars: fix PRs opened per day, one colour per state."""
    totals = [sum(counts.get((day, state), 0) for state in states) for day in days]
    chart = Chart(
        title="Fix PRs per day",
        summary=f"{sum(totals)} fix PRs opened in the last {len(days)} days",
        legend=[(f"s-{state}", state) for state in states],
    )
    peak, unit = max(totals, default=0), _scale(max(totals, default=0))
    slot = (WIDTH - PLOT_LEFT) / max(1, len(days))
    for index, day in enumerate(days):
        x, bottom = PLOT_LEFT + index * slot + 2, float(PLOT_BOTTOM)
        for state in states:
            count = counts.get((day, state), 0)
            if count:
                height = count * unit
                bottom -= height
                tip = f"{day.isoformat()}: {count} {state}"
                chart.bars.append(Bar(x, bottom, slot - 4, height, f"s-{state}", tip))
        if index % 2 == len(days) % 2 or len(days) <= 7:
            chart.labels.append(Label(x + (slot - 4) / 2, HEIGHT - 14, day.strftime("%d %b")))
    chart.labels += [
        Label(PLOT_LEFT - 4, PLOT_TOP + 4, str(peak), "end"),
        Label(PLOT_LEFT - 4, PLOT_BOTTOM, "0", "end"),
    ]
    return chart


def verdict_split(verdicts: dict[str, int], order: Sequence[str]) -> Chart:
    """One horizontal bar split by verdict: the verification pass rate at a glance."""
    total = sum(verdicts.values())
    passed = verdicts.get("fixed", 0)
    rate = f"{100 * passed / total:.0f}%" if total else "no verdicts yet"
    chart = Chart(
        title="Verification pass rate",
        summary=f"{passed} of {total} verifications fixed the failure ({rate})",
        legend=[(f"v-{verdict}", verdict.replace("_", " ")) for verdict in order],
    )
    if not total:
        return chart
    chart.labels.append(Label(WIDTH / 2, 52, rate, "middle", "big"))
    x, usable = 8.0, WIDTH - 16
    for verdict in order:
        count = verdicts.get(verdict, 0)
        if count:
            width = usable * count / total
            tip = f"{verdict.replace('_', ' ')}: {count} ({100 * count / total:.0f}%)"
            chart.bars.append(Bar(x, 72, width, 34, f"v-{verdict}", tip))
            x += width
    chart.labels.append(Label(8, 124, f"{total} verdicts", "start"))
    return chart


def time_to_pr(seconds: Sequence[float]) -> Chart:
    """Histogram of failure → PR times."""
    counts = [0] * len(TIME_BUCKETS)
    for value in seconds:
        counts[next(i for i, (limit, _) in enumerate(TIME_BUCKETS) if value < limit)] += 1
    ordered = sorted(seconds)
    middle = duration_text(ordered[len(ordered) // 2]) if ordered else "—"
    chart = Chart(
        title="Time to PR",
        summary=f"failure → PR for the last {len(seconds)} fixes, median {middle}",
    )
    if not seconds:
        return chart
    peak, unit = max(counts), _scale(max(counts))
    slot = (WIDTH - PLOT_LEFT) / len(TIME_BUCKETS)
    for index, ((_, name), count) in enumerate(zip(TIME_BUCKETS, counts, strict=True)):
        x = PLOT_LEFT + index * slot + 3
        if count:
            height = count * unit
            chart.bars.append(
                Bar(x, PLOT_BOTTOM - height, slot - 6, height, "t-bar", f"{name}: {count} fixes")
            )
        chart.labels.append(Label(x + (slot - 6) / 2, HEIGHT - 14, name))
    chart.labels += [
        Label(PLOT_LEFT - 4, PLOT_TOP + 4, str(peak), "end"),
        Label(PLOT_LEFT - 4, PLOT_BOTTOM, "0", "end"),
    ]
    return chart
