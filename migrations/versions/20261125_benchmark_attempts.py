"""Benchmark attempts: trials per task, per-task summaries, run record and progress.

A benchmark attempt runs many tasks, each with up to k trials, so a trial is unique per
(attempt, task, trial index); prompt attempts use task index 0. Batch operations keep the
constraint change working on SQLite, which cannot alter constraints in place.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "attempt_tasks",
        sa.Column("attempt_id", sa.Uuid(), nullable=False),
        sa.Column("task_index", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=False),
        sa.Column("meta", JSON_TYPE, nullable=True),
        sa.Column("summary", JSON_TYPE, nullable=True),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempts.id"],
            name=op.f("fk_attempt_tasks_attempt_id_attempts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_attempt_tasks_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("attempt_id", "task_index", name=op.f("pk_attempt_tasks")),
    )
    with op.batch_alter_table("attempts") as batch:
        batch.add_column(sa.Column("run_config", JSON_TYPE, nullable=True))
        batch.add_column(sa.Column("progress", JSON_TYPE, nullable=True))
    with op.batch_alter_table("challenges") as batch:
        batch.add_column(sa.Column("benchmark", JSON_TYPE, nullable=True))
    with op.batch_alter_table("trials") as batch:
        batch.add_column(sa.Column("task_index", sa.Integer(), server_default="0", nullable=False))
        batch.add_column(sa.Column("task_id", sa.String(length=200), nullable=True))
        batch.drop_constraint("uq_trials_attempt_id_trial_index", type_="unique")
        batch.create_unique_constraint(
            "uq_trials_attempt_id_task_index_trial_index",
            ["attempt_id", "task_index", "trial_index"],
        )


def downgrade() -> None:
    with op.batch_alter_table("trials") as batch:
        batch.drop_constraint("uq_trials_attempt_id_task_index_trial_index", type_="unique")
        batch.create_unique_constraint(
            "uq_trials_attempt_id_trial_index", ["attempt_id", "trial_index"]
        )
        batch.drop_column("task_id")
        batch.drop_column("task_index")
    with op.batch_alter_table("challenges") as batch:
        batch.drop_column("benchmark")
    with op.batch_alter_table("attempts") as batch:
        batch.drop_column("progress")
        batch.drop_column("run_config")
    op.drop_table("attempt_tasks")
