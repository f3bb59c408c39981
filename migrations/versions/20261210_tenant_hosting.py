"""Self-serve hosting: tenants' status and quotas, and the platform admin's web sessions.

- `tenants`: `status` (`pending`, `active`, `suspended`): `active` for every existing tenant,
  so nothing of theirs closes; the quotas a platform admin sets, `max_challenges`,
  `max_participants`, `max_attempts_per_day` and `daily_cost_budget_usd`, none at first.
- `tenant_spend`: `attempts`, the entries of the day counted while a tenant has a daily
  quota of them.
- `platform_sessions`: browsers signed in to the platform admin's pages (the SHA-256 of each
  session's token, and of the admin token it was opened with).

Columns are added and dropped in place on both databases (SQLite 3.35+ drops a column
without rebuilding the table).

Revision ID: 20261210_tenant_hosting
Revises: 20261209_redblue_open_intervals
Create Date: 2026-12-08
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261210_tenant_hosting"
down_revision: str | None = "20261209_redblue_open_intervals"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
QUOTAS = (
    ("max_challenges", sa.Integer()),
    ("max_participants", sa.Integer()),
    ("max_attempts_per_day", sa.Integer()),
    ("daily_cost_budget_usd", sa.Float()),
)


def upgrade() -> None:
    op.add_column(
        "tenants", sa.Column("status", sa.String(16), nullable=False, server_default="active")
    )
    for name, kind in QUOTAS:
        op.add_column("tenants", sa.Column(name, kind, nullable=True))
    op.add_column(
        "tenant_spend",
        sa.Column("attempts", sa.Integer(), nullable=False, server_default="0"),
    )

    t = "platform_sessions"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("admin_token_hash", sa.String(64), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("expires_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        sa.UniqueConstraint("token_hash", name=f"uq_{t}_token_hash"),
    )
    op.create_index(f"ix_{t}_expires_at", t, ["expires_at"])


def downgrade() -> None:
    op.drop_table("platform_sessions")
    op.execute("ALTER TABLE tenant_spend DROP COLUMN attempts")
    for name, _ in reversed(QUOTAS):
        op.execute(f"ALTER TABLE tenants DROP COLUMN {name}")
    op.execute("ALTER TABLE tenants DROP COLUMN status")
