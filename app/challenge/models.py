from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    ForeignKey,
    Index,
    SQLColumnExpression,
    String,
    Text,
    Uuid,
    exists,
    func,
    or_,
    select,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.auth.tenant_access import TenantStatus
from app.challenge.config import ChallengePages, ChallengeState, LimitsConfig, Visibility
from app.kit.db import Base, JSONType, ModelColumn, StrEnumColumn, UTCDateTime, new_id, utcnow
from app.scoring.schemas import ScoringConfig
from app.scoring.strategies import Strategy
from app.tenant.models import Tenant


class Challenge(Base):
    """A challenge. Its configuration sections are stored as validated JSON documents: the
    sections every kind has (`scoring`, `limits`) are read back as their models; the sections
    of its kind are its kind's to read (`stored_sections`, then the kind's `parse`)."""

    __tablename__ = "challenges"
    __table_args__ = (
        # A slug names one challenge that is not deleted: a deleted one (kept until purged)
        # leaves its slug free for a new challenge.
        Index(
            "uq_challenges_tenant_id_slug",
            "tenant_id",
            "slug",
            unique=True,
            postgresql_where=text("deleted_at IS NULL"),
            sqlite_where=text("deleted_at IS NULL"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    slug: Mapped[str] = mapped_column(String(64))
    title: Mapped[str] = mapped_column(String(200))
    goal: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(16))
    # The sections of its kind, by name (a prompt challenge's `target`, `verifier` and
    # `evaluation`, a benchmark's `benchmark`, ...): the kind's alone, so the table has no
    # column of any kind's and a kind brings a section without a migration.
    kind_sections: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)
    scoring: Mapped[ScoringConfig] = mapped_column(ModelColumn(ScoringConfig))
    limits: Mapped[LimitsConfig] = mapped_column(ModelColumn(LimitsConfig), default=LimitsConfig)
    visibility: Mapped[Visibility] = mapped_column(
        StrEnumColumn(Visibility, 16), default=Visibility.PRIVATE
    )
    state: Mapped[ChallengeState] = mapped_column(
        StrEnumColumn(ChallengeState, 16), default=ChallengeState.LIVE, server_default="live"
    )
    # Its pages (Overview, Rules, Data, Evaluation), Markdown; null: none written.
    pages: Mapped[ChallengePages | None] = mapped_column(ModelColumn(ChallengePages), default=None)
    # The version of its rules participants accept (`ChallengePages.rules_sha256`), kept
    # beside the pages so a submission checks acceptance in its one statement; null: no rules.
    rules_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    opens_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    closes_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # From then until `closes_at`, public boards show what they showed then (app.leaderboard
    # .freeze); null: never frozen.
    freeze_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # Deleted by its tenant's admins: gone from every list, page, board and worker until it is
    # restored (null again) or purged (the row removed with its data).
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    def stored_sections(self, names: Iterable[str]) -> dict[str, Any]:
        """The kind's sections (by name) as stored in `kind_sections`; a section never
        stored is left out."""
        stored = self.kind_sections or {}
        return {name: stored[name] for name in names if stored.get(name) is not None}

    def store_sections(self, sections: Mapping[str, Any]) -> None:
        """Stores the kind's sections (JSON documents, by name) where `stored_sections`
        reads them; a section with no value is left out."""
        kept = {name: value for name, value in sections.items() if value is not None}
        self.kind_sections = kept or None

    @property
    def page_texts(self) -> ChallengePages:
        """Its pages, each '' when not written."""
        return self.pages or ChallengePages()

    def store_pages(self, pages: ChallengePages) -> None:
        """Keeps the pages and the version of the rules they hold."""
        written = any(pages.model_dump().values())
        self.pages = pages if written else None
        self.rules_sha256 = pages.rules_sha256

    @property
    def strategy(self) -> Strategy:
        return strategy_of(self.scoring)


def challenge_not_deleted(challenge_id: SQLColumnExpression[uuid.UUID]) -> ColumnElement[bool]:
    """Rows (of a table with this challenge id column) whose challenge is not deleted: every
    read of a challenge's work leaves out those of a deleted one."""
    return ~exists().where(Challenge.id == challenge_id, Challenge.deleted_at.is_not(None))


def _work_stopped() -> ColumnElement[bool]:
    """Challenges whose work waits: deleted, or of a tenant that is not active."""
    return or_(
        Challenge.deleted_at.is_not(None),
        exists().where(Tenant.id == Challenge.tenant_id, Tenant.status != TenantStatus.ACTIVE),
    )


def challenge_work_runs(
    challenge_id: SQLColumnExpression[uuid.UUID], *, row_by_row: bool = False
) -> ColumnElement[bool]:
    """Rows (of a table with this challenge id column) a worker may run: their challenge is
    not deleted and its tenant is active. The claims and sweeps of queued work take only
    these, so the work of a deleted challenge, or of a suspended tenant, waits unrun until
    the challenge is restored or the tenant resumed.

    `row_by_row`: the same, checked for each row as a scan in index order reaches it, for a
    query that wants the first rows of an order (PostgreSQL turns the other form into a join
    that reads every row, then sorts them)."""
    if row_by_row:
        stopped = select(func.count()).where(Challenge.id == challenge_id, _work_stopped())
        return stopped.scalar_subquery() == 0
    return ~exists().where(Challenge.id == challenge_id, _work_stopped())


def strategy_of(scoring: ScoringConfig) -> Strategy:
    """The strategy a saved challenge's scoring names (creation fills in the kind's default)."""
    return scoring.strategy or Strategy.FIRST
