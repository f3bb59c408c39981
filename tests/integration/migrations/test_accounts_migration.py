"""The accounts migration on data made before it: handles that differ only in case are kept
apart (the earliest keeps its spelling, later ones are renamed), then the database refuses new
ones, on PostgreSQL and on SQLite."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from app.kit.db import make_engine
from app.tenant.models import Participant
from tests.conftest import Stack
from tests.fixtures.tables_before import PARTICIPANTS_BEFORE, TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "0004"


def _check_case_duplicates_are_renamed(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    tenant, other = uuid.uuid4(), uuid.uuid4()
    spellings = ["Alice", "alice", "ALICE"]  # in order of creation
    ids = [uuid.uuid4() for _ in spellings]
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(TENANTS_BEFORE),
                [
                    {"id": t, "slug": f"t-{t.hex[:8]}", "name": "t", "created_at": start}
                    for t in (tenant, other)
                ],
            )
            rows = [
                {"id": i, "tenant_id": tenant, "handle": h, "created_at": start + timedelta(n)}
                for n, (i, h) in enumerate(zip(ids, spellings, strict=True))
            ]
            rows.append(
                {"id": uuid.uuid4(), "tenant_id": other, "handle": "alice", "created_at": start}
            )
            rows.append(
                {"id": uuid.uuid4(), "tenant_id": tenant, "handle": "bob", "created_at": start}
            )
            connection.execute(insert(PARTICIPANTS_BEFORE), rows)

        command.upgrade(config, "head")

        with engine.connect() as connection:
            found = connection.execute(
                select(Participant.id, Participant.handle).where(Participant.tenant_id == tenant)
            )
            handles = {row.id: row.handle for row in found}
            assert handles[ids[0]] == "Alice"  # the earliest keeps its spelling
            assert handles[ids[1]] == f"alice-{ids[1].hex[:8]}"
            assert handles[ids[2]] == f"ALICE-{ids[2].hex[:8]}"
            assert sorted(handles.values())[-1] == "bob"
            other_handles = connection.scalars(
                select(Participant.handle).where(Participant.tenant_id == other)
            ).all()
            assert other_handles == ["alice"]  # another tenant's is its own
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(
                insert(Participant),
                {"id": uuid.uuid4(), "tenant_id": tenant, "handle": "BOB", "created_at": start},
            )
        # Down and up again: nothing left to rename, the index comes back.
        command.downgrade(config, BEFORE)
        command.upgrade(config, "head")
        with pytest.raises(IntegrityError), engine.begin() as connection:
            connection.execute(
                insert(Participant),
                {"id": uuid.uuid4(), "tenant_id": tenant, "handle": "aLiCe", "created_at": start},
            )
    finally:
        engine.dispose()


def test_case_duplicates_are_renamed_on_sqlite(tmp_path: Path) -> None:
    _check_case_duplicates_are_renamed(f"sqlite:///{tmp_path / 'accounts.db'}")


def test_case_duplicates_are_renamed_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check_case_duplicates_are_renamed(url)
