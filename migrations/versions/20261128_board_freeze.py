"""Board freezes and baselines.

A challenge's `freeze_at`, and the snapshot of its boards taken when the freeze begins
(`board_freezes`, with the rows of each board kind's frozen table:
`leaderboard_frozen_entries`, `redblue_frozen_ratings`). No challenge has a freeze yet.

Baselines: attempts, defenses and attacks marked `baseline` (an admin's reference entry), and
the board rows they hold. Every existing entry and row is not one.

Revision ID: 20261128_board_freeze
Revises: 20261127_participant_admin_role
Create Date: 2026-11-28
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261128_board_freeze"
down_revision: str | None = "20261127_participant_admin_role"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _fk(column: str, target: str, name: str) -> sa.ForeignKeyConstraint:
    table = target.partition(".")[0]
    return sa.ForeignKeyConstraint(
        [column], [target], name=f"fk_{name}_{column}_{table}", ondelete="CASCADE"
    )


# The tables that gain a `baseline` flag: entries, and the board rows they hold.
BASELINE_TABLES = (
    "attempts",
    "redblue_defenses",
    "redblue_attacks",
    "leaderboard_entries",
    "redblue_ratings",
)


def _baseline() -> sa.Column[bool]:
    return sa.Column("baseline", sa.Boolean(), nullable=False, server_default=sa.false())


def _baseline_index(table: str) -> None:
    """The few baseline rows of a leaderboard in its order (how many lie before a page)."""
    op.create_index(
        f"ix_{table}_baselines",
        table,
        ["challenge_id", "rank_key", "rank_tiebreak", "attempt_created_at_ms", "attempt_id"],
        postgresql_where=sa.text("baseline"),
        sqlite_where=sa.text("baseline"),
    )


def upgrade() -> None:
    op.add_column("challenges", sa.Column("freeze_at", WHEN, nullable=True))
    for table in BASELINE_TABLES:
        op.add_column(table, _baseline())
    _baseline_index("leaderboard_entries")
    # A board's recompute reads its baseline entries (few) by these.
    for table in ("redblue_defenses", "redblue_attacks"):
        op.create_index(
            f"ix_{table}_baselines",
            table,
            ["challenge_id", "participant_id"],
            postgresql_where=sa.text("baseline"),
            sqlite_where=sa.text("baseline"),
        )

    t = "board_freezes"
    op.create_table(
        t,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("freeze_at", WHEN, nullable=False),
        sa.Column("taken_at", WHEN, nullable=False),
        sa.Column("figures", JSON_TYPE, nullable=True),
        sa.PrimaryKeyConstraint("challenge_id", name=f"pk_{t}"),
        _fk("challenge_id", "challenges.id", t),
        _fk("tenant_id", "tenants.id", t),
    )

    t = "leaderboard_frozen_entries"
    op.create_table(
        t,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("attempt_id", sa.Uuid(), nullable=False),
        sa.Column("rank_key", sa.Float(), nullable=False),
        sa.Column("rank_tiebreak", sa.Float(), nullable=False),
        sa.Column("attempt_created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("succeeded", sa.Boolean(), nullable=True),
        sa.Column("tokens_total", sa.BigInteger(), nullable=True),
        sa.Column("elapsed_ms", sa.BigInteger(), nullable=True),
        sa.Column("rating", sa.Float(), nullable=True),
        _baseline(),
        sa.Column("updated_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("challenge_id", "participant_id", name=f"pk_{t}"),
        _fk("challenge_id", "board_freezes.challenge_id", t),
        _fk("participant_id", "participants.id", t),
        _fk("tenant_id", "tenants.id", t),
        _fk("attempt_id", "attempts.id", t),
    )
    op.create_index(
        "ix_leaderboard_frozen_entries_rank",
        t,
        ["challenge_id", "rank_key", "rank_tiebreak", "attempt_created_at_ms", "attempt_id"],
    )
    _baseline_index(t)

    t = "redblue_frozen_ratings"
    op.create_table(
        t,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("side", sa.String(8), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Integer(), nullable=False),
        sa.Column("rating", sa.Float(), nullable=False),
        sa.Column("rating_low", sa.Float(), nullable=False),
        sa.Column("rating_high", sa.Float(), nullable=False),
        sa.Column("points", sa.BigInteger(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        _baseline(),
        sa.PrimaryKeyConstraint("challenge_id", "side", "participant_id", name=f"pk_{t}"),
        _fk("challenge_id", "board_freezes.challenge_id", t),
        _fk("participant_id", "participants.id", t),
        _fk("tenant_id", "tenants.id", t),
    )
    op.create_index(
        "ix_redblue_frozen_ratings_board_position",
        t,
        ["challenge_id", "side", "position"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("ix_redblue_frozen_ratings_board_position", table_name="redblue_frozen_ratings")
    op.drop_table("redblue_frozen_ratings")
    op.drop_index(
        "ix_leaderboard_frozen_entries_baselines", table_name="leaderboard_frozen_entries"
    )
    op.drop_index("ix_leaderboard_frozen_entries_rank", table_name="leaderboard_frozen_entries")
    op.drop_table("leaderboard_frozen_entries")
    op.drop_table("board_freezes")
    op.drop_index("ix_leaderboard_entries_baselines", table_name="leaderboard_entries")
    for table in ("redblue_defenses", "redblue_attacks"):
        op.drop_index(f"ix_{table}_baselines", table_name=table)
    # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
    for table in reversed(BASELINE_TABLES):
        op.execute(f"ALTER TABLE {table} DROP COLUMN baseline")
    op.execute("ALTER TABLE challenges DROP COLUMN freeze_at")
