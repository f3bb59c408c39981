"""The pass@t / seq@t curve chart: geometry for an inline SVG the templates draw.

No JavaScript and no chart library: Python places every point, tick and label in the SVG's own
coordinates (the `viewBox`), the template writes the elements, and the stylesheet colours them
(so dark mode and the series palette live in one place). Each series is one `<polyline>` with a
marker per point; the figure also gets a text description and a data table for screen readers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.kit.figures import format_percent as percent

# Drawn at most about this size (app.css caps it): in a narrow column or on a phone it
# shrinks, so the labels are set large enough to stay legible at two thirds of it.
WIDTH = 420
HEIGHT = 260
LEFT = 66
RIGHT = 14
TOP = 14
BOTTOM = 48
PALETTE_SIZE = 8  # .series-0 … .series-7 in app.css: distinct colours and dash patterns
Y_TICKS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class CurveInput:
    """One model's curve: values at t = 1..len(values), each a share in [0, 1]."""

    participant: str
    model: str
    values: Sequence[float | None]
    rank: int | None = None
    is_you: bool = False


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    t: int
    label: str  # the point's value, as the tooltip and table show it


@dataclass(frozen=True)
class Series:
    participant: str
    model: str
    rank: int | None
    is_you: bool
    palette: int
    points: str  # the polyline's `points` attribute
    markers: list[Marker]
    cells: list[str]  # t = 1..k, for the data table ("—" where the curve has no value)
    final: str  # the value at the curve's last t


@dataclass(frozen=True)
class CurveChart:
    element_id: str
    heading: str
    metric: str  # "pass@k" or "seq@k"
    metric_t: str  # "pass@t" or "seq@t"
    k: int
    width: int
    height: int
    plot_left: float
    plot_right: float
    plot_top: float
    plot_bottom: float
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    series: list[Series]
    description: str
    empty_text: str

    @property
    def t_values(self) -> list[int]:
        return list(range(1, self.k + 1))

    @property
    def ranked(self) -> bool:
        return any(item.rank is not None for item in self.series)

    def metric_at(self, t: int) -> str:
        return metric_name_at(self.metric, str(t))


def metric_name_at(metric: str, at: str) -> str:
    """ "pass@k" with `at` "t" → "pass@t"; "seq@k", "2" → "seq@2"."""
    prefix = "seq" if metric == "seq@k" else "pass"
    return f"{prefix}@{at}"


def _clean(value: float | None) -> float | None:
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return None
    return min(1.0, max(0.0, float(value)))


def _round(value: float) -> float:
    return round(value, 1)


def curve_chart(
    curves: Sequence[CurveInput],
    *,
    metric: str,
    k: int,
    element_id: str,
    heading: str,
    empty_text: str = "No ranked models yet: their curves appear here as attempts complete.",
) -> CurveChart:
    """The chart of up to PALETTE_SIZE curves on shared axes: t = 1..k (at least the longest
    curve) across, 0 to 100 % up."""
    longest = max((len(curve.values) for curve in curves), default=0)
    k = max(1, k, longest)
    plot_left, plot_right = float(LEFT), float(WIDTH - RIGHT)
    plot_top, plot_bottom = float(TOP), float(HEIGHT - BOTTOM)

    def x_of(t: int) -> float:
        if k == 1:
            return _round((plot_left + plot_right) / 2)
        return _round(plot_left + (t - 1) / (k - 1) * (plot_right - plot_left))

    def y_of(value: float) -> float:
        return _round(plot_bottom - value * (plot_bottom - plot_top))

    step = 1 if k <= 10 else 2
    x_ticks = [Tick(x_of(t), str(t)) for t in range(1, k + 1) if (t - 1) % step == 0 or t == k]
    y_ticks = [Tick(y_of(value), percent(value)) for value in Y_TICKS]
    metric_t = metric_name_at(metric, "t")
    series: list[Series] = []
    for position, curve in enumerate(curves[:PALETTE_SIZE]):
        values = [_clean(value) for value in curve.values]
        markers = [
            Marker(x_of(t), y_of(value), t, percent(value))
            for t, value in enumerate(values, start=1)
            if value is not None
        ]
        known = [value for value in values if value is not None]
        series.append(
            Series(
                participant=curve.participant,
                model=curve.model,
                rank=curve.rank,
                is_you=curve.is_you,
                palette=position,
                points=" ".join(f"{m.x:g},{m.y:g}" for m in markers),
                markers=markers,
                cells=[
                    percent(values[t - 1]) if t <= len(values) else "—" for t in range(1, k + 1)
                ],
                final=percent(known[-1]) if known else "—",
            )
        )
    return CurveChart(
        element_id=element_id,
        heading=heading,
        metric=metric,
        metric_t=metric_t,
        k=k,
        width=WIDTH,
        height=HEIGHT,
        plot_left=plot_left,
        plot_right=plot_right,
        plot_top=plot_top,
        plot_bottom=plot_bottom,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        series=series,
        description=_describe(series, metric_t, k),
        empty_text=empty_text,
    )


def _describe(series: Sequence[Series], metric_t: str, k: int) -> str:
    if not series:
        return f"No curves yet: {metric_t} for t = 1 to {k}."
    parts = []
    for item in series:
        first = item.markers[0].label if item.markers else "—"
        who = f"{item.participant} ({item.model})" if item.model else item.participant
        if item.rank is not None:
            who = f"#{item.rank} {who}"
        last_t = item.markers[-1].t if item.markers else k
        parts.append(f"{who}: {first} at t = 1, {item.final} at t = {last_t}")
    return f"{metric_t} for t = 1 to {k}, in percent. " + "; ".join(parts) + "."
