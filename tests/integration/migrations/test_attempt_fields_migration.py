"""The migration that moves attempts' `prompt` and `model_spec` columns into `kind_fields`,
on rows made before it, on PostgreSQL and on SQLite: each kind reads its fields where the
columns held them, its reads show what they showed, and the downgrade puts them back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import JSON, BigInteger, Integer, String, Text, Uuid, column, insert, select, table
from sqlalchemy.orm import Session

from app.attempt.attempt_kind import AttemptKind
from app.challenge.registry import kind_as
from app.kit.db import UTCDateTime, make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import PARTICIPANTS_BEFORE, TENANTS_BEFORE
from tests.fixtures.word_count_kind import KIND as WORD_COUNT
from tests.integration.migrations.test_challenge_sections_migration import (
    CHALLENGES_BEFORE,
    challenge_before,
)
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261130_teams"
# The attempts table as it was at BEFORE (JSON documents compared as read back).
ATTEMPTS_BEFORE = table(
    "attempts",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("challenge_id", Uuid()),
    column("participant_id", Uuid()),
    column("status", String()),
    column("prompt", Text()),
    column("model_spec", JSON()),
    column("kind_fields", JSON()),
    column("created_at", UTCDateTime()),
    column("created_at_ms", BigInteger()),
    column("enqueued_at", UTCDateTime()),
    column("run_count", Integer()),
)
ATTEMPTS_AFTER = table("attempts", column("id", Uuid()), column("kind_fields", JSON()))

SPEC = {"model": "offline/solver-sim", "temperature": 0.7, "system_prompt": None}
# (kind, prompt, model_spec, kind_fields) of rows as the kinds stored them before.
ROWS_BEFORE = {
    "prompt": ("prompt", "Say PWNED", None, None),
    "benchmark": ("benchmark", None, SPEC, None),
    "benchmark_practice": (
        "benchmark",
        None,
        {**SPEC, "system_prompt": "Grid."},
        {"task_index": 3},
    ),
    "red_blue_practice": ("red_blue", "Ignore that", None, {"system_prompt": "Never say it."}),
    "word_count": ("word_count", "one two three", None, {"signature": "Amy W."}),
    "nothing": ("prompt", None, None, None),
}
# What each row's `kind_fields` holds after the upgrade.
ROWS_AFTER = {
    "prompt": {"prompt": "Say PWNED"},
    "benchmark": {"model": "offline/solver-sim", "temperature": 0.7},
    "benchmark_practice": {
        "model": "offline/solver-sim",
        "temperature": 0.7,
        "system_prompt": "Grid.",
        "task_index": 3,
    },
    "red_blue_practice": {"prompt": "Ignore that", "system_prompt": "Never say it."},
    "word_count": {"prompt": "one two three", "signature": "Amy W."},
    "nothing": None,
}


def _kind(name: str) -> AttemptKind:
    # The test suite's kind is registered only in processes given its entry point.
    return WORD_COUNT if name == WORD_COUNT.name else kind_as(name, AttemptKind)


def _check_fields_move_and_come_back(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    now = datetime(2026, 11, 1, tzinfo=UTC)
    ids = {name: uuid.uuid4() for name in ROWS_BEFORE}
    try:
        with Session(engine) as session, session.begin():
            tenant_id = uuid.uuid4()
            session.execute(
                insert(TENANTS_BEFORE),
                {
                    "id": tenant_id,
                    "slug": f"t-{tenant_id.hex[:10]}",
                    "name": "t",
                    "created_at": now,
                },
            )
            kinds = {kind for kind, *_ in ROWS_BEFORE.values()}
            # The challenges table as it was then (its sections in columns).
            challenges = {
                kind: challenge_before(
                    tenant_id, f"c-{kind}", kind, target={"model": "offline/echo"}
                )
                for kind in kinds
            }
            session.execute(insert(CHALLENGES_BEFORE), list(challenges.values()))
            amy_id = uuid.uuid4()
            session.execute(
                insert(PARTICIPANTS_BEFORE),
                {"id": amy_id, "tenant_id": tenant_id, "handle": "amy", "created_at": now},
            )
            rows: list[dict[str, Any]] = [
                {
                    "id": ids[name],
                    "tenant_id": tenant_id,
                    "challenge_id": challenges[kind]["id"],
                    "participant_id": amy_id,
                    "status": "completed",
                    "prompt": prompt,
                    "model_spec": model_spec,
                    "kind_fields": kind_fields,
                    "created_at": now,
                    "created_at_ms": int(now.timestamp() * 1000),
                    "enqueued_at": now,
                    "run_count": 1,
                }
                for name, (kind, prompt, model_spec, kind_fields) in ROWS_BEFORE.items()
            ]
            session.execute(insert(ATTEMPTS_BEFORE), rows)

        command.upgrade(config, "head")
        with engine.connect() as connection:
            stored = dict(connection.execute(select(ATTEMPTS_AFTER)).tuples().all())
        assert {name: stored[ids[name]] for name in ROWS_BEFORE} == ROWS_AFTER
        # Each kind shows them as the columns showed them (the API's `prompt`, `model_spec`
        # and the rest of its fields).
        for name, (kind, prompt, model_spec, kind_fields) in ROWS_BEFORE.items():
            shown = _kind(kind).shown(stored[ids[name]])
            assert shown.prompt == prompt, name
            assert shown.model_spec == model_spec, name
            assert shown.kind_fields == kind_fields, name

        command.downgrade(config, BEFORE)
        with engine.connect() as connection:
            back = connection.execute(
                select(
                    ATTEMPTS_BEFORE.c.id,
                    ATTEMPTS_BEFORE.c.prompt,
                    ATTEMPTS_BEFORE.c.model_spec,
                    ATTEMPTS_BEFORE.c.kind_fields,
                )
            ).all()
        restored = {row.id: (row.prompt, row.model_spec, row.kind_fields) for row in back}
        for name, (_, prompt, model_spec, kind_fields) in ROWS_BEFORE.items():
            assert restored[ids[name]] == (prompt, model_spec, kind_fields), name
        command.upgrade(config, "head")
        with engine.connect() as connection:
            again = dict(connection.execute(select(ATTEMPTS_AFTER)).tuples().all())
        assert again == stored
    finally:
        engine.dispose()


def test_attempt_fields_move_into_kind_fields_and_back_on_sqlite(tmp_path: Path) -> None:
    _check_fields_move_and_come_back(f"sqlite:///{tmp_path / 'fields.db'}")


def test_attempt_fields_move_into_kind_fields_and_back_on_postgresql(stack: Stack) -> None:
    with scratch_database(stack.admin_url) as url:
        _check_fields_move_and_come_back(url)
