"""Attempts' scores as they stood at a freeze: `attempt_scores_at_freeze`, one row per attempt
that a rescore scored again in its challenge's freeze, with the `freeze_at` it belongs to and
the score and its details as they were then (what readers who see the challenge frozen read
until the close).

Revision ID: 20261211_scores_at_freeze
Revises: 20261211_competition_pages
Create Date: 2026-12-11
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261211_scores_at_freeze"
down_revision: str | None = "20261211_competition_pages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
TABLE = "attempt_scores_at_freeze"


def upgrade() -> None:
    op.create_table(
        TABLE,
        sa.Column("attempt_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("freeze_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("score_details", JSON_TYPE, nullable=True),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempts.id"],
            name=f"fk_{TABLE}_attempt_id_attempts",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=f"fk_{TABLE}_tenant_id_tenants",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("attempt_id", name=f"pk_{TABLE}"),
    )


def downgrade() -> None:
    op.drop_table(TABLE)
