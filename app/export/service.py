"""Which exports a challenge offers, and opening one for a reader (404 for another tenant's
challenge or a name its kind does not export)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.auth.subjects import TenantKey
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import get_challenge
from app.export.datasets import COMMON_DATASETS
from app.export.export_kind import ExportKind
from app.export.formats import ExportFormat
from app.export.schemas import ColumnRead, ExportList, ExportRead
from app.export.stream import Dataset, ExportSource, stream
from app.kit.db import get_sessionmaker, utcnow
from app.kit.errors import NotFound
from app.kit.schemas import page_of
from app.leaderboard.freeze import frozen_since


def datasets_of(kind: str) -> Sequence[Dataset]:
    return (*kind_as(kind, ExportKind).exports(), *COMMON_DATASETS)


def _frozen_at(session: Session, challenge: Challenge) -> datetime | None:
    """When the challenge's public boards froze, while they are (the exports say so)."""
    held = kind_as(challenge.kind, ExportKind).freeze_held(session, challenge)
    return frozen_since(challenge, held=held)


def list_exports(
    session: Session, reader: TenantKey, challenge_id: uuid.UUID, *, limit: int, offset: int
) -> ExportList:
    challenge = get_challenge(session, reader.tenant_id, challenge_id)
    base = f"/v1/challenges/{challenge.id}/exports"
    datasets, total = page_of(datasets_of(challenge.kind), limit, offset)
    return ExportList(
        frozen_at=_frozen_at(session, challenge),
        total=total,
        limit=limit,
        offset=offset,
        items=[
            ExportRead(
                name=dataset.name,
                title=dataset.title,
                description=dataset.description,
                formats={f: f"{base}/{dataset.name}?format={f.value}" for f in ExportFormat},
                columns=[
                    ColumnRead(name=c.name, description=c.description) for c in dataset.columns
                ],
            )
            for dataset in datasets
        ],
    )


@dataclass(frozen=True)
class OpenedExport:
    """An export ready to stream: its file name, media type and bytes (read as they are
    iterated, a batch at a time, each in a session of its own)."""

    filename: str
    media_type: str
    body: Iterator[bytes]
    # While the challenge's public boards are frozen: when they froze (the export's boards
    # are the live ones, the admins' view).
    frozen_at: datetime | None = None


def open_export(
    session: Session,
    reader: TenantKey,
    challenge_id: uuid.UUID,
    name: str,
    format: ExportFormat,
) -> OpenedExport:
    """Checks the challenge is the reader's and exports `name` (404 otherwise); nothing is
    read of the dataset until the body is iterated."""
    challenge = get_challenge(session, reader.tenant_id, challenge_id)
    datasets = {dataset.name: dataset for dataset in datasets_of(challenge.kind)}
    dataset = datasets.get(name)
    if dataset is None:
        known = ", ".join(datasets)
        raise NotFound(
            f"no export named {name!r} for a {challenge.kind} challenge; it has: {known}"
        )
    source = ExportSource(reader, challenge.id)
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    return OpenedExport(
        filename=f"{challenge.slug}-{dataset.name}-{stamp}.{format.extension}",
        media_type=format.media_type,
        body=stream(dataset, source, format, get_sessionmaker()),
        frozen_at=_frozen_at(session, challenge),
    )
