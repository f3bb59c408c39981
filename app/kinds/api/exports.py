"""For the datasets a kind exports (its `ExportKind.exports`): a dataset, its CSV columns, and
reading it in batches after a cursor."""

from __future__ import annotations

from app.export.formats import Column
from app.export.stream import Dataset, in_batches

__all__ = ["Column", "Dataset", "in_batches"]
