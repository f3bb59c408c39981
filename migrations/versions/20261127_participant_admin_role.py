"""Participants: `is_admin`, the admin role a tenant admin gives a participant account, so
that it signs in to the tenant's admin pages with its handle and password (API keys stay for
automation). Nobody has it at first.

Added and dropped in place on both databases.

Revision ID: 20261127_participant_admin_role
Revises: 20261127_challenge_state
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261127_participant_admin_role"
down_revision: str | None = "20261127_challenge_state"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "participants",
        sa.Column("is_admin", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE participants DROP COLUMN is_admin")
