"""Initial schema: tenants, keys, participants, challenges, attempts, trials, leaderboards.

The leaderboard keeps one row per (challenge, participant), ordered by one index, so a page is
an index range scan whatever the number of attempts. Trials are unique per (attempt, index) so
a redelivered task cannot add a trial twice.

Revision ID: 0001
Revises:
Create Date: 2026-11-25 21:28:34.830211
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

# JSONB on PostgreSQL (indexable, compact), plain JSON on SQLite.
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scorer_plugins",
        sa.Column("plugin_id", sa.String(length=100), nullable=False),
        sa.Column("entrypoint", sa.String(length=300), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("default_config", JSON_TYPE, nullable=False),
        sa.Column("config_schema", JSON_TYPE, nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("plugin_id", name=op.f("pk_scorer_plugins")),
    )
    op.create_table(
        "tenants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenants")),
        sa.UniqueConstraint("slug", name=op.f("uq_tenants_slug")),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("key_prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_api_keys_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("key_hash", name=op.f("uq_api_keys_key_hash")),
    )
    op.create_index(op.f("ix_api_keys_tenant_id"), "api_keys", ["tenant_id"], unique=False)
    op.create_table(
        "challenges",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("target", JSON_TYPE, nullable=True),
        sa.Column("verifier", JSON_TYPE, nullable=True),
        sa.Column("evaluation", JSON_TYPE, nullable=False),
        sa.Column("scoring", JSON_TYPE, nullable=False),
        sa.Column("limits", JSON_TYPE, nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("opens_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closes_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_challenges_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_challenges")),
        sa.UniqueConstraint("tenant_id", "slug", name=op.f("uq_challenges_tenant_id_slug")),
    )
    op.create_index(op.f("ix_challenges_tenant_id"), "challenges", ["tenant_id"], unique=False)
    op.create_table(
        "participants",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("handle", sa.String(length=64), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_participants_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_participants")),
        sa.UniqueConstraint("tenant_id", "handle", name=op.f("uq_participants_tenant_id_handle")),
    )
    op.create_index(op.f("ix_participants_tenant_id"), "participants", ["tenant_id"], unique=False)
    op.create_table(
        "attempts",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=True),
        sa.Column("model_spec", JSON_TYPE, nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("request_fingerprint", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("enqueued_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lease_expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("run_token", sa.Uuid(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("succeeded", sa.Boolean(), nullable=True),
        sa.Column("tokens_total", sa.BigInteger(), nullable=True),
        sa.Column("elapsed_ms", sa.BigInteger(), nullable=True),
        sa.Column("rating", sa.Float(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("metrics", JSON_TYPE, nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("score_details", JSON_TYPE, nullable=True),
        sa.ForeignKeyConstraint(
            ["challenge_id"],
            ["challenges.id"],
            name=op.f("fk_attempts_challenge_id_challenges"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["participant_id"],
            ["participants.id"],
            name=op.f("fk_attempts_participant_id_participants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_attempts_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attempts")),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name=op.f("uq_attempts_tenant_id_idempotency_key")
        ),
    )
    op.create_index(
        "ix_attempts_challenge_participant_created",
        "attempts",
        ["challenge_id", "participant_id", "created_at"],
        unique=False,
    )
    op.create_index(
        op.f("ix_attempts_participant_id"), "attempts", ["participant_id"], unique=False
    )
    op.create_index(
        "ix_attempts_status_lease", "attempts", ["status", "lease_expires_at"], unique=False
    )
    op.create_index(
        "ix_attempts_tenant_created", "attempts", ["tenant_id", "created_at"], unique=False
    )
    op.create_table(
        "leaderboard_entries",
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
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempts.id"],
            name=op.f("fk_leaderboard_entries_attempt_id_attempts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["challenge_id"],
            ["challenges.id"],
            name=op.f("fk_leaderboard_entries_challenge_id_challenges"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["participant_id"],
            ["participants.id"],
            name=op.f("fk_leaderboard_entries_participant_id_participants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_leaderboard_entries_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "challenge_id", "participant_id", name=op.f("pk_leaderboard_entries")
        ),
    )
    op.create_index(
        "ix_leaderboard_entries_rank",
        "leaderboard_entries",
        ["challenge_id", "rank_key", "rank_tiebreak", "attempt_created_at_ms", "attempt_id"],
        unique=False,
    )
    op.create_table(
        "trials",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("attempt_id", sa.Uuid(), nullable=False),
        sa.Column("trial_index", sa.Integer(), nullable=False),
        sa.Column("success", sa.Boolean(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("actor", JSON_TYPE, nullable=False),
        sa.Column("judge", JSON_TYPE, nullable=False),
        sa.Column("critic", JSON_TYPE, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["attempt_id"],
            ["attempts.id"],
            name=op.f("fk_trials_attempt_id_attempts"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_trials_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_trials")),
        sa.UniqueConstraint(
            "attempt_id", "trial_index", name=op.f("uq_trials_attempt_id_trial_index")
        ),
    )


def downgrade() -> None:
    op.drop_table("trials")
    op.drop_index("ix_leaderboard_entries_rank", table_name="leaderboard_entries")
    op.drop_table("leaderboard_entries")
    op.drop_index("ix_attempts_tenant_created", table_name="attempts")
    op.drop_index("ix_attempts_status_lease", table_name="attempts")
    op.drop_index(op.f("ix_attempts_participant_id"), table_name="attempts")
    op.drop_index("ix_attempts_challenge_participant_created", table_name="attempts")
    op.drop_table("attempts")
    op.drop_index(op.f("ix_participants_tenant_id"), table_name="participants")
    op.drop_table("participants")
    op.drop_index(op.f("ix_challenges_tenant_id"), table_name="challenges")
    op.drop_table("challenges")
    op.drop_index(op.f("ix_api_keys_tenant_id"), table_name="api_keys")
    op.drop_table("api_keys")
    op.drop_table("tenants")
    op.drop_table("scorer_plugins")
