"""Challenges: every kind's sections live in `kind_sections`; the `target`, `verifier`,
`benchmark` and `evaluation` columns, which the built-in kinds filled, go.

Upgrade moves each row's non-null column values into its `kind_sections` under the column's
name, merged with what is there (a column's value wins over a section of the same name in the
document; no kind stored one twice); an empty `evaluation`, the column's filler for a kind
without the section, is left out. Downgrade recreates the columns as they were (JSON,
JSONB on PostgreSQL; `evaluation` not null, holding an empty document for a kind without the
section, as the model stored it) and moves the four sections back out of `kind_sections`
(null when nothing is left).

Rows are moved in batches by id, read and written through SQLAlchemy's JSON type, so the same
code runs on PostgreSQL and SQLite; columns are added and dropped in place on both (as
`kind_sections` is: rebuilding the table on SQLite would drop the old copy, and with foreign
keys on, every attempt with it). SQLite adds a NOT NULL column only with a default, so
`evaluation` comes back with the default `'{}'`, which PostgreSQL then drops; on SQLite it
stays (dropping it would rebuild the table), and the application always writes the column.

Revision ID: 20261130_challenge_sections
Revises: 20261130_attempt_fields_by_kind
Create Date: 2026-11-30
"""

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261130_challenge_sections"
down_revision: str | None = "20261130_attempt_fields_by_kind"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
# The rows' documents, read and written: None is SQL NULL (a row with nothing left).
DOCUMENT = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
)
# The sections that had a column of their own, in the order the columns were made.
SECTION_COLUMNS = ("target", "verifier", "evaluation", "benchmark")
BATCH = 1000

CHALLENGES = sa.table(
    "challenges",
    sa.column("id", sa.Uuid()),
    sa.column("kind_sections", DOCUMENT),
    *(sa.column(name, DOCUMENT) for name in SECTION_COLUMNS),
)


def merged_sections(kind_sections: Any, columns: dict[str, Any]) -> dict[str, Any] | None:
    """A row's `kind_sections` with its columns' non-null values moved in. An empty
    `evaluation` is left out: it is what the not-null column held for a kind without the
    section (a kind's evaluation section always stored its fields)."""
    merged = dict(kind_sections) if isinstance(kind_sections, dict) else {}
    merged.update({name: value for name, value in columns.items() if value is not None})
    if merged.get("evaluation") == {}:
        del merged["evaluation"]
    return merged or None


def split_sections(kind_sections: Any) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """A row's (kind_sections, columns) as they were held before: each column's section (None
    when not stored; an empty `evaluation` when not stored, as its column is not null)."""
    rest = dict(kind_sections) if isinstance(kind_sections, dict) else {}
    columns = {name: rest.pop(name, None) for name in SECTION_COLUMNS}
    if columns["evaluation"] is None:
        columns["evaluation"] = {}
    return rest or None, columns


def _batches(query: sa.Select[Any]) -> Iterator[Sequence[sa.Row[Any]]]:
    """The query's rows in batches by id (each batch read before it is written)."""
    connection = op.get_bind()
    last = None
    while True:
        page = query if last is None else query.where(CHALLENGES.c.id > last)
        rows = connection.execute(page.order_by(CHALLENGES.c.id).limit(BATCH)).all()
        if not rows:
            return
        yield rows
        last = rows[-1].id


def _write(values: list[dict[str, Any]], *columns: str) -> None:
    statement = (
        sa.update(CHALLENGES)
        .where(CHALLENGES.c.id == sa.bindparam("row_id"))
        .values({name: sa.bindparam(f"new_{name}") for name in columns})
    )
    op.get_bind().execute(statement, values)


def upgrade() -> None:
    query = sa.select(
        CHALLENGES.c.id,
        CHALLENGES.c.kind_sections,
        *(CHALLENGES.c[name] for name in SECTION_COLUMNS),
    )
    for rows in _batches(query):
        values = [
            {
                "row_id": row.id,
                "new_kind_sections": merged_sections(
                    row.kind_sections, {name: row._mapping[name] for name in SECTION_COLUMNS}
                ),
            }
            for row in rows
        ]
        _write(values, "kind_sections")
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    for name in reversed(SECTION_COLUMNS):
        op.execute(f"ALTER TABLE challenges DROP COLUMN {name}")


def downgrade() -> None:
    op.add_column("challenges", sa.Column("target", JSON_TYPE, nullable=True))
    op.add_column("challenges", sa.Column("verifier", JSON_TYPE, nullable=True))
    op.add_column(
        "challenges",
        sa.Column("evaluation", JSON_TYPE, nullable=False, server_default=sa.text("'{}'")),
    )
    op.add_column("challenges", sa.Column("benchmark", JSON_TYPE, nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        op.alter_column("challenges", "evaluation", server_default=None)
    query = sa.select(CHALLENGES.c.id, CHALLENGES.c.kind_sections).where(
        CHALLENGES.c.kind_sections.is_not(None)
    )
    for rows in _batches(query):
        values = []
        for row in rows:
            kind_sections, columns = split_sections(row.kind_sections)
            values.append(
                {
                    "row_id": row.id,
                    "new_kind_sections": kind_sections,
                    **{f"new_{name}": value for name, value in columns.items()},
                }
            )
        _write(values, "kind_sections", *SECTION_COLUMNS)
