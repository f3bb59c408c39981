"""Competition pages: a challenge's pages and rules version, rules acceptances,
announcements, and the notices sent of a challenge's close and reveal.

- `challenges`: `pages` (JSON, JSONB on PostgreSQL; null: none written) and `rules_sha256`
  (the version of the rules participants accept; null: no rules). Existing challenges have
  neither, so nobody is asked to accept anything.
- `rules_acceptances`, `announcements`, `challenge_notices`: new tables.
- Every challenge already closed gets its `closed` and `revealed` notices recorded as sent
  (to nobody), so the notices' sweep does not mail about closes that happened before it
  existed.

Columns are added and dropped in place on both databases.

Revision ID: 20261211_competition_pages
Revises: 20261210_tenant_hosting
Create Date: 2026-12-11
"""

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "20261211_competition_pages"
down_revision: str | None = "20261210_tenant_hosting"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

WHEN = sa.DateTime(timezone=True)
JSON_TYPE = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")
# The events whose notices a close already past is recorded with.
EVENTS = ("closed", "revealed")
BATCH = 1000


def _tenant_fk(t: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["tenant_id"], ["tenants.id"], name=f"fk_{t}_tenant_id_tenants", ondelete="CASCADE"
    )


def _challenge_fk(t: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["challenge_id"],
        ["challenges.id"],
        name=f"fk_{t}_challenge_id_challenges",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.add_column("challenges", sa.Column("pages", JSON_TYPE, nullable=True))
    op.add_column("challenges", sa.Column("rules_sha256", sa.String(64), nullable=True))

    t = "rules_acceptances"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=False),
        sa.Column("rules_sha256", sa.String(64), nullable=False),
        sa.Column("accepted_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _tenant_fk(t),
        _challenge_fk(t),
        sa.ForeignKeyConstraint(
            ["participant_id"],
            ["participants.id"],
            name=f"fk_{t}_participant_id_participants",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "challenge_id",
            "participant_id",
            "rules_sha256",
            name=f"uq_{t}_challenge_id_participant_id_rules_sha256",
        ),
    )
    op.create_index(f"ix_{t}_tenant_id", t, ["tenant_id"])
    op.create_index(f"ix_{t}_participant_id", t, ["participant_id"])

    t = "announcements"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("mailed", sa.Integer(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _tenant_fk(t),
        _challenge_fk(t),
    )
    op.create_index(f"ix_{t}_tenant_id", t, ["tenant_id"])
    op.create_index(f"ix_{t}_challenge_id_created_at", t, ["challenge_id", "created_at"])

    t = "challenge_notices"
    op.create_table(
        t,
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("challenge_id", sa.Uuid(), nullable=False),
        sa.Column("event", sa.String(16), nullable=False),
        sa.Column("closes_at", WHEN, nullable=False),
        sa.Column("mailed", sa.Integer(), nullable=False),
        sa.Column("created_at", WHEN, nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{t}"),
        _tenant_fk(t),
        _challenge_fk(t),
        sa.UniqueConstraint(
            "challenge_id", "event", "closes_at", name=f"uq_{t}_challenge_id_event_closes_at"
        ),
    )
    op.create_index(f"ix_{t}_tenant_id", t, ["tenant_id"])
    _record_past_closes()


def _record_past_closes() -> None:
    challenges = sa.table(
        "challenges",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("closes_at", WHEN),
    )
    notices = sa.table(
        "challenge_notices",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("challenge_id", sa.Uuid()),
        sa.column("event", sa.String()),
        sa.column("closes_at", WHEN),
        sa.column("mailed", sa.Integer()),
        sa.column("created_at", WHEN),
    )
    bind = op.get_bind()
    now = datetime.now(UTC)
    after: uuid.UUID | None = None
    while True:
        query = (
            sa.select(challenges.c.id, challenges.c.tenant_id, challenges.c.closes_at)
            .where(challenges.c.closes_at.is_not(None), challenges.c.closes_at <= now)
            .order_by(challenges.c.id)
            .limit(BATCH)
        )
        if after is not None:
            query = query.where(challenges.c.id > after)
        rows = bind.execute(query).all()
        if not rows:
            return
        bind.execute(
            notices.insert(),
            [
                {
                    "id": uuid.uuid4(),
                    "tenant_id": tenant_id,
                    "challenge_id": challenge_id,
                    "event": event,
                    "closes_at": closes_at,
                    "mailed": 0,
                    "created_at": now,
                }
                for challenge_id, tenant_id, closes_at in rows
                for event in EVENTS
            ],
        )
        after = rows[-1][0]


def downgrade() -> None:
    op.drop_table("challenge_notices")
    op.drop_table("announcements")
    op.drop_table("rules_acceptances")
    op.execute("ALTER TABLE challenges DROP COLUMN rules_sha256")
    op.execute("ALTER TABLE challenges DROP COLUMN pages")
