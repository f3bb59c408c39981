"""SQL of the red_blue kind.

Request-side reads and writes are scoped to a tenant (`RedBlueRepository`). Worker-side
statements take ids from the queue and guard every state change of a defense's self-test or
a match with the run token of its lease, as attempts do (app/attempt/repository.py).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, and_, delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from app.challenge.config import LimitsConfig
from app.challenge.models import Challenge
from app.db import count_where, insert_for, lock_some_ids, page_where, take_write_lock
from app.kinds.red_blue.models import (
    Attack,
    Board,
    Defense,
    DefenseStatus,
    Match,
    MatchStatus,
    Rating,
    Side,
)
from app.tenant.models import Participant

_MATCHES: Table = Match.__table__  # type: ignore[assignment]
_RATINGS: Table = Rating.__table__  # type: ignore[assignment]


@dataclass(frozen=True, slots=True)
class EntryTarget:
    """What a submission checks of its challenge, and its participant if the handle exists."""

    challenge_id: uuid.UUID
    kind: str
    limits: LimitsConfig
    opens_at: datetime | None
    closes_at: datetime | None
    participant_id: uuid.UUID | None
    participant_handle: str | None


@dataclass(frozen=True, slots=True)
class Entry:
    """An entry of one side, as pairing sees it."""

    id: uuid.UUID
    participant_id: uuid.UUID
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Outcome:
    red: uuid.UUID
    blue: uuid.UUID
    attack_won: bool
    red_points: int
    blue_points: int


@dataclass(frozen=True, slots=True)
class RatingRow:
    participant_id: uuid.UUID
    side: Side
    position: int
    rank: int
    rating: float
    rating_low: float
    rating_high: float
    points: int
    matches: int
    wins: int


@dataclass(frozen=True, slots=True)
class BoardLine:
    """A row of a leaderboard page."""

    handle: str
    rank: int
    rating: float
    rating_low: float
    rating_high: float
    points: int
    matches: int
    wins: int


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


class RedBlueRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    # Submissions -------------------------------------------------------------------------

    def entry_target(self, challenge_id: uuid.UUID, handle: str | None) -> EntryTarget | None:
        participant = and_(
            Participant.tenant_id == Challenge.tenant_id,
            func.lower(Participant.handle) == (handle.lower() if handle is not None else None),
        )
        row = self.session.execute(
            select(
                Challenge.id,
                Challenge.kind,
                Challenge.limits,
                Challenge.opens_at,
                Challenge.closes_at,
                Participant.id,
                Participant.handle,
            )
            .select_from(Challenge)
            .outerjoin(Participant, participant)
            .where(Challenge.tenant_id == self.tenant_id, Challenge.id == challenge_id)
        ).first()
        return None if row is None else EntryTarget(*row)

    def lock_participant(self, participant_id: uuid.UUID) -> None:
        """Serialises one participant's limit checks until the transaction ends (SQLite: the
        database's write lock, as it has no row locks)."""
        if _dialect(self.session) == "sqlite":
            take_write_lock(self.session)
            return
        self.session.execute(
            select(Participant.id)
            .where(Participant.tenant_id == self.tenant_id, Participant.id == participant_id)
            .with_for_update()
        )

    def count_defenses(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID, since: datetime | None
    ) -> int:
        """Defenses that count against limits: all but those whose self-test hit an error."""
        conditions = [
            Defense.tenant_id == self.tenant_id,
            Defense.challenge_id == challenge_id,
            Defense.participant_id == participant_id,
            Defense.status != DefenseStatus.ERROR,
        ]
        if since is not None:
            conditions.append(Defense.created_at >= since)
        return count_where(self.session, Defense, *conditions)

    def count_attacks(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID, since: datetime | None
    ) -> int:
        conditions = [
            Attack.tenant_id == self.tenant_id,
            Attack.challenge_id == challenge_id,
            Attack.participant_id == participant_id,
        ]
        if since is not None:
            conditions.append(Attack.created_at >= since)
        return count_where(self.session, Attack, *conditions)

    def insert_entry(self, entry: Defense | Attack) -> bool:
        """Inserts a new defense or attack; False if its Idempotency-Key is already taken
        (a concurrent request with the same key waits for that request, then inserts none)."""
        table: Table = type(entry).__table__  # type: ignore[assignment]
        state = vars(entry)
        values = {c.key: state[c.key] for c in table.columns if c.key in state}
        statement = (
            insert_for(self.session)(table)
            .values(values)
            .on_conflict_do_nothing(index_elements=["tenant_id", "idempotency_key"])
            .returning(table.c.id)
        )
        return self.session.execute(statement).first() is not None

    def defense_by_key(self, key: str) -> Defense | None:
        return self.session.scalar(
            select(Defense).where(
                Defense.tenant_id == self.tenant_id, Defense.idempotency_key == key
            )
        )

    def attack_by_key(self, key: str) -> Attack | None:
        return self.session.scalar(
            select(Attack).where(Attack.tenant_id == self.tenant_id, Attack.idempotency_key == key)
        )

    # Reads -------------------------------------------------------------------------------

    def defense(self, defense_id: uuid.UUID) -> Defense | None:
        return self.session.scalar(
            select(Defense).where(Defense.tenant_id == self.tenant_id, Defense.id == defense_id)
        )

    def attack(self, attack_id: uuid.UUID) -> Attack | None:
        return self.session.scalar(
            select(Attack).where(Attack.tenant_id == self.tenant_id, Attack.id == attack_id)
        )

    def match(self, match_id: uuid.UUID, *, for_update: bool = False) -> Match | None:
        query = select(Match).where(Match.tenant_id == self.tenant_id, Match.id == match_id)
        if for_update:
            query = query.with_for_update()
        return self.session.scalar(query)

    def match_counts(self, column: Any, entry_id: uuid.UUID) -> dict[MatchStatus, int]:
        rows = self.session.execute(
            select(Match.status, func.count())
            .where(Match.tenant_id == self.tenant_id, column == entry_id)
            .group_by(Match.status)
        ).tuples()
        return {status: int(count) for status, count in rows}

    def matches_page(
        self,
        challenge_id: uuid.UUID,
        *,
        attack_id: uuid.UUID | None,
        defense_id: uuid.UUID | None,
        participant_id: uuid.UUID | None,
        limit: int,
        offset: int,
    ) -> tuple[list[Match], int]:
        conditions = [Match.tenant_id == self.tenant_id, Match.challenge_id == challenge_id]
        if attack_id is not None:
            conditions.append(Match.attack_id == attack_id)
        if defense_id is not None:
            conditions.append(Match.defense_id == defense_id)
        if participant_id is not None:
            conditions.append(
                or_(
                    Match.red_participant_id == participant_id,
                    Match.blue_participant_id == participant_id,
                )
            )
        return page_where(
            self.session,
            Match,
            conditions,
            (Match.created_at.desc(), Match.id),
            limit=limit,
            offset=offset,
        )

    def entries_of(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID, *, limit: int
    ) -> tuple[list[Defense], list[Attack]]:
        """One participant's newest defenses and attacks at one challenge."""
        defenses = self.session.scalars(
            select(Defense)
            .where(
                Defense.tenant_id == self.tenant_id,
                Defense.challenge_id == challenge_id,
                Defense.participant_id == participant_id,
            )
            .order_by(Defense.created_at.desc(), Defense.id)
            .limit(limit)
        )
        attacks = self.session.scalars(
            select(Attack)
            .where(
                Attack.tenant_id == self.tenant_id,
                Attack.challenge_id == challenge_id,
                Attack.participant_id == participant_id,
            )
            .order_by(Attack.created_at.desc(), Attack.id)
            .limit(limit)
        )
        return list(defenses), list(attacks)

    def ratings_page(
        self, challenge_id: uuid.UUID, side: Side, *, limit: int, offset: int
    ) -> tuple[list[BoardLine], int]:
        """A page of one side's board in its stored order, with each participant's handle.
        A side's positions are 1..n with no gap (`write_board`), so the page is the positions
        after `offset` and the total is the last position: two short range scans of
        ix_redblue_ratings_board_position, whatever the offset (an OFFSET would read and
        join every row before the page)."""
        side_rows = (
            Rating.challenge_id == challenge_id,
            Rating.side == side,
            Rating.tenant_id == self.tenant_id,
        )
        rows = self.session.execute(
            select(
                Participant.handle,
                Rating.rank,
                Rating.rating,
                Rating.rating_low,
                Rating.rating_high,
                Rating.points,
                Rating.matches,
                Rating.wins,
            )
            .join(Participant, Participant.id == Rating.participant_id)
            .where(*side_rows, Rating.position > offset)
            .order_by(Rating.position)
            .limit(limit)
        ).tuples()
        total = self.session.scalar(select(func.max(Rating.position)).where(*side_rows))
        return [BoardLine(*row) for row in rows], total or 0

    def board(self, challenge_id: uuid.UUID) -> Board | None:
        return self.session.scalar(
            select(Board).where(
                Board.tenant_id == self.tenant_id, Board.challenge_id == challenge_id
            )
        )

    def error_matches(self, *, limit: int) -> list[tuple[Match, str]]:
        """The tenant's matches that ended in error, newest first, with their challenge's
        title (the admin page's list; `ix_redblue_matches_status_enqueued` leads by status)."""
        rows = self.session.execute(
            select(Match, Challenge.title)
            .join(Challenge, Challenge.id == Match.challenge_id)
            .where(Match.tenant_id == self.tenant_id, Match.status == MatchStatus.ERROR)
            .order_by(Match.finished_at.desc(), Match.id)
            .limit(limit)
        )
        return [(match, title) for match, title in rows]

    def requeue_match(self, match: Match, now: datetime) -> None:
        match.status = MatchStatus.QUEUED
        match.error = None
        match.error_detail = None
        match.finished_at = None
        match.run_token = None
        match.lease_expires_at = None
        match.run_count = 0
        match.enqueued_at = now
        self.session.flush()

    def requeue_defense(self, defense: Defense, now: datetime) -> None:
        defense.status = DefenseStatus.PENDING
        defense.reason = None
        defense.error_detail = None
        defense.finished_at = None
        defense.run_token = None
        defense.lease_expires_at = None
        defense.run_count = 0
        defense.enqueued_at = now
        self.session.flush()


# Worker side ----------------------------------------------------------------------------------


def get_defense(session: Session, defense_id: uuid.UUID) -> Defense | None:
    return session.get(Defense, defense_id)


def get_challenge(session: Session, challenge_id: uuid.UUID) -> Challenge | None:
    return session.get(Challenge, challenge_id)


def claim_defense(
    session: Session, defense_id: uuid.UUID, token: uuid.UUID, now: datetime, lease_until: datetime
) -> int | None:
    """Takes a pending defense whose self-test nobody holds (or whose holder's lease ran out);
    returns the run number, or None."""
    result = session.execute(
        update(Defense)
        .where(
            Defense.id == defense_id,
            Defense.status == DefenseStatus.PENDING,
            or_(Defense.lease_expires_at.is_(None), Defense.lease_expires_at < now),
        )
        .values(
            run_token=token,
            lease_expires_at=lease_until,
            started_at=func.coalesce(Defense.started_at, now),
            run_count=Defense.run_count + 1,
        )
        .returning(Defense.run_count)
    )
    return result.scalar_one_or_none()


def defense_if_held(session: Session, defense_id: uuid.UUID, token: uuid.UUID) -> Defense | None:
    return session.scalar(
        select(Defense)
        .where(
            Defense.id == defense_id,
            Defense.run_token == token,
            Defense.status == DefenseStatus.PENDING,
        )
        .with_for_update()
    )


@dataclass(frozen=True, slots=True)
class ClaimedMatch:
    """A match this worker now holds, with the exact texts of its call."""

    id: uuid.UUID
    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    run_count: int
    system_prompt: str | None
    user_message: str | None


def claim_matches(
    session: Session,
    match_ids: Sequence[uuid.UUID],
    token: uuid.UUID,
    now: datetime,
    lease_until: datetime,
) -> list[ClaimedMatch]:
    """Takes those of the matches that are queued, or running under an expired lease, in one
    statement; the others (finished, or held by another worker) are left alone. The claim
    stores the exact texts of the call (the defense as system prompt, the attack as user
    message): a re-run calls with the same. Returns the matches taken, with their run number."""
    if not match_ids:
        return []
    m = _MATCHES.c
    defense_text = select(Defense.system_prompt).where(Defense.id == m.defense_id)
    attack_text = select(Attack.prompt).where(Attack.id == m.attack_id)
    rows = session.execute(
        update(_MATCHES)
        .where(
            m.id.in_(match_ids),
            or_(
                m.status == MatchStatus.QUEUED,
                (m.status == MatchStatus.RUNNING) & (m.lease_expires_at < now),
            ),
        )
        .values(
            status=MatchStatus.RUNNING,
            run_token=token,
            lease_expires_at=lease_until,
            started_at=func.coalesce(m.started_at, now),
            run_count=m.run_count + 1,
            system_prompt=defense_text.scalar_subquery(),
            user_message=attack_text.scalar_subquery(),
        )
        .returning(m.id, m.tenant_id, m.challenge_id, m.run_count, m.system_prompt, m.user_message)
    ).tuples()
    return [ClaimedMatch(*row) for row in rows]


def finish_match(
    session: Session, match_id: uuid.UUID, token: uuid.UUID, values: dict[str, Any]
) -> tuple[uuid.UUID, uuid.UUID] | None:
    """Ends a running match held by this token with these values (one UPDATE); the
    (tenant id, challenge id) of the match, or None when the lease was lost."""
    m = _MATCHES.c
    result = session.execute(
        update(_MATCHES)
        .where(m.id == match_id, m.run_token == token, m.status == MatchStatus.RUNNING)
        .values(lease_expires_at=None, **values)
        .returning(m.tenant_id, m.challenge_id)
    ).first()
    return None if result is None else (result[0], result[1])


def challenge_version(session: Session, challenge_id: uuid.UUID) -> datetime | None:
    """When the challenge was last changed (None: it is gone): its parsed configuration can
    be reused while this stays the same."""
    return session.scalar(select(Challenge.updated_at).where(Challenge.id == challenge_id))


def renew_match_leases(
    session: Session, match_ids: Sequence[uuid.UUID], token: uuid.UUID, lease_until: datetime
) -> int:
    """Extends the lease of those of the matches this token still holds; how many."""
    result = session.execute(
        update(Match)
        .where(
            Match.id.in_(match_ids),
            Match.run_token == token,
            Match.status == MatchStatus.RUNNING,
        )
        .values(lease_expires_at=lease_until)
        .returning(Match.id)
    )
    return len(result.all())


def renew_defense_lease(
    session: Session, defense_id: uuid.UUID, token: uuid.UUID, lease_until: datetime
) -> bool:
    """Extends the lease of a self-test this token still holds."""
    result = session.execute(
        update(Defense)
        .where(
            Defense.id == defense_id,
            Defense.run_token == token,
            Defense.status == DefenseStatus.PENDING,
        )
        .values(lease_expires_at=lease_until)
        .returning(Defense.id)
    )
    return result.scalar_one_or_none() is not None


def add_match_spend(session: Session, match_id: uuid.UUID, amount_usd: float) -> None:
    session.execute(
        update(Match).where(Match.id == match_id).values(spent_usd=Match.spent_usd + amount_usd)
    )


def match_spend(session: Session, match_id: uuid.UUID) -> float:
    return float(session.scalar(select(Match.spent_usd).where(Match.id == match_id)) or 0.0)


# Pairing


def active_defenses(session: Session, challenge_id: uuid.UUID) -> list[Entry]:
    rows = session.execute(
        select(Defense.id, Defense.participant_id, Defense.created_at).where(
            Defense.challenge_id == challenge_id, Defense.status == DefenseStatus.ACTIVE
        )
    ).tuples()
    return [Entry(*row) for row in rows]


def attacks_of(session: Session, challenge_id: uuid.UUID) -> list[Entry]:
    rows = session.execute(
        select(Attack.id, Attack.participant_id, Attack.created_at).where(
            Attack.challenge_id == challenge_id
        )
    ).tuples()
    return [Entry(*row) for row in rows]


def ratings_of(session: Session, challenge_id: uuid.UUID, side: Side) -> dict[uuid.UUID, float]:
    """The side's current ratings by participant (latest_best pairs by them)."""
    rows = session.execute(
        select(Rating.participant_id, Rating.rating).where(
            Rating.challenge_id == challenge_id, Rating.side == side
        )
    ).tuples()
    return {key: value for key, value in rows}


def newest_active_defense(
    session: Session, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> uuid.UUID | None:
    return session.scalar(
        select(Defense.id)
        .where(
            Defense.challenge_id == challenge_id,
            Defense.participant_id == participant_id,
            Defense.status == DefenseStatus.ACTIVE,
        )
        .order_by(Defense.created_at.desc(), Defense.id.desc())
        .limit(1)
    )


def pairs_of(
    session: Session, column: Any, entry_id: uuid.UUID
) -> set[tuple[uuid.UUID, uuid.UUID]]:
    rows = session.execute(
        select(Match.attack_id, Match.defense_id).where(column == entry_id)
    ).tuples()
    return set(rows)


def insert_matches(session: Session, rows: Sequence[dict[str, Any]]) -> list[uuid.UUID]:
    """Inserts these matches, skipping a pair that already has one (UNIQUE(attack_id,
    defense_id)); the ids of those inserted now."""
    inserted: list[uuid.UUID] = []
    build = insert_for(session)
    for row in rows:
        found = session.execute(
            build(_MATCHES)
            .values(row)
            .on_conflict_do_nothing(index_elements=["attack_id", "defense_id"])
            .returning(_MATCHES.c.id)
        ).first()
        if found is not None:
            inserted.append(found[0])
    return inserted


def lock_attack(session: Session, attack_id: uuid.UUID) -> Attack | None:
    """The attack, locked until the transaction ends: its pairings run one at a time (SQLite:
    the database's write lock)."""
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    return session.scalar(select(Attack).where(Attack.id == attack_id).with_for_update())


def lock_defense(session: Session, defense_id: uuid.UUID) -> Defense | None:
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    return session.scalar(select(Defense).where(Defense.id == defense_id).with_for_update())


# The board: debounced recompute and standings


def mark_board_dirty(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, now: datetime
) -> bool:
    """Marks the challenge's board dirty; True when it was clean (the caller then sends one
    recompute), False when a recompute is already due. One statement either way."""
    build = insert_for(session)
    values = build(Board).values(
        challenge_id=challenge_id,
        tenant_id=tenant_id,
        dirty=True,
        dirty_since=now,
        generation=0,
        written_generation=0,
        red_points=0,
        blue_points=0,
        matches=0,
    )
    statement = values.on_conflict_do_update(
        index_elements=["challenge_id"],
        set_={"dirty": True, "dirty_since": now},
        where=Board.dirty.is_(False),
    ).returning(Board.challenge_id)
    return session.execute(statement).first() is not None


def claim_board(session: Session, challenge_id: uuid.UUID) -> int | None:
    """Takes a dirty board's recompute: clears the flag, returns the claim's generation."""
    result = session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id, Board.dirty.is_(True))
        .values(dirty=False, dirty_since=None, generation=Board.generation + 1)
        .returning(Board.generation)
    )
    return result.scalar_one_or_none()


def outcomes(session: Session, challenge_id: uuid.UUID) -> list[Outcome]:
    rows = session.execute(
        select(
            Match.red_participant_id,
            Match.blue_participant_id,
            Match.attack_won,
            Match.red_points,
            Match.blue_points,
        ).where(Match.challenge_id == challenge_id, Match.status == MatchStatus.COMPLETED)
    ).tuples()
    return [Outcome(r, b, bool(w), int(rp or 0), int(bp or 0)) for r, b, w, rp, bp in rows]


def handles_of(session: Session, participant_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not participant_ids:
        return {}
    rows = session.execute(
        select(Participant.id, Participant.handle).where(Participant.id.in_(participant_ids))
    ).tuples()
    return {key: value for key, value in rows}


def write_board(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    generation: int,
    rows: Sequence[RatingRow],
    *,
    red_points: int,
    blue_points: int,
    matches: int,
    now: datetime,
) -> bool:
    """Replaces the challenge's ratings and standings, unless a later claim already wrote
    them; False then. Each side's rows come with positions 1..n, no gap, as the leaderboard
    page reads them (`RedBlueRepository.ratings_page`). The board's row is locked first, so
    two recomputes write one after the
    other and the later claim's result stays."""
    for side in Side:
        positions = sorted(row.position for row in rows if row.side is side)
        if positions != list(range(1, len(positions) + 1)):
            raise ValueError(f"the {side.value} board's positions are not 1..{len(positions)}")
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    written = session.scalar(
        select(Board.written_generation).where(Board.challenge_id == challenge_id).with_for_update()
    )
    if written is None or written >= generation:
        return False
    session.execute(delete(Rating).where(Rating.challenge_id == challenge_id))
    if rows:
        session.execute(
            insert(_RATINGS),
            [
                {
                    "challenge_id": challenge_id,
                    "tenant_id": tenant_id,
                    "participant_id": row.participant_id,
                    "side": row.side.value,
                    "position": row.position,
                    "rank": row.rank,
                    "rating": row.rating,
                    "rating_low": row.rating_low,
                    "rating_high": row.rating_high,
                    "points": row.points,
                    "matches": row.matches,
                    "wins": row.wins,
                }
                for row in rows
            ],
        )
    session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id)
        .values(
            written_generation=generation,
            red_points=red_points,
            blue_points=blue_points,
            matches=matches,
            computed_at=now,
        )
    )
    return True


def mark_board_dirty_again(session: Session, challenge_id: uuid.UUID, now: datetime) -> None:
    """A recompute that failed leaves the board dirty, for the sweep to try again."""
    session.execute(
        update(Board).where(Board.challenge_id == challenge_id).values(dirty=True, dirty_since=now)
    )


# The sweep


def stuck_matches(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Queued matches last sent long ago (their message was lost) and running ones whose
    lease ran out (their worker died), not re-sent just now."""
    return lock_some_ids(
        session,
        Match.id,
        Match.enqueued_at < resent_before,
        or_(
            Match.status == MatchStatus.QUEUED,
            (Match.status == MatchStatus.RUNNING) & (Match.lease_expires_at < now),
        ),
        oldest_first=Match.enqueued_at,
        limit=limit,
    )


def stuck_defenses(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Pending defenses whose self-test nobody holds, and active ones never paired."""
    return lock_some_ids(
        session,
        Defense.id,
        Defense.enqueued_at < resent_before,
        or_(
            (Defense.status == DefenseStatus.PENDING)
            & or_(Defense.lease_expires_at.is_(None), Defense.lease_expires_at < now),
            (Defense.status == DefenseStatus.ACTIVE) & Defense.paired_at.is_(None),
        ),
        oldest_first=Defense.enqueued_at,
        limit=limit,
    )


def stuck_attacks(session: Session, resent_before: datetime, limit: int) -> list[uuid.UUID]:
    return lock_some_ids(
        session,
        Attack.id,
        Attack.paired_at.is_(None),
        Attack.enqueued_at < resent_before,
        oldest_first=Attack.enqueued_at,
        limit=limit,
    )


def stuck_boards(session: Session, dirty_before: datetime, limit: int) -> list[uuid.UUID]:
    return lock_some_ids(
        session,
        Board.challenge_id,
        Board.dirty.is_(True),
        Board.dirty_since < dirty_before,
        limit=limit,
    )


def mark_resent(session: Session, model: Any, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(update(model).where(model.id.in_(ids)).values(enqueued_at=now))


def mark_boards_resent(session: Session, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(update(Board).where(Board.challenge_id.in_(ids)).values(dirty_since=now))
