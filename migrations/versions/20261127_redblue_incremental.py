"""Red-blue ratings recomputed incrementally: matches numbered as they land on their board, and
the board's cursors, interval refresh and pacing.

Completed matches already there are numbered 0 (landed before any cursor); every board has
rated them (its ratings came from every completed match) and its intervals with them.

Revision ID: 20261127_redblue_incremental
Revises: 20261126_redblue
Create Date: 2026-11-27 08:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261127_redblue_incremental"
down_revision: str | None = "20261126_redblue"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def _board_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("landed_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("rated_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("intervals_seq", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("intervals_computed_at", WHEN, nullable=True),
        sa.Column("recompute_due_at", WHEN, nullable=True),
        sa.Column("intervals_due_at", WHEN, nullable=True),
        sa.Column("recompute_seconds", sa.Float(), nullable=True),
        sa.Column("intervals_seconds", sa.Float(), nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("redblue_matches") as batch:
        batch.add_column(sa.Column("board_seq", sa.BigInteger(), nullable=True))
    op.create_index(
        "ix_redblue_matches_challenge_board_seq",
        "redblue_matches",
        ["challenge_id", "board_seq"],
        unique=False,
    )
    with op.batch_alter_table("redblue_boards") as batch:
        for column in _board_columns():
            batch.add_column(column)
    op.execute("UPDATE redblue_matches SET board_seq = 0 WHERE status = 'completed'")
    op.execute("UPDATE redblue_boards SET intervals_computed_at = computed_at")


def downgrade() -> None:
    with op.batch_alter_table("redblue_boards") as batch:
        for column in reversed(_board_columns()):
            batch.drop_column(column.name)
    op.drop_index("ix_redblue_matches_challenge_board_seq", table_name="redblue_matches")
    with op.batch_alter_table("redblue_matches") as batch:
        batch.drop_column("board_seq")
