from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.export.formats import ExportFormat
from app.kit.schemas import OutputSchema

FROZEN_EXPORTS = (
    "While the challenge's public boards are frozen (from its `freeze_at` until its close): "
    "when they froze; null otherwise. Exports are the admins' view: their boards are the live "
    "ones, with results hidden from others until the close."
)


class ColumnRead(OutputSchema):
    name: str
    description: str


class ExportRead(OutputSchema):
    name: str
    title: str
    description: str
    formats: dict[ExportFormat, str]
    columns: list[ColumnRead]


class ExportList(OutputSchema):
    items: list[ExportRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int
    frozen_at: datetime | None = Field(default=None, description=FROZEN_EXPORTS)
