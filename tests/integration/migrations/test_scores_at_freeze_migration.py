"""The migration that keeps attempts' scores as at a freeze, on data made before it, on
PostgreSQL and on SQLite: existing tenants keep their rows and no score is kept yet; down
removes the table, keeping the rows, and up again works."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import column, insert, inspect, select, table

from app.attempt.models import AttemptScoreAtFreeze
from app.kit.db import make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261211_competition_pages"
WHEN = datetime(2026, 12, 7, tzinfo=UTC)
KEPT = AttemptScoreAtFreeze.__tablename__


def _check(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    tenant = uuid.uuid4()
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(TENANTS_BEFORE),
                {"id": tenant, "slug": f"t-{tenant.hex[:8]}", "name": "t", "created_at": WHEN},
            )

        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert connection.execute(select(TENANTS_BEFORE.c.id)).scalars().all() == [tenant]
            columns = {c["name"] for c in inspect(connection).get_columns(KEPT)}
            assert columns == {"attempt_id", "tenant_id", "freeze_at", "score", "score_details"}
            assert (
                connection.execute(select(column("attempt_id")).select_from(table(KEPT))).all()
                == []
            )

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            assert KEPT not in inspect(connection).get_table_names()
            assert connection.execute(select(TENANTS_BEFORE.c.id)).scalars().all() == [tenant]

        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert KEPT in inspect(connection).get_table_names()
    finally:
        engine.dispose()


def test_scores_at_freeze_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'kept.db'}")


def test_scores_at_freeze_migration_up_and_down_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check(url)
