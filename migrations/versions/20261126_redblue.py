"""Red-blue competitions: defenses, attacks, matches, stored ratings and boards.

Revision ID: 20261126_redblue
Revises: 20261126_kind_sections
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261126_redblue"
down_revision: str | None = "20261126_kind_sections"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
WHEN = sa.DateTime(timezone=True)


def _fk(column: str, table: str, name: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{table}.id"], name=f"fk_{name}_{column}_{table}", ondelete="CASCADE"
    )


def _lease_columns() -> list[sa.Column]:  # type: ignore[type-arg]
    return [
        sa.Column("started_at", WHEN, nullable=True),
        sa.Column("finished_at", WHEN, nullable=True),
        sa.Column("lease_expires_at", WHEN, nullable=True),
        sa.Column("run_token", sa.Uuid(), nullable=True),
        sa.Column("run_count", sa.Integer(), nullable=False),
    ]


def upgrade() -> None:
    t = "redblue_defenses"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("error_detail", sa.Text(), nullable=True),
        sa.Column("self_test_output", sa.Text(), nullable=True),
        sa.Column("self_test_verdict", JSON_TYPE, nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request_fingerprint", sa.String(64), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("enqueued_at", WHEN, nullable=False),
        sa.Column("paired_at", WHEN, nullable=True),
        *_lease_columns(),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _fk("tenant_id", "tenants", t),
        _fk("challenge_id", "challenges", t),
        _fk("participant_id", "participants", t),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name=f"uq_{t}_tenant_id_idempotency_key"
        ),
    )
    op.create_index(
        "ix_redblue_defenses_challenge_status_created", t, ["challenge_id", "status", "created_at"]
    )
    op.create_index(
        "ix_redblue_defenses_challenge_participant", t, ["challenge_id", "participant_id"]
    )
    op.create_index("ix_redblue_defenses_status_enqueued", t, ["status", "enqueued_at"])

    t = "redblue_attacks"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("prompt", sa.Text(), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request_fingerprint", sa.String(64), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("enqueued_at", WHEN, nullable=False),
        sa.Column("paired_at", WHEN, nullable=True),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _fk("tenant_id", "tenants", t),
        _fk("challenge_id", "challenges", t),
        _fk("participant_id", "participants", t),
        sa.UniqueConstraint(
            "tenant_id", "idempotency_key", name=f"uq_{t}_tenant_id_idempotency_key"
        ),
    )
    op.create_index("ix_redblue_attacks_challenge_created", t, ["challenge_id", "created_at"])
    op.create_index(
        "ix_redblue_attacks_challenge_participant", t, ["challenge_id", "participant_id"]
    )
    op.create_index("ix_redblue_attacks_paired_enqueued", t, ["paired_at", "enqueued_at"])

    t = "redblue_matches"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("attack_id", sa.Uuid(), nullable=False),
        sa.Column("defense_id", sa.Uuid(), nullable=False),
        sa.Column("red_participant_id", sa.Uuid(), nullable=False),
        sa.Column("blue_participant_id", sa.Uuid(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("system_prompt", sa.Text(), nullable=True),
        sa.Column("user_message", sa.Text(), nullable=True),
        sa.Column("output", sa.Text(), nullable=True),
        sa.Column("verdicts", JSON_TYPE, nullable=True),
        sa.Column("breached", JSON_TYPE, nullable=True),
        sa.Column("red_points", sa.Integer(), nullable=True),
        sa.Column("blue_points", sa.Integer(), nullable=True),
        sa.Column("attack_won", sa.Boolean(), nullable=True),
        sa.Column("tokens_total", sa.BigInteger(), nullable=True),
        sa.Column("elapsed_ms", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("spent_usd", sa.Float(), server_default="0", nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_detail", sa.Text(), nullable=True),
        sa.Column("created_at", WHEN, nullable=False),
        sa.Column("enqueued_at", WHEN, nullable=False),
        *_lease_columns(),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _fk("tenant_id", "tenants", t),
        _fk("challenge_id", "challenges", t),
        sa.ForeignKeyConstraint(
            ["attack_id"],
            ["redblue_attacks.id"],
            name=f"fk_{t}_attack_id_redblue_attacks",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["defense_id"],
            ["redblue_defenses.id"],
            name=f"fk_{t}_defense_id_redblue_defenses",
            ondelete="CASCADE",
        ),
        _fk("red_participant_id", "participants", t),
        _fk("blue_participant_id", "participants", t),
        sa.UniqueConstraint("attack_id", "defense_id", name=f"uq_{t}_attack_id_defense_id"),
    )
    op.create_index("ix_redblue_matches_challenge_created", t, ["challenge_id", "created_at"])
    op.create_index("ix_redblue_matches_challenge_status", t, ["challenge_id", "status"])
    op.create_index("ix_redblue_matches_defense", t, ["defense_id"])
    op.create_index("ix_redblue_matches_red", t, ["challenge_id", "red_participant_id"])
    op.create_index("ix_redblue_matches_blue", t, ["challenge_id", "blue_participant_id"])
    op.create_index("ix_redblue_matches_status_enqueued", t, ["status", "enqueued_at"])
    op.create_index("ix_redblue_matches_status_lease", t, ["status", "lease_expires_at"])

    t = "redblue_ratings"
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
        sa.PrimaryKeyConstraint("challenge_id", "side", "participant_id", name=f"pk_{t}"),
        _fk("challenge_id", "challenges", t),
        _fk("participant_id", "participants", t),
        _fk("tenant_id", "tenants", t),
    )
    op.create_index(
        "ix_redblue_ratings_board_position", t, ["challenge_id", "side", "position"], unique=True
    )

    t = "redblue_boards"
    op.create_table(
        t,
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("dirty", sa.Boolean(), nullable=False),
        sa.Column("dirty_since", WHEN, nullable=True),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("written_generation", sa.Integer(), nullable=False),
        sa.Column("red_points", sa.BigInteger(), nullable=False),
        sa.Column("blue_points", sa.BigInteger(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("computed_at", WHEN, nullable=True),
        sa.PrimaryKeyConstraint("challenge_id", name=f"pk_{t}"),
        _fk("challenge_id", "challenges", t),
        _fk("tenant_id", "tenants", t),
    )


def downgrade() -> None:
    for table in (
        "redblue_boards",
        "redblue_ratings",
        "redblue_matches",
        "redblue_attacks",
        "redblue_defenses",
    ):
        op.drop_table(table)
