"""Attempts: `turn`, their place in the workers' queue, so that workers serve tenants in turn
rather than in the order attempts were sent; and two small indexes over the unfinished
attempts (queued or running): the queue in turn order, and each tenant's share of it.

Attempts made before take turn 0: those still queued go first, as they would have.

Revision ID: 20261211_attempt_turns
Revises: 20261211_scores_at_freeze
Create Date: 2026-12-11
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261211_attempt_turns"
down_revision: str | None = "20261211_scores_at_freeze"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_UNFINISHED = sa.text("status IN ('queued', 'running')")


def upgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("turn", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_index(
        "ix_attempts_unfinished_turn",
        "attempts",
        ["turn", "created_at"],
        postgresql_where=_UNFINISHED,
        sqlite_where=_UNFINISHED,
    )
    op.create_index(
        "ix_attempts_unfinished_tenant_turn",
        "attempts",
        ["tenant_id", "turn"],
        postgresql_where=_UNFINISHED,
        sqlite_where=_UNFINISHED,
    )


def downgrade() -> None:
    op.drop_index("ix_attempts_unfinished_tenant_turn", table_name="attempts")
    op.drop_index("ix_attempts_unfinished_turn", table_name="attempts")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("turn")
