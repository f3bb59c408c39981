"""Datasets and their streams: an export is read in batches, each in a session of its own.

A stream never holds a database connection between batches. Each batch is one trip to the
thread pool (Starlette iterates a synchronous body there, one `next` a trip) that opens a
session, reads up to `limit` rows after the last row sent (keyset paging: no OFFSET, so the
last batch costs what the first does), closes the session and encodes the rows. An export
of any size therefore takes a connection and a thread only while a batch is read, like any
other request (docs/capacity.md), however slowly its client downloads; memory holds one
batch. The price: each batch sees the database as it is when read, so rows changed while a
long export runs appear as they were at their batch (docs/exports.md says what that means
for each dataset).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel
from sqlalchemy.orm import Session

from app.auth.subjects import TenantKey
from app.export.formats import Column, ExportFormat, csv_header, csv_rows, json_lines

# Where a batch ends, in the dataset's order: the next batch starts after it.
Cursor = tuple[Any, ...]


@dataclass(frozen=True)
class ExportSource:
    """What is exported, for whom: the challenge, and the reader whose view the rows take."""

    reader: TenantKey
    challenge_id: uuid.UUID

    @property
    def tenant_id(self) -> uuid.UUID:
        return self.reader.tenant_id


@dataclass(frozen=True)
class Batch:
    """Up to `limit` records after a cursor, and the cursor of the last (None when empty)."""

    records: Sequence[BaseModel]
    last: Cursor | None


# Reads the batch after `after` (from the start when None), at most `limit` records.
BatchReader = Callable[[Session, ExportSource, Cursor | None, int], Batch]


class ChallengeReader(Protocol):
    """A domain's read of a batch: a challenge's records after a cursor, as a reader sees
    them, and the cursor of the last."""

    def __call__(
        self,
        session: Session,
        reader: TenantKey,
        challenge_id: uuid.UUID,
        *,
        after: Any,
        limit: int,
    ) -> tuple[Sequence[BaseModel], Cursor | None]: ...


def in_batches(read: ChallengeReader) -> BatchReader:
    """A domain's read as a dataset's."""

    def read_batch(
        session: Session, source: ExportSource, after: Cursor | None, limit: int
    ) -> Batch:
        records, last = read(session, source.reader, source.challenge_id, after=after, limit=limit)
        return Batch(records, last)

    return read_batch


@dataclass(frozen=True)
class Dataset:
    """One export of a challenge: its name in the URL, its CSV columns, how to read it.

    `exclude`: fields of the records left out of the JSON lines (an attempt's `trials`, which
    have a dataset of their own). `max_batch`: the most rows read at once; batches start at
    `first_batch` and are sized from then on to about `BATCH_BYTES` of output."""

    name: str
    title: str
    description: str
    columns: tuple[Column, ...]
    read: BatchReader
    exclude: frozenset[str] = frozenset()
    first_batch: int = 100
    max_batch: int = 1000


# About this much output per batch: large enough that a batch's query and session cost
# little per row, small enough that a batch of long texts stays a few megabytes.
BATCH_BYTES = 2_000_000
MIN_BATCH = 10


def next_limit(dataset: Dataset, rows: int, size: int) -> int:
    """The size of the next batch, from the bytes per row of the last one."""
    per_row = max(size // max(rows, 1), 1)
    return max(MIN_BATCH, min(dataset.max_batch, BATCH_BYTES // per_row))


def encode(dataset: Dataset, records: Sequence[BaseModel], format: ExportFormat) -> bytes:
    if format is ExportFormat.CSV:
        return csv_rows(records, dataset.columns)
    return json_lines(records, dataset.exclude)


def stream(
    dataset: Dataset,
    source: ExportSource,
    format: ExportFormat,
    sessions: Callable[[], Session],
) -> Iterator[bytes]:
    """The export's bytes, one chunk per batch (the CSV header first)."""
    if format is ExportFormat.CSV:
        yield csv_header(dataset.columns)
    after: Cursor | None = None
    limit = min(dataset.first_batch, dataset.max_batch)
    while True:
        with sessions() as session:
            batch = dataset.read(session, source, after, limit)
        chunk = encode(dataset, batch.records, format)
        if chunk:
            yield chunk
        if len(batch.records) < limit or batch.last is None:
            return
        after = batch.last
        limit = next_limit(dataset, len(batch.records), len(chunk))
