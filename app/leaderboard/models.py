from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Float, ForeignKey, Index, Uuid, false, text
from sqlalchemy.orm import Mapped, mapped_column

from app.kit.db import Base, JSONType, UTCDateTime, from_epoch_ms, utcnow

# The metrics an entry keeps of its attempt, beside its score, to show them.
ENTRY_MEASURES = ("succeeded", "tokens_total", "elapsed_ms", "rating")


class _EntryColumns:
    """A leaderboard row's columns, shared by the live board and its frozen copy."""

    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    attempt_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("attempts.id", ondelete="CASCADE")
    )
    rank_key: Mapped[float] = mapped_column(Float)
    rank_tiebreak: Mapped[float] = mapped_column(Float, default=0.0)
    # The attempt's `created_at` as the order's tie-break stores it: in epoch milliseconds, so
    # the index and SQL tuple comparisons read it (`attempt_created_at` is the time).
    attempt_created_at_ms: Mapped[int] = mapped_column(BigInteger)
    score: Mapped[float | None] = mapped_column(Float, default=None)
    succeeded: Mapped[bool | None] = mapped_column(Boolean, default=None)
    tokens_total: Mapped[int | None] = mapped_column(BigInteger, default=None)
    elapsed_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)
    rating: Mapped[float | None] = mapped_column(Float, default=None)
    # The row's attempt is a baseline (app.leaderboard.ranking.participant_ranks).
    baseline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    @property
    def attempt_created_at(self) -> datetime:
        """When the row's attempt was submitted (to the millisecond)."""
        return from_epoch_ms(self.attempt_created_at_ms)


class LeaderboardEntry(_EntryColumns, Base):
    """The best attempt of one participant in one challenge, kept up to date on completion.

    `rank_key` orders rows ascending (best first) whatever the strategy: each strategy maps its
    measure onto it (negated where higher is better), `rank_tiebreak` breaks its ties (benchmark
    cost), then the earlier attempt wins. One index range scan serves a page.
    """

    __tablename__ = "leaderboard_entries"
    __table_args__ = (
        Index(
            "ix_leaderboard_entries_rank",
            "challenge_id",
            "rank_key",
            "rank_tiebreak",
            "attempt_created_at_ms",
            "attempt_id",
        ),
        # The few baseline rows, in the board's order: how many lie before a page is read here.
        Index(
            "ix_leaderboard_entries_baselines",
            "challenge_id",
            "rank_key",
            "rank_tiebreak",
            "attempt_created_at_ms",
            "attempt_id",
            postgresql_where=text("baseline"),
            sqlite_where=text("baseline"),
        ),
    )

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )


class BoardFreeze(Base):
    """A challenge's boards as they stood when its freeze began: taken once, by the first
    write to a board at or after `freeze_at` (app.leaderboard.freeze), for the `freeze_at` it
    was taken for (a snapshot of another `freeze_at` is stale). Its rows are in the board's own
    frozen table (`FrozenLeaderboardEntry`, or a kind's); `figures` holds what a kind's board
    shows besides its rows (red-blue: the team standings)."""

    __tablename__ = "board_freezes"

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    freeze_at: Mapped[datetime] = mapped_column(UTCDateTime)
    taken_at: Mapped[datetime] = mapped_column(UTCDateTime)
    figures: Mapped[dict[str, Any] | None] = mapped_column(JSONType, default=None)


class FrozenLeaderboardEntry(_EntryColumns, Base):
    """A leaderboard row as it stood when the challenge's freeze began (`BoardFreeze`)."""

    __tablename__ = "leaderboard_frozen_entries"
    __table_args__ = (
        Index(
            "ix_leaderboard_frozen_entries_rank",
            "challenge_id",
            "rank_key",
            "rank_tiebreak",
            "attempt_created_at_ms",
            "attempt_id",
        ),
        Index(
            "ix_leaderboard_frozen_entries_baselines",
            "challenge_id",
            "rank_key",
            "rank_tiebreak",
            "attempt_created_at_ms",
            "attempt_id",
            postgresql_where=text("baseline"),
            sqlite_where=text("baseline"),
        ),
    )

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("board_freezes.challenge_id", ondelete="CASCADE"), primary_key=True
    )
