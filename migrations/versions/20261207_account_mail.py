"""Accounts that recover, and mail.

- `participants`: `email` (an account's address, optional), `email_confirmed_at` (when its
  confirmation link was opened) and `notify_by_mail` (notification emails, on at first), with
  an index on (tenant_id, lower(email)) for password resets asked by address. Existing
  participants have no address.
- `tenants`: `email_policy` (`optional`, `required`, `confirmed`): `optional` for every
  existing tenant, so nobody's play changes.
- `account_tokens`: the SHA-256 of each single-use link's secret (an address confirmation, a
  password reset), its account, the address it went to and when it expires.
- `outbound_mail`: the outbox; a row per message, leased by the worker that sends it.

Columns are added and dropped in place on both databases (SQLite 3.35+ drops a column
without rebuilding the table).

Revision ID: 20261207_account_mail
Revises: 20261130_challenge_sections
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261207_account_mail"
down_revision: str | None = "20261130_challenge_sections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)


def _fk(table: str, column: str, target: str) -> sa.ForeignKeyConstraint:
    referred = target.partition(".")[0]
    return sa.ForeignKeyConstraint(
        [column], [target], name=f"fk_{table}_{column}_{referred}", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.add_column("participants", sa.Column("email", sa.String(254), nullable=True))
    op.add_column("participants", sa.Column("email_confirmed_at", WHEN, nullable=True))
    op.add_column(
        "participants",
        sa.Column("notify_by_mail", sa.Boolean(), nullable=False, server_default=sa.true()),
    )
    op.create_index(
        "ix_participants_tenant_id_lower_email",
        "participants",
        ["tenant_id", sa.text("lower(email)")],
    )
    op.add_column(
        "tenants",
        sa.Column("email_policy", sa.String(16), nullable=False, server_default="optional"),
    )

    t = "account_tokens"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("purpose", sa.String(20), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("expires_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        sa.UniqueConstraint("token_hash", name=f"uq_{t}_token_hash"),
        _fk(t, "tenant_id", "tenants.id"),
        _fk(t, "participant_id", "participants.id"),
    )
    op.create_index(f"ix_{t}_tenant_id", t, ["tenant_id"])
    op.create_index(f"ix_{t}_participant_id", t, ["participant_id"])

    m = "outbound_mail"
    op.create_table(
        m,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("topic", sa.String(40), nullable=False),
        sa.Column("recipient", sa.String(254), nullable=False),
        sa.Column("subject", sa.String(250), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("enqueued_at", WHEN, nullable=False),
        sa.Column("next_attempt_at", WHEN, nullable=True),
        sa.Column("finished_at", WHEN, nullable=True),
        sa.Column("error_detail", sa.String(500), nullable=True),
        sa.Column("delivery", sa.String(300), nullable=True),
        sa.Column("started_at", WHEN, nullable=True),
        sa.Column("lease_expires_at", WHEN, nullable=True),
        sa.Column("run_token", sa.Uuid(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{m}"),
        _fk(m, "tenant_id", "tenants.id"),
    )
    op.create_index(f"ix_{m}_tenant_id_created_at", m, ["tenant_id", "created_at"])
    op.create_index(f"ix_{m}_status_next_attempt_at", m, ["status", "next_attempt_at"])


def downgrade() -> None:
    op.drop_table("outbound_mail")
    op.drop_table("account_tokens")
    op.execute("ALTER TABLE tenants DROP COLUMN email_policy")
    op.drop_index("ix_participants_tenant_id_lower_email", table_name="participants")
    for column in ("notify_by_mail", "email_confirmed_at", "email"):
        op.execute(f"ALTER TABLE participants DROP COLUMN {column}")
