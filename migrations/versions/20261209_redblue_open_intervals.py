"""Red-blue interval ends may be null: a participant who won (or lost) every match has an
interval open above (or below), its matches bounding its rating on one side only. Both the
board (`redblue_ratings`) and its frozen copy (`redblue_frozen_ratings`). A downgrade closes an
open end at the mirror image of the finite one about the rating (the intervals before were
symmetric); the next interval refresh writes them anew.

Revision ID: 20261209_redblue_open_intervals
Revises: 20261208_benchmark_sealed_runs
Create Date: 2026-12-01
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261209_redblue_open_intervals"
down_revision: str | None = "20261208_benchmark_sealed_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("redblue_ratings", "redblue_frozen_ratings")
ENDS = ("rating_low", "rating_high")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            for column in ENDS:
                batch.alter_column(column, existing_type=sa.Float(), nullable=True)


def downgrade() -> None:
    for table in TABLES:
        op.execute(
            f"UPDATE {table} SET rating_high = 2 * rating - rating_low WHERE rating_high IS NULL"
        )
        op.execute(
            f"UPDATE {table} SET rating_low = 2 * rating - rating_high WHERE rating_low IS NULL"
        )
        with op.batch_alter_table(table) as batch:
            for column in ENDS:
                batch.alter_column(column, existing_type=sa.Float(), nullable=False)
