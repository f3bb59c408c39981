"""How figures are written for people: numbers, durations and shares. One writing for the
pages (their Jinja filters) and for what the scoring strategies show in their board column,
which the strategies declare below the web layer."""

from __future__ import annotations

import math


def format_duration(milliseconds: int | float | None) -> str:
    if milliseconds is None:
        return "—"
    if milliseconds < 1000:
        return f"{milliseconds:.0f} ms"
    seconds = milliseconds / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


def format_number(value: float | None) -> str:
    if value is None:
        return "—"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}"


def format_percent(value: float | None) -> str:
    """A share in [0, 1] as a percentage: "33.3%", "100%", "—" when unknown."""
    if value is None or not math.isfinite(value):
        return "—"
    shown = round(value * 100, 1)
    return f"{shown:g}%"
