"""The two formats of an export, and how a record becomes a CSV row or a JSON line.

A record is a view of the API (a pydantic model). Its JSON line is the model's own JSON, so
an export reads exactly as the API does. Its CSV row takes named columns of the model's
JSON form: a scalar as its JSON text (a string as it is, null as an empty cell, true and
false, numbers as JSON writes them), an object or a list as compact JSON. A text cell that a
spreadsheet would run as a formula gets a leading `'` (see `spreadsheet_safe`).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel


class ExportFormat(StrEnum):
    CSV = "csv"
    JSON = "json"

    @property
    def media_type(self) -> str:
        return "text/csv; charset=utf-8" if self is ExportFormat.CSV else "application/x-ndjson"

    @property
    def extension(self) -> str:
        return "csv" if self is ExportFormat.CSV else "jsonl"


@dataclass(frozen=True)
class Column:
    """A CSV column: its header, what it holds (docs/exports.md lists them), and where its
    value is in the record's JSON form (`path`, the header itself when empty)."""

    name: str
    description: str
    path: tuple[str, ...] = ()

    def value(self, record: dict[str, Any]) -> Any:
        found: Any = record
        for key in self.path or (self.name,):
            if not isinstance(found, dict):
                return None
            found = found.get(key)
        return found


# What a spreadsheet reads as the start of a formula (OWASP, "CSV injection"): tab and
# carriage return included, as some spreadsheets strip them before looking.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(text: str) -> str:
    """The text, with a `'` before it when a spreadsheet would run it as a formula:
    participants write prompts and attacks, and an admin opens the file."""
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def cell(value: Any) -> str:
    """The CSV text of a value of a record's JSON form."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return spreadsheet_safe(value)
    if isinstance(value, float) and not math.isfinite(value):
        return ""
    if isinstance(value, int | float):
        return json.dumps(value)
    return spreadsheet_safe(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _csv_text(rows: Iterable[Sequence[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)  # RFC 4180: quoted where needed, CRLF line ends
    writer.writerows(rows)
    return buffer.getvalue().encode()


def csv_header(columns: Sequence[Column]) -> bytes:
    return _csv_text([[column.name for column in columns]])


def csv_rows(records: Sequence[BaseModel], columns: Sequence[Column]) -> bytes:
    rows = []
    for record in records:
        data = record.model_dump(mode="json")
        rows.append([cell(column.value(data)) for column in columns])
    return _csv_text(rows)


def json_lines(records: Sequence[BaseModel], exclude: frozenset[str] = frozenset()) -> bytes:
    """One JSON object per line (JSON Lines), each the record as the API serializes it."""
    return b"".join(
        record.model_dump_json(exclude=set(exclude) or None).encode() + b"\n" for record in records
    )
