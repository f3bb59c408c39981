"""Attempts: a submission's fields live in one document, `kind_fields`, shaped by the
challenge's kind; the `prompt` and `model_spec` columns, which two kinds filled, go.

Upgrade moves each row's values into its `kind_fields`, merged with what is there: the
prompt as its `prompt`, the model spec's given fields (model, temperature, system prompt;
nulls are left out, as the kinds store them) beside it. A column's value wins over a field
of the same name already in the document (none of the kinds stored one twice).
Downgrade moves them back: a benchmark attempt's model spec fields to `model_spec` (every
key, null when not given, as it was stored), any attempt's `prompt` to `prompt`; the rest
stays in `kind_fields` (null when nothing is left).

Rows are moved in batches by id, read and written through SQLAlchemy's JSON type, so the
same code runs on PostgreSQL and SQLite; columns are added and dropped in place on both (as
`attempt_kind_fields` does: rebuilding the table on SQLite would drop its trials with it).

Revision ID: 20261130_attempt_fields_by_kind (the file's name is longer than the 32
characters alembic_version.version_num holds)
Revises: 20261129_redblue_final_round
Create Date: 2026-11-30
"""

from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261130_attempt_fields_by_kind"
down_revision: str | None = "20261130_teams"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
# The rows' documents, read and written: None is SQL NULL (a row with nothing left).
DOCUMENT = sa.JSON(none_as_null=True).with_variant(
    postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
)
# The fields of a benchmark attempt's model spec, as the `model_spec` column held them.
MODEL_SPEC_FIELDS = ("model", "temperature", "system_prompt")
BATCH = 1000

ATTEMPTS = sa.table(
    "attempts",
    sa.column("id", sa.Uuid()),
    sa.column("challenge_id", sa.Uuid()),
    sa.column("prompt", sa.Text()),
    sa.column("model_spec", DOCUMENT),
    sa.column("kind_fields", DOCUMENT),
)
CHALLENGES = sa.table("challenges", sa.column("id", sa.Uuid()), sa.column("kind", sa.String()))


def merged_fields(kind_fields: Any, prompt: str | None, model_spec: Any) -> dict[str, Any] | None:
    """A row's `kind_fields` with its prompt and model spec moved in."""
    merged = dict(kind_fields) if isinstance(kind_fields, dict) else {}
    if isinstance(model_spec, dict):
        merged.update({name: value for name, value in model_spec.items() if value is not None})
    if prompt is not None:
        merged["prompt"] = prompt
    return merged or None


def split_fields(
    kind: str, kind_fields: Any
) -> tuple[dict[str, Any] | None, str | None, dict[str, Any] | None]:
    """A row's (kind_fields, prompt, model_spec) as the columns held them before."""
    rest = dict(kind_fields) if isinstance(kind_fields, dict) else {}
    prompt = rest.pop("prompt", None)
    model_spec = None
    if kind == "benchmark" and "model" in rest:
        model_spec = {name: rest.pop(name, None) for name in MODEL_SPEC_FIELDS}
    return rest or None, prompt if isinstance(prompt, str) else None, model_spec


def _batches(query: sa.Select[Any]) -> Iterator[Sequence[sa.Row[Any]]]:
    """The query's rows in batches by id (each batch read before it is written)."""
    connection = op.get_bind()
    last = None
    while True:
        page = query if last is None else query.where(ATTEMPTS.c.id > last)
        rows = connection.execute(page.order_by(ATTEMPTS.c.id).limit(BATCH)).all()
        if not rows:
            return
        yield rows
        last = rows[-1].id


def _write(values: list[dict[str, Any]], *columns: str) -> None:
    statement = (
        sa.update(ATTEMPTS)
        .where(ATTEMPTS.c.id == sa.bindparam("row_id"))
        .values({name: sa.bindparam(f"new_{name}") for name in columns})
    )
    op.get_bind().execute(statement, values)


def upgrade() -> None:
    query = sa.select(
        ATTEMPTS.c.id, ATTEMPTS.c.prompt, ATTEMPTS.c.model_spec, ATTEMPTS.c.kind_fields
    ).where(sa.or_(ATTEMPTS.c.prompt.is_not(None), ATTEMPTS.c.model_spec.is_not(None)))
    for rows in _batches(query):
        values = [
            {
                "row_id": row.id,
                "new_kind_fields": merged_fields(row.kind_fields, row.prompt, row.model_spec),
            }
            for row in rows
        ]
        _write(values, "kind_fields")
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE attempts DROP COLUMN model_spec")
    op.execute("ALTER TABLE attempts DROP COLUMN prompt")


def downgrade() -> None:
    op.add_column("attempts", sa.Column("prompt", sa.Text(), nullable=True))
    op.add_column("attempts", sa.Column("model_spec", JSON_TYPE, nullable=True))
    query = (
        sa.select(ATTEMPTS.c.id, ATTEMPTS.c.kind_fields, CHALLENGES.c.kind)
        .join(CHALLENGES, CHALLENGES.c.id == ATTEMPTS.c.challenge_id)
        .where(ATTEMPTS.c.kind_fields.is_not(None))
    )
    for rows in _batches(query):
        values = []
        for row in rows:
            kind_fields, prompt, model_spec = split_fields(row.kind, row.kind_fields)
            values.append(
                {
                    "row_id": row.id,
                    "new_kind_fields": kind_fields,
                    "new_prompt": prompt,
                    "new_model_spec": model_spec,
                }
            )
        _write(values, "kind_fields", "prompt", "model_spec")
