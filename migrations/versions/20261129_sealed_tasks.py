"""Attempt tasks and trials: `sealed`, true for a task of its challenge's private part (a
benchmark challenge's split), whose results only the tenant's admins see until the close.

Every row already there belongs to a challenge without a split: not sealed.

Revision ID: 20261129_sealed_tasks
Revises: 20261128_attempt_purpose
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261129_sealed_tasks"
down_revision: str | None = "20261128_attempt_purpose"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("attempt_tasks", "trials")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(
            table, sa.Column("sealed", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("sealed")
