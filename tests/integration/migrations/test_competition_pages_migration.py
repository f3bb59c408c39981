"""The competition pages migration on data made before it, on PostgreSQL and on SQLite:
existing challenges have no pages and no rules (nobody is asked to accept anything), and the
closes already past are recorded as notified, so the notices' sweep mails nobody about them;
down removes the columns and tables, keeping the challenges, and up again works."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import JSON, String, Uuid, column, insert, inspect, select, table

from app.kit.db import UTCDateTime, make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261210_tenant_hosting"
NOW = datetime.now(UTC)
# The challenges table as it stood at BEFORE (its not-null columns).
CHALLENGES_BEFORE = table(
    "challenges",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("slug", String()),
    column("title", String()),
    column("goal", String()),
    column("kind", String()),
    column("kind_sections", JSON()),
    column("scoring", JSON()),
    column("limits", JSON()),
    column("visibility", String()),
    column("state", String()),
    column("closes_at", UTCDateTime()),
    column("created_at", UTCDateTime()),
    column("updated_at", UTCDateTime()),
)
NEW_TABLES = {"rules_acceptances", "announcements", "challenge_notices"}


def _challenge(tenant: uuid.UUID, slug: str, closes_at: datetime | None) -> dict[str, object]:
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant,
        "slug": slug,
        "title": slug,
        "goal": "",
        "kind": "prompt",
        "kind_sections": {"target": {"model": "offline/echo"}},
        "scoring": {"strategy": "first"},
        "limits": {},
        "visibility": "public",
        "state": "live",
        "closes_at": closes_at,
        "created_at": NOW,
        "updated_at": NOW,
    }


def _check(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    tenant = uuid.uuid4()
    closed = _challenge(tenant, "closed", NOW - timedelta(days=1))
    open_ = _challenge(tenant, "open", NOW + timedelta(days=1))
    endless = _challenge(tenant, "endless", None)
    try:
        with engine.begin() as connection:
            connection.execute(
                insert(TENANTS_BEFORE),
                {"id": tenant, "slug": f"t-{tenant.hex[:8]}", "name": "t", "created_at": NOW},
            )
            connection.execute(insert(CHALLENGES_BEFORE), [closed, open_, endless])

        command.upgrade(config, "head")
        with engine.connect() as connection:
            rows = connection.execute(
                select(column("slug"), column("pages"), column("rules_sha256")).select_from(
                    table("challenges")
                )
            ).all()
            assert sorted(rows) == [
                ("closed", None, None),
                ("endless", None, None),
                ("open", None, None),
            ]
            notices = connection.execute(
                select(
                    column("challenge_id", Uuid()), column("event"), column("mailed")
                ).select_from(table("challenge_notices"))
            ).all()
            assert sorted((c, e, m) for c, e, m in notices) == [
                (closed["id"], "closed", 0),
                (closed["id"], "revealed", 0),
            ]

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            inspector = inspect(connection)
            assert not NEW_TABLES & set(inspector.get_table_names())
            columns = {c["name"] for c in inspector.get_columns("challenges")}
            assert not {"pages", "rules_sha256"} & columns
            assert len(connection.execute(select(CHALLENGES_BEFORE.c.id)).all()) == 3

        command.upgrade(config, "head")
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) >= NEW_TABLES
    finally:
        engine.dispose()


def test_competition_pages_migration_up_and_down_on_sqlite(tmp_path: Path) -> None:
    _check(f"sqlite:///{tmp_path / 'pages.db'}")


def test_competition_pages_migration_up_and_down_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check(url)
