"""Challenges: `deleted_at`, so a deleted challenge is kept (hidden, its work not run) until
its tenant's admins restore or purge it; the unique slug per tenant becomes a unique index over
the challenges not deleted, so a deleted challenge's slug may be taken again.

Revision ID: 20261129_challenge_deleted
Revises: 20261129_benchmark_final_marks
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261129_challenge_deleted"
down_revision: str | None = "20261129_benchmark_final_marks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_NOT_DELETED = sa.text("deleted_at IS NULL")


def upgrade() -> None:
    with op.batch_alter_table("challenges") as batch:
        batch.add_column(sa.Column("deleted_at", sa.DateTime(timezone=True), nullable=True))
        batch.drop_constraint("uq_challenges_tenant_id_slug", type_="unique")
    op.create_index(
        "uq_challenges_tenant_id_slug",
        "challenges",
        ["tenant_id", "slug"],
        unique=True,
        postgresql_where=_NOT_DELETED,
        sqlite_where=_NOT_DELETED,
    )


def downgrade() -> None:
    # The older schema has no deleted challenges: they are purged, as a delete did then.
    op.execute("DELETE FROM challenges WHERE deleted_at IS NOT NULL")
    op.drop_index("uq_challenges_tenant_id_slug", table_name="challenges")
    with op.batch_alter_table("challenges") as batch:
        batch.drop_column("deleted_at")
        batch.create_unique_constraint("uq_challenges_tenant_id_slug", ["tenant_id", "slug"])
