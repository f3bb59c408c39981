"""The hosting migration on data made before it, on PostgreSQL and on SQLite: existing tenants
are active with no quota, their spend rows count no entries; down removes the columns and the
platform admin's sessions, keeping the rows, and up again works."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Date, Float, Integer, Uuid, column, insert, inspect, select, table

from app.kit.db import make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261209_redblue_open_intervals"
WHEN = datetime(2026, 12, 7, tzinfo=UTC)
SPEND = table(
    "tenant_spend",
    column("tenant_id", Uuid()),
    column("day", Date()),
    column("spent_usd", Float()),
    column("calls", Integer()),
)
QUOTAS = {"max_challenges", "max_participants", "max_attempts_per_day", "daily_cost_budget_usd"}


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
            connection.execute(
                insert(SPEND),
                {"tenant_id": tenant, "day": date(2026, 12, 7), "spent_usd": 1.5, "calls": 3},
            )

        command.upgrade(config, "head")
        with engine.connect() as connection:
            row = connection.execute(
                select(
                    column("status"),
                    *(column(name) for name in sorted(QUOTAS)),
                ).select_from(table("tenants"))
            ).one()
            assert tuple(row) == ("active", None, None, None, None)
            counted = connection.execute(
                select(column("attempts"), column("spent_usd")).select_from(table("tenant_spend"))
            ).one()
            assert tuple(counted) == (0, 1.5)
            assert "platform_sessions" in inspect(connection).get_table_names()

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            inspector = inspect(connection)
            assert "platform_sessions" not in inspector.get_table_names()
            columns = {c["name"] for c in inspector.get_columns("tenants")}
            assert not (QUOTAS | {"status"}) & columns
            assert "attempts" not in {c["name"] for c in inspector.get_columns("tenant_spend")}
            assert connection.execute(select(TENANTS_BEFORE.c.id)).scalars().all() == [tenant]
            assert connection.execute(select(SPEND.c.calls)).scalars().all() == [3]

        command.upgrade(config, "head")
        with engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("tenants")}
            assert columns >= QUOTAS | {"status"}
    finally:
        engine.dispose()


def test_tenant_hosting_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'hosting.db'}")


def test_tenant_hosting_migration_up_and_down_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check(url)
