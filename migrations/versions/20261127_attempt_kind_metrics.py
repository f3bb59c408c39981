"""Attempts: `kind_metrics`, the measures of a challenge kind's own (its `measure_own`),
beside the core's `metrics` and ranked columns, so that a kind brings a metric of its own
without a column and a migration of its own.

Added and dropped in place on both databases (as `kind_fields` is).

Revision ID: 20261127_attempt_kind_metrics
Revises: 20261127_attempt_kind_fields
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261127_attempt_kind_metrics"
down_revision: str | None = "20261127_attempt_kind_fields"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.add_column("attempts", sa.Column("kind_metrics", JSON_TYPE, nullable=True))


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE attempts DROP COLUMN kind_metrics")
