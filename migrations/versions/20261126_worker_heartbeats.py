"""Worker heartbeats: each worker's last sign of life, for /healthz.

Revision ID: 20261126_worker_heartbeats
Revises: 20261126_outbound_budgets
Create Date: 2026-11-26 07:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261126_worker_heartbeats"
down_revision: str | None = "20261126_outbound_budgets"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "worker_heartbeats",
        sa.Column("worker_id", sa.String(length=300), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("queue", sa.String(length=100), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("worker_id", name=op.f("pk_worker_heartbeats")),
    )
    op.create_index(
        "ix_worker_heartbeats_queue_seen",
        "worker_heartbeats",
        ["queue", "last_seen_at"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_worker_heartbeats_queue_seen", table_name="worker_heartbeats")
    op.drop_table("worker_heartbeats")
