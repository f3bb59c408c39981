"""The account-mail migration on data made before it, on PostgreSQL and on SQLite: existing
tenants ask nothing new of addresses, existing participants have none and get notifications
once they confirm one; down removes the columns and tables, keeping the rows, and up again
works."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Boolean, String, Uuid, column, insert, inspect, select, table

from app.kit.db import UTCDateTime, make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261130_challenge_sections"
WHEN = datetime(2026, 12, 1, tzinfo=UTC)
PARTICIPANTS = table(
    "participants",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("handle", String()),
    column("password_hash", String()),
    column("is_admin", Boolean()),
    column("created_at", UTCDateTime()),
)
ADDED = {"email", "email_confirmed_at", "notify_by_mail"}


def _check(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    tenant, participant = uuid.uuid4(), uuid.uuid4()
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(TENANTS_BEFORE),
                {"id": tenant, "slug": f"t-{tenant.hex[:8]}", "name": "t", "created_at": WHEN},
            )
            connection.execute(
                insert(PARTICIPANTS),
                {
                    "id": participant,
                    "tenant_id": tenant,
                    "handle": "ann",
                    "password_hash": "x",
                    "is_admin": False,
                    "created_at": WHEN,
                },
            )

        command.upgrade(config, "head")
        with engine.connect() as connection:
            row = connection.execute(
                select(
                    column("email"), column("email_confirmed_at"), column("notify_by_mail")
                ).select_from(table("participants"))
            ).one()
            assert tuple(row) == (None, None, True)
            policy = connection.execute(
                select(column("email_policy")).select_from(table("tenants"))
            ).scalar_one()
            assert policy == "optional"
            tables = set(inspect(connection).get_table_names())
            assert {"account_tokens", "outbound_mail"} <= tables

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            inspector = inspect(connection)
            assert not {"account_tokens", "outbound_mail"} & set(inspector.get_table_names())
            columns = {c["name"] for c in inspector.get_columns("participants")}
            assert not ADDED & columns
            assert "email_policy" not in {c["name"] for c in inspector.get_columns("tenants")}
            handles = connection.execute(select(PARTICIPANTS.c.handle)).scalars().all()
            assert handles == ["ann"]

        command.upgrade(config, "head")
        with engine.connect() as connection:
            columns = {c["name"] for c in inspect(connection).get_columns("participants")}
            assert columns >= ADDED
    finally:
        engine.dispose()


def test_account_mail_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'account-mail.db'}")


def test_account_mail_migration_up_and_down_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check(url)
