"""The benchmark kind's `benchmark_final_marks`: the submissions participants mark final on
a split challenge, which its private board ranks.

Revision ID: 20261129_benchmark_final_marks
Revises: 20261129_sealed_tasks
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261129_benchmark_final_marks"
down_revision: str | None = "20261129_sealed_tasks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "benchmark_final_marks",
        sa.Column(
            "attempt_id",
            sa.Uuid(),
            sa.ForeignKey("attempts.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "tenant_id", sa.Uuid(), sa.ForeignKey("tenants.id", ondelete="CASCADE"), nullable=False
        ),
        sa.Column(
            "challenge_id",
            sa.Uuid(),
            sa.ForeignKey("challenges.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "participant_id",
            sa.Uuid(),
            sa.ForeignKey("participants.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("marked_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index(
        "ix_benchmark_final_marks_participant",
        "benchmark_final_marks",
        ["challenge_id", "participant_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_benchmark_final_marks_participant", table_name="benchmark_final_marks")
    op.drop_table("benchmark_final_marks")
