"""The benchmark kind's `benchmark_sealed_runs`: the private part's run of each scored attempt
on a split challenge, run under a lease of its own once the attempt (its public part) has
completed, so that nothing a participant sees of the attempt waits for it.

Revision ID: 20261208_benchmark_sealed_runs
Revises: 20261207_account_mail
Create Date: 2026-12-08
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261208_benchmark_sealed_runs"
down_revision: str | None = "20261207_account_mail"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "benchmark_sealed_runs",
        sa.Column(
            "id", sa.Uuid(), sa.ForeignKey("attempts.id", ondelete="CASCADE"), primary_key=True
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
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("run_config", JSON_TYPE, nullable=True),
        sa.Column("progress", JSON_TYPE, nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_detail", sa.Text(), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("enqueued_at", WHEN, nullable=False),
        sa.Column("finished_at", WHEN, nullable=True),
        sa.Column("started_at", WHEN, nullable=True),
        sa.Column("lease_expires_at", WHEN, nullable=True),
        sa.Column("run_token", sa.Uuid(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
    )
    op.create_index(
        "ix_benchmark_sealed_runs_status_enqueued",
        "benchmark_sealed_runs",
        ["status", "enqueued_at"],
    )
    op.create_index(
        "ix_benchmark_sealed_runs_status_lease",
        "benchmark_sealed_runs",
        ["status", "lease_expires_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_benchmark_sealed_runs_status_lease", table_name="benchmark_sealed_runs")
    op.drop_index("ix_benchmark_sealed_runs_status_enqueued", table_name="benchmark_sealed_runs")
    op.drop_table("benchmark_sealed_runs")
