"""Attempts: `kind_fields`, the submission fields of a challenge kind's own (validated by the
kind's `submission_model`), so that a kind brings a field of its own without a column and a
migration of its own. The built-in kinds' `prompt` and `model_spec` keep their columns.

Added and dropped in place on both databases (as `kind_sections` is): on SQLite, rebuilding
the table (batch mode) would drop the old copy, and with foreign keys on its trials with it.

Revision ID: 20261127_attempt_kind_fields
Revises: 20261127_redblue_incremental
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261127_attempt_kind_fields"
down_revision: str | None = "20261127_redblue_incremental"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.add_column("attempts", sa.Column("kind_fields", JSON_TYPE, nullable=True))


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE attempts DROP COLUMN kind_fields")
