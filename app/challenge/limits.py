"""What a challenge's limits leave a participant, and the refusal when nothing is left: one
rule for every kind's submissions (attempts, red-blue defenses and attacks)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.challenge.config import LimitsConfig
from app.kit.error_codes import DAILY_LIMIT_REACHED, TOTAL_LIMIT_REACHED
from app.kit.errors import Conflict, TooManyRequests


@dataclass(frozen=True)
class Left:
    """What a participant may still submit: in all and today (None: no such limit), and when
    the day's count starts again (00:00 UTC)."""

    total: int | None
    today: int | None
    resets_at: datetime


def left_under(
    limits: LimitsConfig, count: Callable[[datetime | None], int], now: datetime
) -> Left:
    """`count(since)`: the participant's submissions that count, since a time or in all."""
    day_start = now.replace(hour=0, minute=0, second=0, microsecond=0)
    total = today = None
    if limits.max_attempts_total is not None:
        total = max(0, limits.max_attempts_total - count(None))
    if limits.max_attempts_per_day is not None:
        today = max(0, limits.max_attempts_per_day - count(day_start))
    return Left(total, today, day_start + timedelta(days=1))


def refuse_when_none_left(
    left: Left, limits: LimitsConfig, noun: str, plural: str, now: datetime
) -> None:
    """409 when the total is spent; 429 with `Retry-After` (until midnight UTC) when the
    day's is."""
    if left.total == 0:
        raise Conflict(
            f"{noun} limit reached: this challenge allows {limits.max_attempts_total} {plural} "
            "per participant",
            code=TOTAL_LIMIT_REACHED,
        )
    if left.today == 0:
        reset = left.resets_at
        raise TooManyRequests(
            f"daily {noun} limit reached: {limits.max_attempts_per_day} {plural} per "
            f"participant per day; it resets at {reset:%Y-%m-%d %H:%M} UTC",
            code=DAILY_LIMIT_REACHED,
            # Whole seconds, rounded up: a client that waits this long is past midnight.
            headers={"Retry-After": str(math.ceil((reset - now).total_seconds()))},
        )
