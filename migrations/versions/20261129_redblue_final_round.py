"""Red-blue final rounds: `redblue_matches.final_round` (a match made by the challenge's final
round at its close, not by pairing; every existing match is not one, with an index of a
round's matches by status) and `redblue_final_rounds` (one row per challenge whose final
round was made: the close it was for, when, how many matches, when they were all played).

Revision ID: 20261129_redblue_final_round
Revises: 20261129_challenge_deleted
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261129_redblue_final_round"
down_revision: str | None = "20261129_challenge_deleted"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def _fk(column: str, target: str, name: str) -> sa.ForeignKeyConstraint:
    table = target.partition(".")[0]
    return sa.ForeignKeyConstraint(
        [column], [target], name=f"fk_{name}_{column}_{table}", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.add_column(
        "redblue_matches",
        sa.Column("final_round", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_index(
        "ix_redblue_matches_final_round",
        "redblue_matches",
        ["challenge_id", "status"],
        postgresql_where=sa.text("final_round"),
        sqlite_where=sa.text("final_round"),
    )
    t = "redblue_final_rounds"
    op.create_table(
        t,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("closes_at", WHEN, nullable=False),
        sa.Column("scheduled_at", WHEN, nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("played_at", WHEN, nullable=True),
        sa.PrimaryKeyConstraint("challenge_id", name=f"pk_{t}"),
        _fk("challenge_id", "challenges.id", t),
        _fk("tenant_id", "tenants.id", t),
    )


def downgrade() -> None:
    op.drop_table("redblue_final_rounds")
    op.drop_index("ix_redblue_matches_final_round", table_name="redblue_matches")
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    op.execute("ALTER TABLE redblue_matches DROP COLUMN final_round")
