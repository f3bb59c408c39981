"""Schema building blocks shared by every domain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Annotated, TypeVar

from fastapi import Query
from pydantic import AfterValidator, AwareDatetime, BaseModel, ConfigDict, StringConstraints

from app.evaluation.engine.model_ids import model_id_problem
from app.kit.config import get_settings
from app.kit.error_words import pattern_words

SLUG_PATTERN = pattern_words(
    r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$",
    "1 to 64 lowercase letters, digits and hyphens, starting and ending with a letter or digit",
)
Slug = Annotated[str, StringConstraints(pattern=SLUG_PATTERN, max_length=64)]
HANDLE_PATTERN = pattern_words(
    r"^[A-Za-z0-9_.-]{1,64}$", "1 to 64 letters, digits and the characters _ . -"
)
Handle = Annotated[
    str,
    StringConstraints(strip_whitespace=True, pattern=HANDLE_PATTERN, min_length=1, max_length=64),
]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


def _known_model_id(value: str) -> str:
    problem = model_id_problem(value, get_settings().outbound_policy().providers)
    if problem:
        raise ValueError(problem)
    return value.strip()


# A litellm model id, refused when saved if no worker could call it, or if it is of a provider
# the operator does not allow (see model_ids and app.outbound.providers).
ModelId = Annotated[str, StringConstraints(max_length=200), AfterValidator(_known_model_id)]


# Dates a caller gives: far enough either way for any schedule, near enough that converting
# them to UTC or comparing them can never overflow (0001-01-01T00:00-01:00 would).
EARLIEST_DATE = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_DATE = datetime(9999, 1, 1, tzinfo=UTC)


def _in_calendar(value: datetime) -> datetime:
    try:
        in_utc = value.astimezone(UTC)
    except OverflowError:
        in_utc = None
    if in_utc is None or not EARLIEST_DATE <= in_utc < LATEST_DATE:
        raise ValueError("must be from 1970-01-01 to 9998-12-31 (UTC)")
    return value


# A date and time with its offset, within EARLIEST_DATE and LATEST_DATE.
BoundedDatetime = Annotated[AwareDatetime, AfterValidator(_in_calendar)]


# Pagination of every list: `limit` items from `offset` on. Trials are small and an attempt has
# up to tasks times k of them, so their pages may be longer.
Limit = Annotated[int, Query(ge=1, le=200, description="Items per page.")]
TrialLimit = Annotated[int, Query(ge=1, le=500, description="Trials per page.")]
Offset = Annotated[int, Query(ge=0, le=10_000_000, description="Items to skip.")]

Item = TypeVar("Item")


def page_of(items: Sequence[Item], limit: int, offset: int) -> tuple[list[Item], int]:
    """A page of a list that is not in the database (a catalogue of what is installed), and
    its total, as `app.kit.db.page_where` answers for rows."""
    return list(items[offset : offset + limit]), len(items)


class InputSchema(BaseModel):
    """Request bodies refuse unknown fields, so a typo is an error rather than silently ignored,
    and numbers that are not finite (JSON has no NaN or Infinity; 1e400 overflows to it)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class OutputSchema(BaseModel):
    model_config = ConfigDict(from_attributes=True)
