"""The migration that gives attempts their turn, on rows made before it, on PostgreSQL and on
SQLite: every attempt takes turn 0 (those still queued go first, as they would have), the
queue's indexes are made; down drops them, keeping the rows, and up again works."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import (
    JSON,
    BigInteger,
    Integer,
    String,
    Uuid,
    column,
    insert,
    inspect,
    select,
    table,
)

from app.kit.db import UTCDateTime, make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261211_scores_at_freeze"
WHEN = datetime(2026, 12, 10, tzinfo=UTC)
# The challenges and attempts tables' columns that the revision before has, and that are
# required.
CHALLENGES_BEFORE = table(
    "challenges",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("slug", String()),
    column("title", String()),
    column("goal", String()),
    column("kind", String()),
    column("scoring", JSON()),
    column("limits", JSON()),
    column("visibility", String()),
    column("created_at", UTCDateTime()),
    column("updated_at", UTCDateTime()),
)
# The attempts table's columns that every revision has.
ATTEMPTS_BEFORE = table(
    "attempts",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("challenge_id", Uuid()),
    column("status", String()),
    column("created_at", UTCDateTime()),
    column("created_at_ms", BigInteger()),
    column("enqueued_at", UTCDateTime()),
    column("run_count", Integer()),
)
ATTEMPTS_AFTER = table("attempts", column("id", Uuid()), column("turn", BigInteger()))
INDEXES = {"ix_attempts_unfinished_turn", "ix_attempts_unfinished_tenant_turn"}


def _indexes(connection: object) -> set[str]:
    return {index["name"] for index in inspect(connection).get_indexes("attempts")}


def _check(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    tenant = uuid.uuid4()
    challenge = {
        "id": uuid.uuid4(),
        "tenant_id": tenant,
        "slug": "c",
        "title": "c",
        "goal": "",
        "kind": "prompt",
        "scoring": {"strategy": "first"},
        "limits": {},
        "visibility": "private",
        "created_at": WHEN,
        "updated_at": WHEN,
    }
    statuses = {uuid.uuid4(): status for status in ("queued", "running", "completed")}
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(TENANTS_BEFORE),
                {"id": tenant, "slug": f"t-{tenant.hex[:8]}", "name": "t", "created_at": WHEN},
            )
            connection.execute(insert(CHALLENGES_BEFORE), challenge)
            connection.execute(
                insert(ATTEMPTS_BEFORE),
                [
                    {
                        "id": attempt_id,
                        "tenant_id": tenant,
                        "challenge_id": challenge["id"],
                        "status": status,
                        "created_at": WHEN,
                        "created_at_ms": int(WHEN.timestamp() * 1000),
                        "enqueued_at": WHEN,
                        "run_count": 0,
                    }
                    for attempt_id, status in statuses.items()
                ],
            )

        command.upgrade(config, "head")
        with engine.connect() as connection:
            turns = dict(connection.execute(select(ATTEMPTS_AFTER)).tuples().all())
            assert turns == dict.fromkeys(statuses, 0)
            assert _indexes(connection) >= INDEXES

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            assert "turn" not in {c["name"] for c in inspect(connection).get_columns("attempts")}
            assert not _indexes(connection) & INDEXES
            kept = connection.execute(select(ATTEMPTS_BEFORE.c.id)).scalars().all()
            assert set(kept) == set(statuses)

        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert _indexes(connection) >= INDEXES
    finally:
        engine.dispose()


def test_attempt_turns_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'turns.db'}")


def test_attempt_turns_migration_up_and_down_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check(url)
