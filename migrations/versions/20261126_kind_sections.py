"""Challenges: `kind_sections`, the configuration sections of a challenge's kind that have no
column of their own (the built-in kinds' sections do: target, verifier, benchmark,
evaluation), so that a new kind stores its configuration without a migration of its own.

Added and dropped in place on both databases: on SQLite, rebuilding the table (batch mode)
would drop the old copy, and with foreign keys on that deletes every attempt with it.

Revision ID: 20261126_kind_sections
Revises: 20261126_worker_heartbeats
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261126_kind_sections"
down_revision: str | None = "20261126_worker_heartbeats"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.add_column("challenges", sa.Column("kind_sections", JSON_TYPE, nullable=True))


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE challenges DROP COLUMN kind_sections")
