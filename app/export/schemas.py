from __future__ import annotations

from app.export.formats import ExportFormat
from app.schemas import OutputSchema


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
