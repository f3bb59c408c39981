"""Accounts: browser sessions kept on the server, and handles unique ignoring case.

- `browser_sessions`: one row per signed-in browser (a participant's or a tenant admin's),
  found by the SHA-256 of the cookie's token. Sessions signed before this migration were
  cookies only; they end here (everyone signs in again once).
- `participants`: a unique index on (tenant_id, lower(handle)). Handles that already differ
  only in case within a tenant (racing sign-ups made some; API keys could name 'Alice' and
  'alice' as two players) are kept apart, not merged: merging would mix two players' attempts
  and leaderboard rows. In each such group the earliest created keeps its handle, and each
  later one is renamed `<handle>-<first 8 hex digits of its id>` (cut to fit 64 characters),
  with its attempts and leaderboard rows. Every rename is logged (tenant, participant id, old
  and new handle) so the operator can tell the people concerned; a renamed web account signs
  in with its new handle. The downgrade does not undo renames.

The older unique constraint on (tenant_id, handle) stays, though the new index implies it:
dropping it rebuilds the table on SQLite, and with foreign keys on, SQLite's DROP TABLE of the
old copy would cascade into deleting every attempt.

Revision ID: 20261126_accounts
Revises: 0004
Create Date: 2026-11-26
"""

import logging
import uuid
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "20261126_accounts"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

log = logging.getLogger("alembic.runtime.migration")

HANDLE_MAX = 64


def _renamed(handle: str, participant_id: uuid.UUID, taken: set[str]) -> str:
    suffix = participant_id.hex[:8]
    for extra in range(100):
        tail = f"-{suffix}" if extra == 0 else f"-{suffix}-{extra}"
        candidate = handle[: HANDLE_MAX - len(tail)] + tail
        if candidate.lower() not in taken:
            return candidate
    raise RuntimeError(f"no free handle to rename participant {participant_id}")


def _rename_case_duplicates() -> None:
    participants = sa.table(
        "participants",
        sa.column("id", sa.Uuid()),
        sa.column("tenant_id", sa.Uuid()),
        sa.column("handle", sa.String()),
        sa.column("created_at", sa.DateTime(timezone=True)),
    )
    connection = op.get_bind()
    lowered = sa.func.lower(participants.c.handle)
    duplicated = (
        sa.select(participants.c.tenant_id, lowered.label("folded"))
        .group_by(participants.c.tenant_id, lowered)
        .having(sa.func.count() > 1)
        .subquery()
    )
    rows = connection.execute(
        sa.select(
            participants.c.id,
            participants.c.tenant_id,
            participants.c.handle,
        )
        .join(
            duplicated,
            sa.and_(
                duplicated.c.tenant_id == participants.c.tenant_id,
                duplicated.c.folded == lowered,
            ),
        )
        .order_by(participants.c.tenant_id, lowered, participants.c.created_at, participants.c.id)
    ).all()
    if not rows:
        return
    taken_by_tenant: dict[uuid.UUID, set[str]] = {}
    kept: set[tuple[uuid.UUID, str]] = set()
    for participant_id, tenant_id, handle in rows:
        group = (tenant_id, handle.lower())
        if group not in kept:
            kept.add(group)  # the earliest of its group keeps its handle
            continue
        taken = taken_by_tenant.get(tenant_id)
        if taken is None:
            taken = taken_by_tenant[tenant_id] = {
                h.lower()
                for h in connection.scalars(
                    sa.select(participants.c.handle).where(participants.c.tenant_id == tenant_id)
                )
            }
        new_handle = _renamed(handle, participant_id, taken)
        taken.add(new_handle.lower())
        connection.execute(
            participants.update()
            .where(participants.c.id == participant_id)
            .values(handle=new_handle)
        )
        log.warning(
            "participant %s of tenant %s renamed from %r to %r: its handle differed only in "
            "case from an older participant's",
            participant_id,
            tenant_id,
            handle,
            new_handle,
        )


def upgrade() -> None:
    op.create_table(
        "browser_sessions",
        sa.Column("id", sa.Uuid(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.Uuid(), nullable=False),
        sa.Column("participant_id", sa.Uuid(), nullable=True),
        sa.Column("api_key_id", sa.Uuid(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "(participant_id IS NULL) <> (api_key_id IS NULL)",
            name=op.f("ck_browser_sessions_one_kind_of_session"),
        ),
        sa.ForeignKeyConstraint(
            ["api_key_id"],
            ["api_keys.id"],
            name=op.f("fk_browser_sessions_api_key_id_api_keys"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["participant_id"],
            ["participants.id"],
            name=op.f("fk_browser_sessions_participant_id_participants"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tenant_id"],
            ["tenants.id"],
            name=op.f("fk_browser_sessions_tenant_id_tenants"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_browser_sessions")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_browser_sessions_token_hash")),
    )
    op.create_index(
        op.f("ix_browser_sessions_participant_id"), "browser_sessions", ["participant_id"]
    )
    op.create_index(op.f("ix_browser_sessions_api_key_id"), "browser_sessions", ["api_key_id"])
    op.create_index(
        "ix_browser_sessions_tenant_id_expires_at",
        "browser_sessions",
        ["tenant_id", "expires_at"],
    )
    _rename_case_duplicates()
    op.create_index(
        "ux_participants_tenant_id_lower_handle",
        "participants",
        ["tenant_id", sa.text("lower(handle)")],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("ux_participants_tenant_id_lower_handle", table_name="participants")
    op.drop_index("ix_browser_sessions_tenant_id_expires_at", table_name="browser_sessions")
    op.drop_index(op.f("ix_browser_sessions_api_key_id"), table_name="browser_sessions")
    op.drop_index(op.f("ix_browser_sessions_participant_id"), table_name="browser_sessions")
    op.drop_table("browser_sessions")
