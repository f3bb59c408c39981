"""The migrations build the schema the models describe, on PostgreSQL and on SQLite, and undo
it cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from app.kit.db import Base, make_engine
from app.models import __all__ as _all_models  # noqa: F401  (registers every table)
from tests.conftest import ROOT, Stack
from tests.services import scratch_database

pytestmark = pytest.mark.integration


def _config(url: str) -> Config:
    config = Config(str(ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    config.set_main_option("sqlalchemy.url", url)
    return config


def _check_round_trip(url: str) -> None:
    config = _config(url)
    command.upgrade(config, "head")
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            assert compare_metadata(context, Base.metadata) == []
        command.downgrade(config, "base")
        with engine.connect() as connection:
            assert set(inspect(connection).get_table_names()) <= {"alembic_version"}
        command.upgrade(config, "head")
        with engine.connect() as connection:
            tables = set(inspect(connection).get_table_names())
        assert {"tenants", "attempts", "trials", "leaderboard_entries", "rescore_jobs"} <= tables
    finally:
        engine.dispose()


def test_migrations_round_trip_on_sqlite(tmp_path: Path) -> None:
    _check_round_trip(f"sqlite:///{tmp_path / 'migrations.db'}")


def test_migrations_round_trip_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check_round_trip(url)
