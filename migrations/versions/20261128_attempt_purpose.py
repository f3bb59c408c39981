"""Attempts: `purpose` (`entry`, `practice`, `test`), so unscored runs (a participant's
practice, a tenant admin's test run) go through the attempts' runner without reaching boards,
limits, rescoring or exports; `participant_id` may be null (a test run has no participant).

Every attempt already there is an entry. On SQLite the column's nullability changes by
rebuilding the table (batch mode); PostgreSQL changes it in place.

Revision ID: 20261128_attempt_purpose
Revises: 20261128_board_freeze
Create Date: 2026-11-28
"""

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op
from alembic.operations import BatchOperations
from sqlalchemy.exc import SAWarning

revision: str = "20261128_attempt_purpose"
down_revision: str | None = "20261128_board_freeze"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


@contextmanager
def _rebuilding_attempts() -> Iterator[BatchOperations]:
    """The attempts table altered in batch mode. SQLite rebuilds it, reflecting the tables it
    refers to; the participants' index on lower(handle) is one SQLAlchemy cannot reflect, and
    says so, but that table is only read, never rebuilt, so its index stays."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Skipped unsupported reflection", SAWarning)
        with op.batch_alter_table("attempts") as batch:
            yield batch


def upgrade() -> None:
    with _rebuilding_attempts() as batch:
        batch.add_column(
            sa.Column("purpose", sa.String(16), nullable=False, server_default="entry")
        )
        batch.alter_column("participant_id", existing_type=sa.Uuid(), nullable=True)


def downgrade() -> None:
    # Unscored runs have no place in the older schema (test runs have no participant).
    op.execute("DELETE FROM attempts WHERE purpose <> 'entry'")
    with _rebuilding_attempts() as batch:
        batch.alter_column("participant_id", existing_type=sa.Uuid(), nullable=False)
        batch.drop_column("purpose")
