"""The red_blue kind's tables: defenses, attacks, matches, stored ratings and each
challenge's board (standings and the state of its debounced ratings recompute).

Model-produced text (the target's outputs, verifier replies, error reasons) is stored with
the `Produced*` column types (escaped, never refused); what participants wrote is checked on
the way in (no NUL) and stored as they wrote it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    Uuid,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from app.kinds.api.leases import Leased, LeasedTable, Metered
from app.kinds.api.storage import (
    Base,
    JSONType,
    ProducedJSON,
    ProducedText,
    StrEnumColumn,
    UTCDateTime,
    challenge_work_runs,
    new_id,
)


class DefenseStatus(StrEnum):
    """pending → active (self-test passed) | rejected (it failed) | error (the target or the
    verifier failed: re-runnable by a tenant admin; never paired)."""

    PENDING = "pending"
    ACTIVE = "active"
    REJECTED = "rejected"
    ERROR = "error"


class MatchStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    ERROR = "error"


class Side(StrEnum):
    RED = "red"
    BLUE = "blue"


class Defense(Leased, Base):
    """A blue participant's system prompt. Its self-test runs on a worker under a lease, as an
    attempt does (`SELF_TEST_LEASES`: the defense stays pending while a worker holds it)."""

    __tablename__ = "redblue_defenses"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index(
            "ix_redblue_defenses_challenge_status_created", "challenge_id", "status", "created_at"
        ),
        Index("ix_redblue_defenses_challenge_participant", "challenge_id", "participant_id"),
        Index("ix_redblue_defenses_status_enqueued", "status", "enqueued_at"),
        # The few baseline entries of a challenge, which every recompute of its board reads.
        Index(
            "ix_redblue_defenses_baselines",
            "challenge_id",
            "participant_id",
            postgresql_where=text("baseline"),
            sqlite_where=text("baseline"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE")
    )
    system_prompt: Mapped[str] = mapped_column(Text)
    status: Mapped[DefenseStatus] = mapped_column(
        StrEnumColumn(DefenseStatus, 16), default=DefenseStatus.PENDING
    )
    # Why it was rejected (or why its self-test failed), as participants may read it.
    reason: Mapped[str | None] = mapped_column(ProducedText, default=None)
    # Tenant admins only: the full reason of an error (addresses, provider answers).
    error_detail: Mapped[str | None] = mapped_column(ProducedText, default=None)
    self_test_output: Mapped[str | None] = mapped_column(ProducedText, default=None)
    self_test_verdict: Mapped[dict[str, Any] | None] = mapped_column(ProducedJSON, default=None)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    request_fingerprint: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # When it was paired (active defenses only); null while its pairing is still to be done.
    paired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # An admin's reference entry: shown on boards with a mark, it takes no participant's rank
    # (and, red-blue, no point of the team standings).
    baseline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The member who submitted a team's entry (its `participant_id` is the team's); null for
    # an entry of a participant playing alone. No foreign key: it is a record, kept as it was.
    submitted_by_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)


class Attack(Base):
    """A red participant's user message; paired by a worker task (`paired_at` is set once
    its matches are made)."""

    __tablename__ = "redblue_attacks"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_redblue_attacks_challenge_created", "challenge_id", "created_at"),
        Index("ix_redblue_attacks_challenge_participant", "challenge_id", "participant_id"),
        Index("ix_redblue_attacks_paired_enqueued", "paired_at", "enqueued_at"),
        # The few baseline entries of a challenge, which every recompute of its board reads.
        Index(
            "ix_redblue_attacks_baselines",
            "challenge_id",
            "participant_id",
            postgresql_where=text("baseline"),
            sqlite_where=text("baseline"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE")
    )
    prompt: Mapped[str] = mapped_column(Text)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    request_fingerprint: Mapped[str | None] = mapped_column(String(64), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    paired_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # An admin's reference entry: shown on boards with a mark, it takes no participant's rank
    # (and, red-blue, no point of the team standings).
    baseline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # The member who submitted a team's entry (its `participant_id` is the team's); null for
    # an entry of a participant playing alone. No foreign key: it is a record, kept as it was.
    submitted_by_id: Mapped[uuid.UUID | None] = mapped_column(Uuid, default=None)


class Match(Leased, Metered, Base):
    """One target call: the defense as system prompt, the attack as user message, judged by
    every category. Each (attack, defense) pair at most once; never a participant against
    themself. Runs under a lease like an attempt (`MATCH_LEASES`)."""

    __tablename__ = "redblue_matches"
    __table_args__ = (
        UniqueConstraint("attack_id", "defense_id"),
        Index("ix_redblue_matches_challenge_created", "challenge_id", "created_at"),
        Index("ix_redblue_matches_challenge_status", "challenge_id", "status"),
        Index("ix_redblue_matches_defense", "defense_id"),
        Index("ix_redblue_matches_red", "challenge_id", "red_participant_id"),
        Index("ix_redblue_matches_blue", "challenge_id", "blue_participant_id"),
        Index("ix_redblue_matches_status_enqueued", "status", "enqueued_at"),
        Index("ix_redblue_matches_status_lease", "status", "lease_expires_at"),
        Index("ix_redblue_matches_challenge_board_seq", "challenge_id", "board_seq"),
        # A final round's matches by status: how many of them are played (final_round.py).
        Index(
            "ix_redblue_matches_final_round",
            "challenge_id",
            "status",
            postgresql_where=text("final_round"),
            sqlite_where=text("final_round"),
        ),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE")
    )
    attack_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("redblue_attacks.id", ondelete="CASCADE")
    )
    defense_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("redblue_defenses.id", ondelete="CASCADE")
    )
    red_participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE")
    )
    blue_participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE")
    )
    status: Mapped[MatchStatus] = mapped_column(
        StrEnumColumn(MatchStatus, 16), default=MatchStatus.QUEUED
    )
    # The exact call: the defense's system prompt and the attack's user message, and the
    # target's answer.
    system_prompt: Mapped[str | None] = mapped_column(Text, default=None)
    user_message: Mapped[str | None] = mapped_column(Text, default=None)
    output: Mapped[str | None] = mapped_column(ProducedText, default=None)
    # Per category, in the suite's order: {category, breached, rating, red_points,
    # blue_points, raw_eval_output}.
    verdicts: Mapped[list[dict[str, Any]] | None] = mapped_column(ProducedJSON, default=None)
    breached: Mapped[list[str] | None] = mapped_column(JSONType, default=None)
    red_points: Mapped[int | None] = mapped_column(Integer, default=None)
    blue_points: Mapped[int | None] = mapped_column(Integer, default=None)
    attack_won: Mapped[bool | None] = mapped_column(Boolean, default=None)
    tokens_total: Mapped[int | None] = mapped_column(BigInteger, default=None)
    elapsed_ms: Mapped[int | None] = mapped_column(BigInteger, default=None)
    cost_usd: Mapped[float | None] = mapped_column(Float, default=None)
    # `error` is what participants read; `error_detail` the full reason, tenant admins only.
    error: Mapped[str | None] = mapped_column(ProducedText, default=None)
    error_detail: Mapped[str | None] = mapped_column(ProducedText, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    enqueued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The board's landing number of the transaction that completed it (`Board.landed_seq`):
    # a recompute reads the matches landed since the last one it knows by this. Null while the
    # match is not completed.
    board_seq: Mapped[int | None] = mapped_column(BigInteger, default=None)
    # Made by the challenge's final round at its close (final_round.py), not by pairing.
    final_round: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


# A deleted challenge's self-tests and matches wait, unrun, until it is restored.
SELF_TEST_LEASES = LeasedTable(
    Defense,
    waiting=DefenseStatus.PENDING,
    running=DefenseStatus.PENDING,
    runnable=challenge_work_runs(Defense.challenge_id),
)
MATCH_LEASES = LeasedTable(
    Match,
    waiting=MatchStatus.QUEUED,
    running=MatchStatus.RUNNING,
    runnable=challenge_work_runs(Match.challenge_id),
)


class _RatingColumns:
    """A board row's columns, shared by the live board and its frozen copy."""

    side: Mapped[Side] = mapped_column(StrEnumColumn(Side, 8), primary_key=True)
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    rank: Mapped[int] = mapped_column(Integer)
    rating: Mapped[float] = mapped_column(Float)
    # Null where the interval is open at that end: a participant who lost (low) or won (high)
    # every match has no bound on that side from its matches (app.kinds.red_blue.rules.ratings).
    rating_low: Mapped[float | None] = mapped_column(Float, nullable=True)
    rating_high: Mapped[float | None] = mapped_column(Float, nullable=True)
    points: Mapped[int] = mapped_column(BigInteger)
    matches: Mapped[int] = mapped_column(Integer)
    wins: Mapped[int] = mapped_column(Integer)
    # The participant's entries on this side are baselines: ranked where they would place,
    # taking no participant's rank (app.kinds.red_blue.board_recompute).
    baseline: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class Rating(_RatingColumns, Base):
    """A participant's standing on one side of one challenge, as the last recompute left it.
    `position` is the row's place in the board's order (rank, then rating, then handle), so a
    page of the leaderboard is one range scan of the primary index."""

    __tablename__ = "redblue_ratings"
    __table_args__ = (
        Index(
            "ix_redblue_ratings_board_position",
            "challenge_id",
            "side",
            "position",
            unique=True,
        ),
    )

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )


class FrozenRating(_RatingColumns, Base):
    """A board row as it stood when the challenge's freeze began (the leaderboard's
    `BoardFreeze`, which holds the standings of then as its `figures`)."""

    __tablename__ = "redblue_frozen_ratings"
    __table_args__ = (
        Index(
            "ix_redblue_frozen_ratings_board_position",
            "challenge_id",
            "side",
            "position",
            unique=True,
        ),
    )

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("board_freezes.challenge_id", ondelete="CASCADE"), primary_key=True
    )


class Board(Base):
    """A challenge's standings and its recompute's state.

    Each transaction that completes matches numbers them with the next `landed_seq`, under
    this row's lock, so the numbers come in commit order: whoever reads `landed_seq = n` sees
    every match numbered up to n. It sets `dirty` (sending the recompute task only when it
    turns dirty). A recompute claims the flag (`generation` + 1) and the number it rates up to,
    and writes ratings and standings in one transaction, only if they are newer than what is
    written: `rated_seq` (the matches rated), then `intervals_seq` (the matches the intervals
    were bootstrapped from), so a board never goes back. `recompute_due_at` and
    `intervals_due_at` bound how often the two run (the costs they last took, so each takes a
    bounded share of a worker's time whatever the size)."""

    __tablename__ = "redblue_boards"

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    dirty: Mapped[bool] = mapped_column(Boolean, default=False)
    dirty_since: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    generation: Mapped[int] = mapped_column(Integer, default=0)
    written_generation: Mapped[int] = mapped_column(Integer, default=0)
    red_points: Mapped[int] = mapped_column(BigInteger, default=0)
    blue_points: Mapped[int] = mapped_column(BigInteger, default=0)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    computed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    landed_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    rated_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    intervals_seq: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    intervals_computed_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # The earliest the next recompute runs (a landing sends it with a countdown to then), and
    # the earliest the intervals are bootstrapped again (null: at the next recompute).
    recompute_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    intervals_due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
    # What the last recompute and the last interval refresh took, in seconds.
    recompute_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    intervals_seconds: Mapped[float | None] = mapped_column(Float, default=None)


class FinalRound(Base):
    """A challenge's final round (its `final_round` setting): made once per close, in the
    transaction that inserts its matches (`app.kinds.red_blue.final_round`). `closes_at` is
    the close it was made for (a challenge opened again and closed later gets another, which
    adds only the pairs still missing); `matches` how many it made; `played_at` when the
    sweep found every one of them finished (then the board's final ratings are computed)."""

    __tablename__ = "redblue_final_rounds"

    challenge_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("challenges.id", ondelete="CASCADE"), primary_key=True
    )
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    closes_at: Mapped[datetime] = mapped_column(UTCDateTime)
    scheduled_at: Mapped[datetime] = mapped_column(UTCDateTime)
    matches: Mapped[int] = mapped_column(Integer, default=0)
    played_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)
