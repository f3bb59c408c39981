"""SQL for leaderboards: one row per (challenge, participant), read by an index range scan,
through a tenant's `LeaderboardRepository`; the freezes' snapshots through its
`BoardFreezeRepository` (app.leaderboard.freeze)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, func, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, aliased

from app.challenge.models import Challenge
from app.kit.db import epoch_ms, utcnow
from app.leaderboard.models import (
    ENTRY_MEASURES,
    BoardFreeze,
    FrozenLeaderboardEntry,
    LeaderboardEntry,
)
from app.leaderboard.ranking import PlacedAttempt
from app.tenant.models import Participant

# The upsert's columns: a parameter for each (`LeaderboardRepository._offer_statement`).
_OFFER_COLUMNS = (
    "tenant_id",
    "challenge_id",
    "participant_id",
    "attempt_id",
    "baseline",
    "attempt_created_at_ms",
    "score",
    *ENTRY_MEASURES,
    "rank_key",
    "rank_tiebreak",
    "updated_at",
)
_KEEP_ON_REPLACE = ("tenant_id", "challenge_id", "participant_id")

# The columns a frozen copy takes from the live board.
_ENTRY_COLUMNS = tuple(column.name for column in cast(Table, LeaderboardEntry.__table__).columns)

# A leaderboard's rows: the live board, or its copy as it stood when a freeze began.
EntryTable = type[LeaderboardEntry] | type[FrozenLeaderboardEntry]
AnyEntry = LeaderboardEntry | FrozenLeaderboardEntry

# A row's place in the leaderboard's order (the index ix_leaderboard_entries_rank).
EntryPlace = tuple[float, float, int, uuid.UUID]


def place_of(entry: AnyEntry) -> EntryPlace:
    return (entry.rank_key, entry.rank_tiebreak, entry.attempt_created_at_ms, entry.attempt_id)


class LeaderboardRepository:
    """The leaderboards of one tenant's challenges: their live rows and their frozen copies."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def offer(self, entry: PlacedAttempt) -> None:
        """Keeps the participant's row if it is at least as good, else replaces it with this
        attempt (one of the tenant's).

        One statement, so two workers finishing attempts of the same participant at once
        cannot lose the better one; offering the same attempt twice changes nothing.
        """
        attempt, metrics = entry.attempt, entry.attempt.metrics
        if attempt.tenant_id != self.tenant_id:
            raise ValueError("an attempt of another tenant")
        row: dict[str, Any] = {
            "tenant_id": self.tenant_id,
            "challenge_id": attempt.challenge_id,
            "participant_id": attempt.participant_id,
            "attempt_id": attempt.attempt_id,
            "baseline": attempt.baseline,
            "attempt_created_at_ms": epoch_ms(attempt.created_at),
            "score": attempt.score,
            **{name: getattr(metrics, name) for name in ENTRY_MEASURES},
            "rank_key": entry.key.rank_key,
            "rank_tiebreak": entry.key.rank_tiebreak,
            "updated_at": utcnow(),
        }
        self.session.execute(self._offer_statement(self.session.get_bind().dialect.name), row)

    # The upsert, built once per database dialect with a parameter for each column: every
    # finished attempt runs it, and building it (the ON CONFLICT clause's comparison of four
    # columns) cost more CPU than running it.
    @staticmethod
    @functools.cache
    def _offer_statement(dialect: str) -> Any:
        # On the table, not the mapped class: a Core statement, not an ORM bulk insert.
        table = cast(Table, LeaderboardEntry.__table__)
        current = table.c
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        statement = insert(table).values(
            {name: bindparam(name, type_=current[name].type) for name in _OFFER_COLUMNS}
        )
        excluded = statement.excluded
        better = tuple_(
            excluded.rank_key,
            excluded.rank_tiebreak,
            excluded.attempt_created_at_ms,
            excluded.attempt_id,
        ) < tuple_(
            current.rank_key,
            current.rank_tiebreak,
            current.attempt_created_at_ms,
            current.attempt_id,
        )
        return statement.on_conflict_do_update(
            index_elements=["challenge_id", "participant_id"],
            set_={name: excluded[name] for name in _OFFER_COLUMNS if name not in _KEEP_ON_REPLACE},
            where=better,
        )

    @staticmethod
    def _entries(frozen: bool) -> EntryTable:
        return FrozenLeaderboardEntry if frozen else LeaderboardEntry

    def page(
        self, challenge_id: uuid.UUID, *, limit: int, offset: int, frozen: bool = False
    ) -> tuple[list[tuple[AnyEntry, str]], int]:
        """One page, best first, with handles. The offset is taken inside the leaderboard's
        index first, so a deep page looks up 50 participants, not every row above it."""
        entry = self._entries(frozen)
        order = (entry.rank_key, entry.rank_tiebreak, entry.attempt_created_at_ms, entry.attempt_id)
        of_board = (entry.tenant_id == self.tenant_id, entry.challenge_id == challenge_id)
        window = select(entry).where(*of_board).order_by(*order).limit(limit).offset(offset)
        ranked = aliased(entry, window.subquery())
        # A scalar subquery per row: 50 primary-key lookups, where a join let the planner hash
        # the whole participants table.
        handle = (
            select(Participant.handle)
            .where(Participant.id == ranked.participant_id)
            .scalar_subquery()
        )
        rows = self.session.execute(
            select(ranked, handle).order_by(
                ranked.rank_key,
                ranked.rank_tiebreak,
                ranked.attempt_created_at_ms,
                ranked.attempt_id,
            )
        ).all()
        total = self.session.scalar(select(func.count()).select_from(entry).where(*of_board))
        return [(entry_row, handle) for entry_row, handle in rows], total or 0

    def baselines_before(
        self, challenge_id: uuid.UUID, place: EntryPlace, *, frozen: bool = False
    ) -> int:
        """How many baseline rows come before a place in the order: a scan of the few
        baseline rows (their partial index), whatever the depth."""
        entry = self._entries(frozen)
        order = (entry.rank_key, entry.rank_tiebreak, entry.attempt_created_at_ms, entry.attempt_id)
        count = self.session.scalar(
            select(func.count())
            .select_from(entry)
            .where(
                entry.tenant_id == self.tenant_id,
                entry.challenge_id == challenge_id,
                entry.baseline,
                tuple_(*order) < tuple_(*place),
            )
        )
        return count or 0

    def entries_after(
        self,
        challenge_id: uuid.UUID,
        after: EntryPlace | None,
        limit: int,
        *,
        frozen: bool = False,
    ) -> list[tuple[AnyEntry, str]]:
        """Up to `limit` rows after a place in the order, best first, with handles: a range
        scan of the leaderboard's index from the place on, whatever its depth (the exports)."""
        entry = self._entries(frozen)
        order = (entry.rank_key, entry.rank_tiebreak, entry.attempt_created_at_ms, entry.attempt_id)
        query = (
            select(entry, Participant.handle)
            .join(Participant, Participant.id == entry.participant_id)
            .where(entry.tenant_id == self.tenant_id, entry.challenge_id == challenge_id)
        )
        if after is not None:
            query = query.where(tuple_(*order) > tuple_(*after))
        rows = self.session.execute(query.order_by(*order).limit(limit)).tuples()
        return [(cast(AnyEntry, row), handle) for row, handle in rows]

    def clear(self, challenge_id: uuid.UUID) -> None:
        self.session.execute(
            delete(LeaderboardEntry).where(
                LeaderboardEntry.tenant_id == self.tenant_id,
                LeaderboardEntry.challenge_id == challenge_id,
            )
        )

    def best_entries(
        self, participant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, LeaderboardEntry]:
        """The participant's rows on these challenges' leaderboards, by challenge."""
        if not challenge_ids:
            return {}
        rows = self.session.scalars(
            select(LeaderboardEntry).where(
                LeaderboardEntry.tenant_id == self.tenant_id,
                LeaderboardEntry.participant_id == participant_id,
                LeaderboardEntry.challenge_id.in_(challenge_ids),
            )
        )
        return {row.challenge_id: row for row in rows}

    def rank_of(self, entry: LeaderboardEntry) -> int:
        """1 + the participants' rows ranked before this one (baselines take no rank): an
        index range scan on the leaderboard's order."""
        row = LeaderboardEntry
        ahead = self.session.scalar(
            select(func.count())
            .select_from(row)
            .where(
                row.tenant_id == self.tenant_id,
                row.challenge_id == entry.challenge_id,
                row.baseline.is_(False),
                tuple_(row.rank_key, row.rank_tiebreak, row.attempt_created_at_ms, row.attempt_id)
                < tuple_(
                    entry.rank_key,
                    entry.rank_tiebreak,
                    entry.attempt_created_at_ms,
                    entry.attempt_id,
                ),
            )
        )
        return (ahead or 0) + 1

    def copy_to_frozen(self, challenge_id: uuid.UUID) -> None:
        """The challenge's leaderboard as it stands, into its frozen copy (replacing any)."""
        frozen = cast(Table, FrozenLeaderboardEntry.__table__)
        live = cast(Table, LeaderboardEntry.__table__)
        self.session.execute(
            delete(frozen).where(
                frozen.c.tenant_id == self.tenant_id, frozen.c.challenge_id == challenge_id
            )
        )
        self.session.execute(
            frozen.insert().from_select(
                _ENTRY_COLUMNS,
                select(*(live.c[name] for name in _ENTRY_COLUMNS)).where(
                    live.c.tenant_id == self.tenant_id, live.c.challenge_id == challenge_id
                ),
            )
        )


class BoardFreezeRepository:
    """The snapshots of one tenant's challenges' boards, taken when their freezes begin
    (app.leaderboard.freeze)."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def schedule(
        self, challenge_id: uuid.UUID
    ) -> tuple[datetime | None, datetime | None, datetime | None] | None:
        """The challenge's `freeze_at` and `closes_at`, and the `freeze_at` its snapshot was
        taken for (None: no snapshot); None when the tenant has no such challenge."""
        row = self.session.execute(
            select(Challenge.freeze_at, Challenge.closes_at, BoardFreeze.freeze_at)
            .outerjoin(BoardFreeze, BoardFreeze.challenge_id == Challenge.id)
            .where(Challenge.tenant_id == self.tenant_id, Challenge.id == challenge_id)
        ).first()
        return None if row is None else (row[0], row[1], row[2])

    def claim(self, challenge_id: uuid.UUID, freeze_at: datetime, now: datetime) -> bool:
        """Records that the challenge's snapshot for `freeze_at` is taken now, replacing one
        taken for another `freeze_at`; True for the one writer that does it (a concurrent one
        waits on the row, then finds it taken)."""
        table = cast(Table, BoardFreeze.__table__)
        dialect = self.session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        values = insert(table).values(
            challenge_id=challenge_id, tenant_id=self.tenant_id, freeze_at=freeze_at, taken_at=now
        )
        claim = values.on_conflict_do_update(
            index_elements=["challenge_id"],
            set_={"freeze_at": freeze_at, "taken_at": now, "figures": None},
            where=(table.c.freeze_at != values.excluded.freeze_at)
            & (table.c.tenant_id == self.tenant_id),
        ).returning(table.c.challenge_id)
        return self.session.execute(claim).first() is not None

    def keep_figures(self, challenge_id: uuid.UUID, figures: dict[str, Any]) -> None:
        self.session.execute(
            update(BoardFreeze)
            .where(
                BoardFreeze.tenant_id == self.tenant_id, BoardFreeze.challenge_id == challenge_id
            )
            .values(figures=figures)
        )

    def snapshot(self, challenge_id: uuid.UUID, freeze_at: datetime) -> BoardFreeze | None:
        """The challenge's snapshot if it was taken for this `freeze_at`."""
        return self.session.scalar(
            select(BoardFreeze)
            .where(
                BoardFreeze.tenant_id == self.tenant_id,
                BoardFreeze.challenge_id == challenge_id,
                BoardFreeze.freeze_at == freeze_at,
            )
            .execution_options(populate_existing=True)
        )
