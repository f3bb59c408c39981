"""Model spend: per attempt (a running total) and per tenant per UTC day; the full reason of an
attempt's error, for the tenant admin only.

Revision ID: 20261126_outbound_budgets
Revises: 20261126_accounts
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261126_outbound_budgets"
down_revision: str | None = "20261126_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tenant_spend",
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("spent_usd", sa.Float(), server_default="0", nullable=False),
        sa.Column("calls", sa.Integer(), server_default="0", nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_tenant_spend_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("tenant_id", "day", name=op.f("pk_tenant_spend")),
    )
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("spent_usd", sa.Float(), server_default="0", nullable=False))
        batch.add_column(sa.Column("error_detail", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("error_detail")
        batch.drop_column("spent_usd")
    op.drop_table("tenant_spend")
