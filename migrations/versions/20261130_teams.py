"""Teams: `teams` (a team of one challenge; its id is the participant row that plays for it,
its invite code kept as a SHA-256) and `team_members` (a participant in at most one team per
challenge), and `submitted_by_id` on attempts and red-blue entries (the member who submitted a
team's entry; every existing row was a participant's own, so it stays null). A downgrade drops
the teams; their participant rows stay, with their entries, as handles that cannot sign in.

Revision ID: 20261130_teams
Revises: 20261129_redblue_final_round
Create Date: 2026-11-30
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261130_teams"
down_revision: str | None = "20261129_redblue_final_round"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
ENTRY_TABLES = ("attempts", "redblue_defenses", "redblue_attacks")


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    referred = target.partition(".")[0]
    return sa.ForeignKeyConstraint(
        [column], [target], name=f"fk_{table}_{column}_{referred}", ondelete="CASCADE"
    )


def upgrade() -> None:
    t = "teams"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("invite_code_hash", sa.String(64), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        sa.UniqueConstraint("invite_code_hash", name=f"uq_{t}_invite_code_hash"),
        _fk(t, "id", "participants.id"),
        _fk(t, "tenant_id", "tenants.id"),
        _fk(t, "challenge_id", "challenges.id"),
    )
    op.create_index("ix_teams_tenant_id_challenge_id", t, ["tenant_id", "challenge_id"])
    m = "team_members"
    op.create_table(
        m,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("member_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("team_id", sa.Uuid(), nullable=False),
        sa.Column("joined_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("challenge_id", "member_id", name=f"pk_{m}"),
        _fk(m, "challenge_id", "challenges.id"),
        _fk(m, "member_id", "participants.id"),
        _fk(m, "tenant_id", "tenants.id"),
        _fk(m, "team_id", "teams.id"),
    )
    op.create_index("ix_team_members_team_id", m, ["team_id"])
    for table in ENTRY_TABLES:
        op.add_column(table, sa.Column("submitted_by_id", sa.Uuid(), nullable=True))


def downgrade() -> None:
    for table in ENTRY_TABLES:
        # SQLite 3.35+ drops a column in place; alembic's own drop_column would rebuild the table.
        op.execute(f"ALTER TABLE {table} DROP COLUMN submitted_by_id")
    op.drop_table("team_members")
    op.drop_table("teams")
