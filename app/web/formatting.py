"""How the pages write numbers, durations, shares (app.kit.figures, shared with the scoring
strategies' columns), dates and costs (also Jinja filters), and the coercions that read figures
from stored documents without trusting their types."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

from app.kit.figures import format_duration as format_duration
from app.kit.figures import format_number as format_number
from app.kit.figures import format_percent as format_percent


def format_when(value: datetime | None) -> str:
    return "—" if value is None else f"{value:%Y-%m-%d %H:%M} UTC"


def format_until(value: datetime, now: datetime | None = None) -> str:
    """How long until `value`, to two units ("in 2 days 3 h", "in 5 min 20 s"); "now" once
    it has passed. The page's script counts it down from there (app.js, `data-countdown`)."""
    left = int((value - (now or datetime.now(UTC))).total_seconds())
    if left <= 0:
        return "now"
    parts: list[str] = []
    for name, size in (("day", 86_400), ("h", 3_600), ("min", 60), ("s", 1)):
        count, left = divmod(left, size)
        if count or parts:
            parts.append(f"{count} {name}{'s' if name == 'day' and count != 1 else ''}")
        if len(parts) == 2:
            break
    return "in " + " ".join(part for part in parts if not part.startswith("0 "))


def format_cost(value: float | None) -> str:
    """US dollars; small amounts keep their significant digits ("$0.0042")."""
    if value is None or not math.isfinite(value):
        return "—"
    if value == 0:
        return "$0.00"
    if abs(value) < 0.01:
        return f"${value:.4f}"
    return f"${value:,.2f}"


def detail_text(value: Any) -> str:
    """A detail of a score or an option, as one line of text."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return format_number(value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return int(value)


def float_or_none(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def floats(values: Any) -> list[float]:
    if not isinstance(values, list):
        return []
    return [float_or_none(value) or 0.0 for value in values]
