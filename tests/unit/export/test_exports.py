"""Exports without services: cells and lines of the two formats, the batches of a stream
(one session each, sized to their output), and every column documented."""

from __future__ import annotations

import csv
import io
import json
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.auth.subjects import TenantAdmin
from app.export.datasets import CORE_DATASETS
from app.export.formats import Column, ExportFormat, cell, csv_header, csv_rows, json_lines
from app.export.stream import (
    BATCH_BYTES,
    MIN_BATCH,
    Batch,
    Cursor,
    Dataset,
    ExportSource,
    next_limit,
    stream,
)
from app.kinds.red_blue.exports import RED_BLUE_DATASETS

ROOT = Path(__file__).resolve().parents[3]


class Row(BaseModel):
    id: int
    text: str | None = None
    nested: dict[str, Any] | None = None
    flag: bool | None = None
    ratio: float | None = None


COLUMNS = (
    Column("id", "the id"),
    Column("text", "a text"),
    Column("inner", "a nested value", ("nested", "inner")),
    Column("nested", "the whole object"),
    Column("flag", "a flag"),
    Column("ratio", "a number"),
)


def _parse_csv(data: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(data.decode(), newline="")))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, ""),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (-3, "-3"),
        (0.1, "0.1"),
        (1e300, "1e+300"),
        (math.nan, ""),
        (math.inf, ""),
        ("", ""),
        ("plain", "plain"),
        ("ünïcode 思考 🙂", "ünïcode 思考 🙂"),
        ("line one\nline two", "line one\nline two"),
        ({"b": [1, "x"], "a": None}, '{"b":[1,"x"],"a":null}'),
        ([], "[]"),
        ({"k": "é"}, '{"k":"é"}'),
    ],
)
def test_a_cell_is_the_json_text_of_its_value(value: Any, text: str) -> None:
    assert cell(value) == text


@pytest.mark.parametrize(
    "hostile", ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", "\tx", "\r=1"]
)
def test_text_a_spreadsheet_would_run_as_a_formula_is_kept_as_text(hostile: str) -> None:
    assert cell(hostile) == "'" + hostile
    # Numbers stay numbers: a negative score is not text.
    assert cell(-1.5) == "-1.5"


def test_csv_rows_read_back_as_the_records_columns() -> None:
    records = [
        Row(id=1, text='quote " comma , and\r\nnewline', nested={"inner": 7}, flag=True),
        Row(id=2, text=None, nested=None, flag=None, ratio=2.5),
        Row(id=3, text="文字", nested={"inner": {"deep": [1]}}, flag=False),
    ]
    data = csv_header(COLUMNS) + csv_rows(records, COLUMNS)
    assert data.endswith(b"\r\n")
    rows = _parse_csv(data)
    assert rows[0] == ["id", "text", "inner", "nested", "flag", "ratio"]
    assert rows[1] == ["1", 'quote " comma , and\r\nnewline', "7", '{"inner":7}', "true", ""]
    assert rows[2] == ["2", "", "", "", "", "2.5"]
    assert rows[3] == ["3", "文字", '{"deep":[1]}', '{"inner":{"deep":[1]}}', "false", ""]


def test_a_missing_path_is_an_empty_cell() -> None:
    assert Column("x", "", ("nested", "inner", "deeper")).value({"nested": {"inner": 3}}) is None
    assert Column("x", "", ("nested", "inner")).value({"nested": None}) is None


def test_json_lines_are_the_records_as_the_api_serializes_them() -> None:
    records = [
        Row(id=1, text="a\nb\u2028c", nested={"inner": 1}),
        Row(id=2, text="😀", flag=True),
    ]
    data = json_lines(records, exclude=frozenset({"ratio"}))
    lines = data.split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3  # one line per record, newline-terminated
    for line, record in zip(lines, records, strict=False):
        assert json.loads(line) == record.model_dump(mode="json", exclude={"ratio"})
    assert json_lines([]) == b""


def test_formats_name_their_media_type_and_extension() -> None:
    assert ExportFormat("csv").media_type == "text/csv; charset=utf-8"
    assert ExportFormat("json").media_type == "application/x-ndjson"
    assert [f.extension for f in ExportFormat] == ["csv", "jsonl"]


# Streams ------------------------------------------------------------------------------------


class FakeSessions:
    """Counts the sessions a stream opens, and whether each was closed before the next."""

    def __init__(self) -> None:
        self.opened = 0
        self.open_now = 0

    def __call__(self) -> Any:
        sessions = self

        class _Session:
            def __enter__(self) -> _Session:
                assert sessions.open_now == 0, "a session was still open"
                sessions.opened += 1
                sessions.open_now += 1
                return self

            def __exit__(self, *_: object) -> None:
                sessions.open_now -= 1

        return _Session()


def _dataset(rows: list[Row], limits: list[int], **options: Any) -> Dataset:
    def read(session: Session, source: ExportSource, after: Cursor | None, limit: int) -> Batch:
        limits.append(limit)
        start = 0 if after is None else after[0]
        page = rows[start : start + limit]
        return Batch(page, (start + len(page),) if page else None)

    return Dataset(name="rows", title="Rows", description="", columns=COLUMNS, read=read, **options)


SOURCE = ExportSource(TenantAdmin(uuid.uuid4(), uuid.uuid4()), uuid.uuid4())


def _run(dataset: Dataset, output: ExportFormat, sessions: FakeSessions) -> list[bytes]:
    chunks: Iterator[bytes] = stream(dataset, SOURCE, output, sessions)  # type: ignore[arg-type]
    return list(chunks)


def test_a_stream_reads_every_row_once_a_batch_per_session() -> None:
    rows = [Row(id=i, text=f"row {i}") for i in range(2_345)]
    limits: list[int] = []
    sessions = FakeSessions()
    chunks = _run(
        _dataset(rows, limits, first_batch=100, max_batch=1000), ExportFormat.JSON, sessions
    )
    read = [json.loads(line)["id"] for chunk in chunks for line in chunk.splitlines()]
    assert read == list(range(2_345))
    assert limits[0] == 100 and max(limits) == 1000
    assert sessions.opened == len(limits) == len(chunks)
    assert sessions.open_now == 0


def test_a_csv_stream_starts_with_its_header_even_when_empty() -> None:
    sessions = FakeSessions()
    chunks = _run(_dataset([], []), ExportFormat.CSV, sessions)
    assert chunks == [csv_header(COLUMNS)]
    assert _run(_dataset([], []), ExportFormat.JSON, sessions) == []


def test_a_stream_ending_on_a_full_batch_asks_once_more_and_stops() -> None:
    rows = [Row(id=i) for i in range(200)]
    limits: list[int] = []
    chunks = _run(
        _dataset(rows, limits, first_batch=100, max_batch=100), ExportFormat.CSV, FakeSessions()
    )
    assert limits == [100, 100, 100]
    assert len(_parse_csv(b"".join(chunks))) == 201


def test_batches_of_long_rows_get_smaller_and_of_short_rows_larger() -> None:
    dataset = _dataset([], [], first_batch=100, max_batch=1000)
    assert next_limit(dataset, rows=100, size=100 * 1_000_000) == MIN_BATCH
    assert next_limit(dataset, rows=100, size=100 * 50) == 1000
    assert next_limit(dataset, rows=100, size=100 * 10_000) == BATCH_BYTES // 10_000
    assert next_limit(dataset, rows=0, size=0) == 1000


def test_huge_rows_are_read_a_few_at_a_time() -> None:
    rows = [Row(id=i, text="x" * 1_000_000) for i in range(40)]
    limits: list[int] = []
    _run(_dataset(rows, limits, first_batch=10), ExportFormat.CSV, FakeSessions())
    assert limits[0] == 10 and all(limit == MIN_BATCH for limit in limits[1:])


# Documentation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dataset",
    [*CORE_DATASETS, *RED_BLUE_DATASETS],
    ids=lambda d: d.name,
)
def test_every_exported_column_is_documented(dataset: Dataset) -> None:
    docs = (ROOT / "docs" / "exports.md").read_text()
    assert f"`{dataset.name}`" in docs
    names = [column.name for column in dataset.columns]
    assert len(set(names)) == len(names)
    for column in dataset.columns:
        assert column.description
        assert f"`{column.name}`" in docs, f"{dataset.name}.{column.name} is not in docs/exports.md"
