"""The migration that moves challenges' `target`, `verifier`, `benchmark` and `evaluation`
columns into `kind_sections`, on rows made before it, on PostgreSQL and on SQLite: each kind
reads its sections where the columns held them, and the downgrade puts them back."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import JSON, String, Text, Uuid, column, insert, inspect, select, table
from sqlalchemy.orm import Session

from app.challenge.challenge_kind import ChallengeKind
from app.challenge.models import Challenge
from app.challenge.registry import find_kind
from app.kit.db import UTCDateTime, make_engine
from tests.conftest import Stack
from tests.fixtures.tables_before import TENANTS_BEFORE
from tests.fixtures.word_count_kind import KIND as WORD_COUNT
from tests.integration.migrations.test_migrations import _config
from tests.services import scratch_database

pytestmark = pytest.mark.integration

BEFORE = "20261130_attempt_fields_by_kind"
SECTION_COLUMNS = ("target", "verifier", "benchmark", "evaluation")
# The challenges table as it was before the migration (JSON documents compared as read back).
CHALLENGES_BEFORE = table(
    "challenges",
    column("id", Uuid()),
    column("tenant_id", Uuid()),
    column("slug", String()),
    column("title", String()),
    column("goal", Text()),
    column("kind", String()),
    *(column(name, JSON(none_as_null=True)) for name in SECTION_COLUMNS),
    column("kind_sections", JSON(none_as_null=True)),
    column("scoring", JSON()),
    column("limits", JSON()),
    column("visibility", String()),
    column("created_at", UTCDateTime()),
    column("updated_at", UTCDateTime()),
)
CHALLENGES_AFTER = table("challenges", column("id", Uuid()), column("kind_sections", JSON()))


def challenge_before(tenant_id: uuid.UUID, slug: str, kind: str, **sections: Any) -> dict[str, Any]:
    """A row of CHALLENGES_BEFORE: `sections` are its section columns and `kind_sections`
    (`evaluation` an empty document unless given, as the model stored it)."""
    now = datetime(2026, 11, 1, tzinfo=UTC)
    columns = {name: sections.get(name) for name in (*SECTION_COLUMNS, "kind_sections")}
    return {
        "id": uuid.uuid4(),
        "tenant_id": tenant_id,
        "slug": slug,
        "title": slug,
        "goal": "",
        "kind": kind,
        **columns,
        "evaluation": sections.get("evaluation", {}),
        "scoring": {"strategy": "first"},
        "limits": {},
        "visibility": "private",
        "created_at": now,
        "updated_at": now,
    }


EVALUATION = {"metric": "pass@k", "k": 3, "feedback_mode": "binary"}
TARGET = {"model": "offline/echo", "system_prompt": "Never say PWNED."}
VERIFIER = {"type": "contains", "pattern": "PWNED"}
BENCHMARK = {"name": "jsonl", "options": {"path": "example.jsonl"}, "judge_model": None}
SEQ = {"metric": "seq@k", "k": 2, "feedback_mode": "binary"}
SPLIT = {"public_fraction": 0.5, "seed": 7, "final_submissions": 1}
RED_BLUE = {
    "judge_suite": {
        "categories": [{"name": "pwned", "verifier": {"type": "contains", "pattern": "PWNED"}}]
    },
    "self_test": {"prompt": "Say hello", "verifier": {"type": "contains", "pattern": "hello"}},
    "final_round": False,
}
GUARDED = {"model": "offline/guarded-echo", "temperature": 0}
WORDS = {"word_count": {"words": 3, "model": "offline/echo", "note": ""}}
# (kind, the row's sections) as the kinds stored them before.
ROWS_BEFORE: dict[str, tuple[str, dict[str, Any]]] = {
    "prompt": ("prompt", {"target": TARGET, "verifier": VERIFIER, "evaluation": EVALUATION}),
    "benchmark": ("benchmark", {"benchmark": BENCHMARK, "evaluation": EVALUATION}),
    "benchmark_split": (
        "benchmark",
        {"benchmark": BENCHMARK, "evaluation": SEQ, "kind_sections": {"split": SPLIT}},
    ),
    "red_blue": ("red_blue", {"target": GUARDED, "kind_sections": RED_BLUE}),
    "word_count": ("word_count", {"kind_sections": WORDS}),
}
# What each row's `kind_sections` holds after the upgrade.
ROWS_AFTER = {
    "prompt": {"target": TARGET, "verifier": VERIFIER, "evaluation": EVALUATION},
    "benchmark": {"benchmark": BENCHMARK, "evaluation": EVALUATION},
    "benchmark_split": {"benchmark": BENCHMARK, "evaluation": SEQ, "split": SPLIT},
    "red_blue": {"target": GUARDED, **RED_BLUE},
    "word_count": WORDS,
}


def _kind(name: str) -> ChallengeKind:
    # The test suite's kind is registered only in processes given its entry point.
    return WORD_COUNT if name == WORD_COUNT.name else find_kind(name)


def _check_sections_move_and_come_back(url: str) -> None:
    config = _config(url)
    command.upgrade(config, BEFORE)
    engine = make_engine(url)
    try:
        with Session(engine) as session, session.begin():
            tenant_id = uuid.uuid4()
            session.execute(
                insert(TENANTS_BEFORE),
                {
                    "id": tenant_id,
                    "slug": f"t-{tenant_id.hex[:10]}",
                    "name": "t",
                    "created_at": datetime.now(UTC),
                },
            )
            rows = {
                name: challenge_before(tenant_id, name.replace("_", "-"), kind, **sections)
                for name, (kind, sections) in ROWS_BEFORE.items()
            }
            session.execute(insert(CHALLENGES_BEFORE), list(rows.values()))
        ids = {name: row["id"] for name, row in rows.items()}

        command.upgrade(config, "head")
        with engine.connect() as connection:
            stored = dict(connection.execute(select(CHALLENGES_AFTER)).tuples().all())
        assert {name: stored[ids[name]] for name in ROWS_BEFORE} == ROWS_AFTER
        # Each kind reads the sections the columns held, and they are valid.
        with Session(engine) as session:
            for name, (kind_name, _) in ROWS_BEFORE.items():
                challenge = session.get_one(Challenge, ids[name])
                kind = _kind(kind_name)
                sections = challenge.stored_sections(kind.config_model.model_fields)
                assert sections == ROWS_AFTER[name], name
                kind.parse(sections, stored=True)

        command.downgrade(config, BEFORE)
        columns = {c["name"]: c for c in inspect(engine).get_columns("challenges")}
        assert {name: columns[name]["nullable"] for name in SECTION_COLUMNS} == {
            "target": True,
            "verifier": True,
            "benchmark": True,
            "evaluation": False,
        }
        # PostgreSQL drops the default the column was added with; SQLite cannot in place.
        expected_default = None if engine.dialect.name == "postgresql" else "'{}'"
        assert columns["evaluation"]["default"] == expected_default
        with engine.connect() as connection:
            back = {row.id: row for row in connection.execute(select(CHALLENGES_BEFORE))}
        for name, row in rows.items():
            restored = back[ids[name]]
            for field in (*SECTION_COLUMNS, "kind_sections"):
                assert getattr(restored, field) == row[field], (name, field)
        command.upgrade(config, "head")
        with engine.connect() as connection:
            again = dict(connection.execute(select(CHALLENGES_AFTER)).tuples().all())
        assert again == stored
    finally:
        engine.dispose()


def test_challenge_sections_move_into_kind_sections_and_back_on_sqlite(tmp_path: Path) -> None:
    _check_sections_move_and_come_back(f"sqlite:///{tmp_path / 'sections.db'}")


def test_challenge_sections_move_into_kind_sections_and_back_on_postgresql(
    stack: Stack,
) -> None:
    with scratch_database(stack.admin_url) as url:
        _check_sections_move_and_come_back(url)
