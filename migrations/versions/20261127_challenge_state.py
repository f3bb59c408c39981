"""Challenges: `state`, where a challenge is in the organizer's hands besides its schedule:
`draft` (its admins only; never listed or playable), `live` (its schedule decides whether it
is upcoming, open or closed) or `archived` (hidden from lists, read-only; its pages, boards
and exports kept). Every existing challenge is live.

Added and dropped in place on both databases.

Revision ID: 20261127_challenge_state
Revises: 20261127_attempt_kind_metrics
Create Date: 2026-11-27
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261127_challenge_state"
down_revision: str | None = "20261127_attempt_kind_metrics"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "challenges",
        sa.Column("state", sa.String(16), nullable=False, server_default="live"),
    )


def downgrade() -> None:
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE challenges DROP COLUMN state")
