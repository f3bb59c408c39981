"""SQL of the red_blue kind.

Request-side reads and writes are scoped to a tenant (`RedBlueRepository`). Worker-side
statements take ids from the queue and guard every state change of a defense's self-test or
a match with the run token of its lease, through the lease statements (app/lease/).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    Table,
    Uuid,
    any_,
    bindparam,
    case,
    cast,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    true,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.challenge.models import Challenge, challenge_not_deleted
from app.db import count_where, insert_for, lock_some_ids, page_where, take_write_lock
from app.kinds.red_blue.match_result import JudgedMatch, MatchResult
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Board,
    Defense,
    DefenseStatus,
    FinalRound,
    FrozenRating,
    Match,
    MatchStatus,
    Rating,
    Side,
)
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.rules.final_round import HOLDS_FREEZE, phase_of
from app.leaderboard.freeze import before_board_write
from app.lease import repository as leases
from app.tenant.models import Participant

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]

T = TypeVar("T")
# A side's entry table.
EntryModel = TypeVar("EntryModel", Defense, Attack)

_MATCHES: Table = Match.__table__  # type: ignore[assignment]
_RATINGS: Table = Rating.__table__  # type: ignore[assignment]


# What a reader sees (app/kinds/red_blue/readers.py), as SQL for lists and counts: the same
# rule as `Reader.sees` and `Reader.settled` over a loaded row.


def shown_to(
    reader: Reader, model: type[Defense] | type[Attack] | type[Match]
) -> ColumnElement[bool]:
    """The rows of `model` that exist for the reader."""
    if reader.cutoff is None:
        return true()
    return or_(model.created_at < reader.cutoff, _owned_by(reader, model))


def match_status_for(reader: Reader) -> ColumnElement[Any]:
    """A match's status as the reader sees it: a match whose end came after the freeze (not
    their own) is still queued for them."""
    if reader.cutoff is None:
        return Match.status.expression
    ended_before = Match.finished_at.is_not(None) & (Match.finished_at < reader.cutoff)
    return case(
        (or_(_owned_by(reader, Match), ended_before), Match.status),
        else_=MatchStatus.QUEUED.value,
    )


def _owned_by(
    reader: Reader, model: type[Defense] | type[Attack] | type[Match]
) -> ColumnElement[bool]:
    owner = reader.participant_id
    if owner is None:
        return false()
    if model is Match:
        return or_(Match.red_participant_id == owner, Match.blue_participant_id == owner)
    entry: type[Defense] | type[Attack] = model  # type: ignore[assignment]
    return entry.participant_id == owner


@dataclass(frozen=True, slots=True)
class Entry:
    """An entry of one side, as pairing sees it."""

    id: uuid.UUID
    participant_id: uuid.UUID
    created_at: datetime


@dataclass(frozen=True, slots=True)
class RatingRow:
    participant_id: uuid.UUID
    side: Side
    position: int
    rank: int
    rating: float
    # None: the interval is open at that end (a participant who lost, or won, every match).
    rating_low: float | None
    rating_high: float | None
    points: int
    matches: int
    wins: int
    baseline: bool = False


@dataclass(frozen=True, slots=True)
class BoardLine:
    """A row of a leaderboard page."""

    handle: str
    rank: int
    rating: float
    # None: the interval is open at that end (a participant who lost, or won, every match).
    rating_low: float | None
    rating_high: float | None
    points: int
    matches: int
    wins: int
    baseline: bool = False
    participant_id: uuid.UUID | None = None


def _dialect(session: Session) -> str:
    return session.get_bind().dialect.name


@dataclass
class Activity:
    """A challenge's entries and matches, as its admins' dashboard counts them."""

    defenses: int = 0
    attacks: int = 0
    matches: dict[MatchStatus, int] = field(default_factory=dict)
    # Completed matches the ratings do not count yet (the next recompute will).
    unrated: int = 0


@dataclass
class Places:
    """Where a participant stands on a challenge: (side, rank, rating) per side they are
    rated on, best rank first, and the entries they submitted."""

    ratings: list[tuple[Side, int, float]] = field(default_factory=list)
    defenses: int = 0
    attacks: int = 0


class RedBlueRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    # Submissions -------------------------------------------------------------------------

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

    def entrants(
        self, challenge_id: uuid.UUID, participant_ids: Collection[uuid.UUID]
    ) -> set[uuid.UUID]:
        """Those of the participants with a defense or an attack at the challenge."""
        if not participant_ids:
            return set()
        found: set[uuid.UUID] = set()
        for model in (Defense, Attack):
            found.update(
                self.session.scalars(
                    select(model.participant_id)
                    .where(
                        model.tenant_id == self.tenant_id,
                        model.challenge_id == challenge_id,
                        model.participant_id.in_(participant_ids),
                    )
                    .distinct()
                )
            )
        return found

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
            select(Defense).where(
                Defense.tenant_id == self.tenant_id,
                Defense.id == defense_id,
                challenge_not_deleted(Defense.challenge_id),
            )
        )

    def attack(self, attack_id: uuid.UUID) -> Attack | None:
        return self.session.scalar(
            select(Attack).where(
                Attack.tenant_id == self.tenant_id,
                Attack.id == attack_id,
                challenge_not_deleted(Attack.challenge_id),
            )
        )

    def match(self, match_id: uuid.UUID, *, for_update: bool = False) -> Match | None:
        query = select(Match).where(
            Match.tenant_id == self.tenant_id,
            Match.id == match_id,
            challenge_not_deleted(Match.challenge_id),
        )
        if for_update:
            query = query.with_for_update()
        return self.session.scalar(query)

    def match_counts(
        self, column: Any, entry_id: uuid.UUID, reader: Reader
    ) -> dict[MatchStatus, int]:
        """A defense's (`column` Match.defense_id) or an attack's matches by status, as the
        reader sees them."""
        return self.match_counts_of(column, [entry_id], reader)[entry_id]

    def matches_page(
        self,
        challenge_id: uuid.UUID,
        *,
        attack_id: uuid.UUID | None,
        defense_id: uuid.UUID | None,
        participant_id: uuid.UUID | None,
        limit: int,
        offset: int,
        reader: Reader,
    ) -> tuple[list[Match], int]:
        conditions = [
            Match.tenant_id == self.tenant_id,
            Match.challenge_id == challenge_id,
            shown_to(reader, Match),
        ]
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
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID, reader: Reader, *, limit: int
    ) -> tuple[list[Defense], list[Attack]]:
        """One participant's newest defenses and attacks at one challenge that the reader
        sees."""

        def newest(model: type[EntryModel]) -> list[EntryModel]:
            return list(
                self.session.scalars(
                    select(model)
                    .where(
                        model.tenant_id == self.tenant_id,
                        model.challenge_id == challenge_id,
                        model.participant_id == participant_id,
                        shown_to(reader, model),
                    )
                    .order_by(model.created_at.desc(), model.id)
                    .limit(limit)
                )
            )

        defenses, attacks = newest(Defense), newest(Attack)
        return defenses, attacks

    def ratings_page(
        self,
        challenge_id: uuid.UUID,
        side: Side,
        *,
        limit: int,
        offset: int,
        frozen: bool = False,
    ) -> tuple[list[BoardLine], int]:
        """A page of one side's board in its stored order, with each participant's handle
        (`frozen`: of its copy as it stood when the challenge's freeze began). A side's
        positions are 1..n with no gap (`write_board`), so the page is the positions after
        `offset` and the total is the last position: two short range scans of the board's
        position index, whatever the offset (an OFFSET would read and join every row before
        the page)."""
        rows_of: type[Rating] | type[FrozenRating] = FrozenRating if frozen else Rating
        side_rows = (
            rows_of.challenge_id == challenge_id,
            rows_of.side == side,
            rows_of.tenant_id == self.tenant_id,
        )
        rows = self.session.execute(
            select(
                Participant.handle,
                rows_of.rank,
                rows_of.rating,
                rows_of.rating_low,
                rows_of.rating_high,
                rows_of.points,
                rows_of.matches,
                rows_of.wins,
                rows_of.baseline,
                rows_of.participant_id,
            )
            .join(Participant, Participant.id == rows_of.participant_id)
            .where(*side_rows, rows_of.position > offset)
            .order_by(rows_of.position)
            .limit(limit)
        ).tuples()
        total = self.session.scalar(select(func.max(rows_of.position)).where(*side_rows))
        lines = [
            BoardLine(handle, rank, rating, low, high, points, matches, wins, baseline, owner)
            for handle, rank, rating, low, high, points, matches, wins, baseline, owner in rows
        ]
        return lines, total or 0

    # Exports: a challenge's entries and matches oldest first, a batch after a cursor
    # (created_at, id), from the indexes that lead by (challenge_id, created_at).

    def in_created_order(
        self,
        model: type[Defense] | type[Attack] | type[Match],
        challenge_id: uuid.UUID,
        after: tuple[datetime, uuid.UUID] | None,
        limit: int,
        reader: Reader,
    ) -> list[Any]:
        query = select(model).where(
            model.tenant_id == self.tenant_id,
            model.challenge_id == challenge_id,
            shown_to(reader, model),
        )
        if after is not None:
            query = query.where(
                model.created_at >= after[0], tuple_(model.created_at, model.id) > tuple_(*after)
            )
        return list(self.session.scalars(query.order_by(model.created_at, model.id).limit(limit)))

    def match_counts_of(
        self, column: Any, entry_ids: Sequence[uuid.UUID], reader: Reader
    ) -> dict[uuid.UUID, dict[MatchStatus, int]]:
        """`match_counts` of many defenses (`column` Match.defense_id) or attacks at once."""
        counts: dict[uuid.UUID, dict[MatchStatus, int]] = {entry: {} for entry in entry_ids}
        if not entry_ids:
            return counts
        status = match_status_for(reader)
        rows = self.session.execute(
            select(column, status, func.count())
            .where(
                Match.tenant_id == self.tenant_id, column.in_(entry_ids), shown_to(reader, Match)
            )
            .group_by(column, status)
        ).tuples()
        for entry, seen_status, count in rows:
            counts[entry][MatchStatus(seen_status)] = int(count)
        return counts

    def activity_of(self, challenge_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, Activity]:
        """How many defenses, attacks and matches (by status) each challenge has, and how
        many completed matches its ratings do not count yet: one grouped query each."""
        activity = {challenge: Activity() for challenge in challenge_ids}
        if not challenge_ids:
            return activity
        for model in (Defense, Attack):
            rows = self.session.execute(
                select(model.challenge_id, func.count())
                .where(model.tenant_id == self.tenant_id, model.challenge_id.in_(challenge_ids))
                .group_by(model.challenge_id)
            ).tuples()
            for challenge, count in rows:
                if model is Defense:
                    activity[challenge].defenses = int(count)
                else:
                    activity[challenge].attacks = int(count)
        matches = self.session.execute(
            select(Match.challenge_id, Match.status, func.count())
            .where(Match.tenant_id == self.tenant_id, Match.challenge_id.in_(challenge_ids))
            .group_by(Match.challenge_id, Match.status)
        ).tuples()
        for challenge, status, count in matches:
            activity[challenge].matches[status] = int(count)
        unrated = self.session.execute(
            select(Match.challenge_id, func.count())
            .join(Board, Board.challenge_id == Match.challenge_id)
            .where(
                Match.tenant_id == self.tenant_id,
                Match.challenge_id.in_(challenge_ids),
                Match.board_seq > Board.rated_seq,
            )
            .group_by(Match.challenge_id)
        ).tuples()
        for challenge, count in unrated:
            activity[challenge].unrated = int(count)
        return activity

    def places_of(
        self, participant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID], *, frozen: bool
    ) -> dict[uuid.UUID, Places]:
        """Where one participant stands on each challenge: their ratings (side, rank,
        rating; `frozen`: on the boards' copies of when their freeze began) and how many
        defenses and attacks they submitted."""
        places = {challenge: Places() for challenge in challenge_ids}
        if not challenge_ids:
            return places
        rows_of: type[Rating] | type[FrozenRating] = FrozenRating if frozen else Rating
        ratings = self.session.execute(
            select(rows_of.challenge_id, rows_of.side, rows_of.rank, rows_of.rating)
            .where(
                rows_of.tenant_id == self.tenant_id,
                rows_of.participant_id == participant_id,
                rows_of.challenge_id.in_(challenge_ids),
            )
            .order_by(rows_of.rank, rows_of.side)
        ).tuples()
        for challenge, side, rank, rating in ratings:
            places[challenge].ratings.append((side, int(rank), float(rating)))
        for model in (Defense, Attack):
            rows = self.session.execute(
                select(model.challenge_id, func.count())
                .where(
                    model.tenant_id == self.tenant_id,
                    model.participant_id == participant_id,
                    model.challenge_id.in_(challenge_ids),
                )
                .group_by(model.challenge_id)
            ).tuples()
            for challenge, count in rows:
                if model is Defense:
                    places[challenge].defenses = int(count)
                else:
                    places[challenge].attacks = int(count)
        return places

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
            .where(
                Match.tenant_id == self.tenant_id,
                Match.status == MatchStatus.ERROR,
                Challenge.deleted_at.is_(None),
            )
            .order_by(Match.finished_at.desc(), Match.id)
            .limit(limit)
        )
        return [(match, title) for match, title in rows]

    def requeue_match(self, match: Match, now: datetime) -> None:
        MATCH_LEASES.queue_again(match, now)
        match.error = None
        self.session.flush()

    def requeue_defense(self, defense: Defense, now: datetime) -> None:
        SELF_TEST_LEASES.queue_again(defense, now)
        defense.reason = None
        self.session.flush()


# Worker side ----------------------------------------------------------------------------------


def get_challenge(session: Session, challenge_id: uuid.UUID) -> Challenge | None:
    """The challenge, unless it is gone or deleted (its work waits until it is restored)."""
    challenge = session.get(Challenge, challenge_id)
    return None if challenge is None or challenge.deleted_at is not None else challenge


def claim_defense(
    session: Session, defense_id: uuid.UUID, token: uuid.UUID, now: datetime, lease_until: datetime
) -> Defense | None:
    """Takes a pending defense whose self-test nobody holds (or whose holder's lease ran out)
    and reads it back; None when it is not pending or another worker holds it."""
    claimed = leases.claim(
        session,
        SELF_TEST_LEASES,
        [defense_id],
        token,
        now,
        lease_until,
        returning=[Defense],
    )
    return claimed.scalars().one_or_none()


def defense_if_held(session: Session, defense_id: uuid.UUID, token: uuid.UUID) -> Defense | None:
    return leases.lock_held(session, SELF_TEST_LEASES, defense_id, token)


@dataclass(frozen=True, slots=True)
class ClaimedMatch:
    """A match this worker now holds, as the claim statement returns it: its run number and
    the exact texts of its call (None when its attack or defense is gone). The worker's
    `MatchJob` is what it plays (these texts with the challenge's rules); how it ended is a
    `MatchResult`."""

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
    defense_text = select(Defense.system_prompt).where(Defense.id == Match.defense_id)
    attack_text = select(Attack.prompt).where(Attack.id == Match.attack_id)
    rows = leases.claim(
        session,
        MATCH_LEASES,
        match_ids,
        token,
        now,
        lease_until,
        returning=[
            Match.id,
            Match.tenant_id,
            Match.challenge_id,
            Match.run_count,
            Match.system_prompt,
            Match.user_message,
        ],
        system_prompt=defense_text.scalar_subquery(),
        user_message=attack_text.scalar_subquery(),
    ).tuples()
    return [ClaimedMatch(*row) for row in rows]


def _ended_columns(result: MatchResult) -> dict[str, Any]:
    """The match row's columns of how it ended."""
    if isinstance(result, JudgedMatch):
        return {
            "status": MatchStatus.COMPLETED,
            "output": result.output,
            "verdicts": result.stored_verdicts(),
            "breached": result.breached,
            "red_points": result.red_points,
            "blue_points": result.blue_points,
            "attack_won": result.attack_won,
            "tokens_total": result.tokens_total,
            "elapsed_ms": result.elapsed_ms,
            "cost_usd": result.cost_usd,
        }
    return {
        "status": MatchStatus.ERROR,
        "error": result.reason,
        "error_detail": result.detail,
        # An error counts for no one.
        "red_points": None,
        "blue_points": None,
        "attack_won": None,
        "breached": None,
        "verdicts": None,
    }


def finish_match(
    session: Session,
    match_id: uuid.UUID,
    token: uuid.UUID,
    result: MatchResult,
    finished_at: datetime,
) -> tuple[uuid.UUID, uuid.UUID] | None:
    """Ends a running match held by this token with its result (one UPDATE); the
    (tenant id, challenge id) of the match, or None when the lease was lost."""
    written = leases.release(
        session,
        MATCH_LEASES,
        [match_id],
        token,
        returning=[Match.tenant_id, Match.challenge_id],
        finished_at=finished_at,
        **_ended_columns(result),
    ).first()
    return None if written is None else (written[0], written[1])


def challenge_version(session: Session, challenge_id: uuid.UUID) -> datetime | None:
    """When the challenge was last changed (None: it is gone): its parsed configuration can
    be reused while this stays the same."""
    return session.scalar(
        select(Challenge.updated_at).where(
            Challenge.id == challenge_id, Challenge.deleted_at.is_(None)
        )
    )


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
    return session.scalar(_newest_active_defense(Defense.id, challenge_id, participant_id))


def newest_active_defense_text(
    session: Session, challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> str | None:
    return session.scalar(
        _newest_active_defense(Defense.system_prompt, challenge_id, participant_id)
    )


def _newest_active_defense(
    column: InstrumentedAttribute[T], challenge_id: uuid.UUID, participant_id: uuid.UUID
) -> Select[T]:
    """The participant's newest active defense here: the one that plays for them."""
    return (
        select(column)
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


@dataclass(frozen=True, slots=True, kw_only=True)
class NewMatch:
    """A queued match to insert: the attack and defense it plays, their participants, and
    when it was made (also its first send). Pairing and the final round build these; the
    row's id is chosen here unless the caller needs it in advance."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    attack_id: uuid.UUID
    defense_id: uuid.UUID
    red_participant_id: uuid.UUID
    blue_participant_id: uuid.UUID
    created_at: datetime
    final_round: bool = False
    id: uuid.UUID = field(default_factory=uuid.uuid4)


def _queued_row(match: NewMatch) -> dict[str, Any]:
    """The match's row as the INSERT writes it: queued, sent when made, never run."""
    return {
        "id": match.id,
        "tenant_id": match.tenant_id,
        "challenge_id": match.challenge_id,
        "attack_id": match.attack_id,
        "defense_id": match.defense_id,
        "red_participant_id": match.red_participant_id,
        "blue_participant_id": match.blue_participant_id,
        "status": MatchStatus.QUEUED.value,
        "created_at": match.created_at,
        "enqueued_at": match.created_at,
        "run_count": 0,
        "spent_usd": 0.0,
        "final_round": match.final_round,
    }


def insert_matches(session: Session, matches: Sequence[NewMatch]) -> list[uuid.UUID]:
    """Inserts these matches, skipping a pair that already has one (UNIQUE(attack_id,
    defense_id)); the ids of those inserted now."""
    inserted: list[uuid.UUID] = []
    build = insert_for(session)
    for match in matches:
        found = session.execute(
            build(_MATCHES)
            .values(_queued_row(match))
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


# The board: matches landing, the recompute and the standings


@dataclass(frozen=True, slots=True)
class Landing:
    """What a transaction that completed matches learnt of their board."""

    seq: int
    turned_dirty: bool
    recompute_due_at: datetime | None


def land_matches(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    match_ids: Sequence[uuid.UUID],
    now: datetime,
) -> Landing:
    """Numbers the matches this transaction completed with their board's next landing number
    and marks the board dirty. The board's row stays locked until the transaction ends, so
    landing numbers are committed in order. `turned_dirty`: the board was clean (the caller
    then sends one recompute, not before `recompute_due_at`)."""
    build = insert_for(session)
    upsert = (
        build(Board)
        .values(
            challenge_id=challenge_id,
            tenant_id=tenant_id,
            dirty=False,
            generation=0,
            written_generation=0,
            red_points=0,
            blue_points=0,
            matches=0,
            landed_seq=1,
            rated_seq=0,
            intervals_seq=0,
        )
        .on_conflict_do_update(
            index_elements=["challenge_id"], set_={"landed_seq": Board.landed_seq + 1}
        )
        .returning(Board.landed_seq, Board.dirty, Board.recompute_due_at)
    )
    seq, dirty, due = session.execute(upsert).one()
    session.execute(update(_MATCHES).where(_MATCHES.c.id.in_(match_ids)).values(board_seq=seq))
    if not dirty:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(dirty=True, dirty_since=now)
        )
    return Landing(seq, not dirty, due)


@dataclass(frozen=True, slots=True)
class BoardClaim:
    """A recompute's claim: its generation, the landing number it rates up to, whether it
    also bootstraps the intervals, and the landing the board's intervals were from then."""

    generation: int
    landed_seq: int
    refresh_intervals: bool
    intervals_seq: int
    claimed_at: datetime
    # Whether it took the dirty flag (a recompute of the landings, paced), or only the
    # interval refresh (leaving the flag to the recompute the landings sent).
    took_landings: bool


@dataclass(frozen=True, slots=True)
class Pacing:
    """How claims space a board's recomputes: from the seconds the last one took, how long
    after this claim the next may start (landings meanwhile send theirs for then), and how
    long a claimed interval refresh keeps other recomputes from starting one."""

    next_recompute: Callable[[float | None], timedelta]
    refresh_hold: Callable[[float | None], timedelta]


def claim_board(
    session: Session,
    challenge_id: uuid.UUID,
    now: datetime,
    pacing: Pacing,
    *,
    intervals_only: bool = False,
) -> BoardClaim | None:
    """Takes the board's recompute when it is dirty, or when its intervals are older than its
    matches and due: clears the flag, returns the claim (None: nothing to do). The claim sets
    when the next recompute may start, from the last one's cost (the write corrects it with
    this one's), and a claim that takes the interval refresh holds it, so a second recompute
    meanwhile does not bootstrap too.

    `intervals_only` (a follow-up sent for the refresh): only a due refresh is taken, and the
    dirty flag and the pacing are left as they are, so the recompute that the landings sent
    still comes, when it was due."""
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    board = session.execute(
        select(
            Board.dirty,
            Board.generation,
            Board.landed_seq,
            Board.rated_seq,
            Board.intervals_seq,
            Board.intervals_due_at,
            Board.intervals_seconds,
            Board.recompute_seconds,
        )
        .where(Board.challenge_id == challenge_id, challenge_not_deleted(Board.challenge_id))
        .with_for_update()
    ).first()
    if board is None:
        # No board, or its challenge is deleted: its flags stay for after a restore.
        return None
    dirty, generation, landed, rated, intervals, due, refresh_seconds, recompute_seconds = board
    refresh = intervals < landed and (due is None or due <= now)
    if not refresh and (intervals_only or not dirty):
        return None
    if not refresh and rated == landed:
        # Dirty, but an interval refresh has rated every landing since: nothing to do.
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id)
            .values(dirty=False, dirty_since=None)
        )
        return None
    values: dict[str, Any] = {"generation": generation + 1}
    if not intervals_only:
        values["dirty"] = False
        values["dirty_since"] = None
        values["recompute_due_at"] = now + pacing.next_recompute(recompute_seconds)
    if refresh:
        values["intervals_due_at"] = now + pacing.refresh_hold(refresh_seconds)
    session.execute(update(Board).where(Board.challenge_id == challenge_id).values(values))
    return BoardClaim(generation + 1, landed, refresh, intervals, now, not intervals_only)


@dataclass(frozen=True)
class Landed:
    """Completed matches of some landings, as columns: the red and the blue participants they
    name (each once), and per row (one match, or the matches of one pair summed) the index of
    its red and its blue participant in those lists, how many matches, how many red won, and
    both sides' points."""

    reds: list[uuid.UUID]
    blues: list[uuid.UUID]
    red: IntArray
    blue: IntArray
    matches: IntArray
    red_wins: IntArray
    red_points: IntArray
    blue_points: IntArray


def landed_matches(
    session: Session, challenge_id: uuid.UUID, after_seq: int | None, up_to_seq: int
) -> Landed:
    """The completed matches that landed after `after_seq` (None: from the first) up to
    `up_to_seq` (ix_redblue_matches_challenge_board_seq), into arrays, never one ORM object
    per match. On PostgreSQL from the driver's cursor, participant ids kept as bytes (a
    million matches in 1.5 s where rows with a UUID object per id took 7 s, and summing per
    pair in the database first took longer, bench/README.md); elsewhere (the embedded mode's
    SQLite), summed per pair by the database."""
    m = _MATCHES.c
    conditions = [
        m.challenge_id == challenge_id,
        m.status == MatchStatus.COMPLETED,
        m.board_seq <= up_to_seq,
    ]
    if after_seq is not None:
        conditions.append(m.board_seq > after_seq)
    if _dialect(session) == "postgresql":
        return _fetched_matches(session, conditions)
    rows = session.execute(
        select(
            m.red_participant_id,
            m.blue_participant_id,
            func.count(),
            func.sum(case((m.attack_won.is_(True), 1), else_=0)),
            func.sum(func.coalesce(m.red_points, 0)),
            func.sum(func.coalesce(m.blue_points, 0)),
        )
        .where(*conditions)
        .group_by(m.red_participant_id, m.blue_participant_id)
    ).all()
    return _landed_of_rows(rows)


def _landed_of_rows(rows: Sequence[Any]) -> Landed:
    # numpy (~0.15 s) loads with the first ratings read, not with the API.
    import numpy as np

    reds: dict[uuid.UUID, int] = {}
    blues: dict[uuid.UUID, int] = {}
    red = [reds.setdefault(row[0], len(reds)) for row in rows]
    blue = [blues.setdefault(row[1], len(blues)) for row in rows]

    def column(index: int) -> IntArray:
        return np.fromiter((int(row[index] or 0) for row in rows), np.int64, len(rows))

    return Landed(
        list(reds),
        list(blues),
        np.asarray(red, np.int64),
        np.asarray(blue, np.int64),
        column(2),
        column(3),
        column(4),
        column(5),
    )


def _fetched_matches(session: Session, conditions: list[Any]) -> Landed:
    """The matches one row each, from the driver's cursor in binary with participant ids left
    as their 16 bytes: no Python object per match beyond the driver's row tuple."""
    # numpy (~0.15 s) loads with the first ratings read, not with the API.
    import numpy as np
    from psycopg.types.string import ByteaBinaryLoader

    m = _MATCHES.c
    query = select(
        m.red_participant_id,
        m.blue_participant_id,
        cast(m.attack_won, Integer),
        func.coalesce(m.red_points, 0),
        func.coalesce(m.blue_points, 0),
    ).where(*conditions)
    # The values (a UUID, integers, a status) rendered by their column types: the statement
    # goes to the driver as it is.
    statement = str(
        query.compile(dialect=session.get_bind().dialect, compile_kwargs={"literal_binds": True})
    )
    driver = session.connection().connection.driver_connection
    assert driver is not None
    with driver.cursor(binary=True) as cursor:
        cursor.adapters.register_loader("uuid", ByteaBinaryLoader)
        rows = cursor.execute(statement).fetchall()
    count = len(rows)

    def column(index: int) -> IntArray:
        return np.fromiter((row[index] for row in rows), np.int64, count)

    def numbered(index: int) -> tuple[list[uuid.UUID], IntArray]:
        numbers: dict[bytes, int] = {}
        column = np.fromiter(
            (numbers.setdefault(row[index], len(numbers)) for row in rows), np.int64, count
        )
        return [uuid.UUID(bytes=key) for key in numbers], column

    reds, red = numbered(0)
    blues, blue = numbered(1)
    return Landed(reds, blues, red, blue, np.ones(count, np.int64), column(2), column(3), column(4))


def handles_of(session: Session, participant_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    if not participant_ids:
        return {}
    rows = session.execute(
        select(Participant.id, Participant.handle).where(Participant.id.in_(participant_ids))
    ).tuples()
    return {key: value for key, value in rows}


def baseline_players(session: Session, challenge_id: uuid.UUID) -> dict[Side, set[uuid.UUID]]:
    """The participants whose entries of each side are baselines (an admin's reference
    entries): red by their attacks, blue by their defenses."""
    found: dict[Side, set[uuid.UUID]] = {Side.RED: set(), Side.BLUE: set()}
    for side, model in ((Side.RED, Attack), (Side.BLUE, Defense)):
        rows = session.scalars(
            select(model.participant_id)
            .where(model.challenge_id == challenge_id, model.baseline)
            .distinct()
        )
        found[side].update(rows)
    return found


def stored_ratings(session: Session, challenge_id: uuid.UUID) -> list[RatingRow]:
    """The board's rows as written (a recompute's start, and what a write compares with)."""
    r = _RATINGS.c
    rows = session.execute(
        select(
            r.participant_id,
            r.side,
            r.position,
            r.rank,
            r.rating,
            r.rating_low,
            r.rating_high,
            r.points,
            r.matches,
            r.wins,
            r.baseline,
        ).where(r.challenge_id == challenge_id)
    ).tuples()
    return [RatingRow(pid, Side(side), *rest) for pid, side, *rest in rows]


@dataclass(frozen=True, slots=True)
class BoardWrite:
    """What one recompute writes: both sides' rows and the standings, the landing numbers they
    come from, and when the intervals were computed (a refresh) or None (kept from before)."""

    rows: Sequence[RatingRow]
    red_points: int
    blue_points: int
    matches: int
    rated_seq: int
    intervals_seq: int
    intervals_computed_at: datetime | None


@dataclass(frozen=True, slots=True)
class Written:
    """A write that took: how many rows it changed, and the board's marker of what it wrote."""

    changed: int
    marker: tuple[int, int]


def write_board(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    generation: int,
    board: BoardWrite,
    now: datetime,
    known: tuple[tuple[int, int], Sequence[RatingRow]] | None = None,
) -> Written | None:
    """Writes the challenge's ratings and standings if they are newer than the board's: rated
    from later landings, or from the same ones with intervals from later ones (None
    otherwise: a board never goes back, whatever order recomputes finish in). The board's row
    is locked first, so two recomputes write one after the other. Only the rows that differ
    from those stored are rewritten; `known` is what the caller knows to be stored under a
    board marker ((rated_seq, intervals_seq)), which saves reading them when it is still so.
    Each side's rows come with positions 1..n, no gap, as the leaderboard page reads them
    (`RedBlueRepository.ratings_page`)."""
    rows = board.rows
    for side in Side:
        positions = sorted(row.position for row in rows if row.side is side)
        if positions != list(range(1, len(positions) + 1)):
            raise ValueError(f"the {side.value} board's positions are not 1..{len(positions)}")
    if _dialect(session) == "sqlite":
        take_write_lock(session)
    current = session.execute(
        select(Board.rated_seq, Board.intervals_seq)
        .where(Board.challenge_id == challenge_id)
        .with_for_update()
    ).first()
    marker = (board.rated_seq, board.intervals_seq)
    if current is None or tuple(current) >= marker:
        return None
    held = final_round_holds_freeze(session, challenge_id, now)
    before_board_write(session, challenge_id, copy_to_frozen, held=held)
    stored = known[1] if known is not None and known[0] == tuple(current) else None
    if stored is None:
        stored = stored_ratings(session, challenge_id)
    before = {(row.side, row.participant_id): row for row in stored}
    after = {(row.side, row.participant_id): row for row in rows}
    gone = [key for key in before if key not in after]
    changed = [row for key, row in after.items() if before.get(key) != row]
    replaced = gone + [
        key for key in ((row.side, row.participant_id) for row in changed) if key in before
    ]
    for side in Side:
        ids = [participant for row_side, participant in replaced if row_side is side]
        if ids:
            _delete_ratings(session, challenge_id, side, ids)
    if changed:
        _insert_ratings(session, tenant_id, challenge_id, changed)
    values: dict[str, Any] = {
        "written_generation": generation,
        "rated_seq": board.rated_seq,
        "intervals_seq": board.intervals_seq,
        "red_points": board.red_points,
        "blue_points": board.blue_points,
        "matches": board.matches,
        "computed_at": now,
    }
    if board.intervals_computed_at is not None:
        values["intervals_computed_at"] = board.intervals_computed_at
    session.execute(update(Board).where(Board.challenge_id == challenge_id).values(values))
    return Written(len(changed) + len(gone), marker)


def copy_to_frozen(session: Session, challenge_id: uuid.UUID) -> dict[str, Any]:
    """Both sides' rows as they stand, into the board's frozen copy (replacing any), and the
    standings of now (the snapshot keeps them)."""
    frozen: Table = FrozenRating.__table__  # type: ignore[assignment]
    session.execute(delete(frozen).where(frozen.c.challenge_id == challenge_id))
    session.execute(
        frozen.insert().from_select(
            _RATING_COLUMNS,
            select(*(_RATINGS.c[name] for name in _RATING_COLUMNS)).where(
                _RATINGS.c.challenge_id == challenge_id
            ),
        )
    )
    standings = session.execute(
        select(
            Board.red_points,
            Board.blue_points,
            Board.matches,
            Board.computed_at,
            Board.intervals_computed_at,
        ).where(Board.challenge_id == challenge_id)
    ).first()
    if standings is None:
        return {"red_points": 0, "blue_points": 0, "matches": 0}
    red_points, blue_points, matches, computed_at, intervals_computed_at = standings
    return {
        "red_points": red_points,
        "blue_points": blue_points,
        "matches": matches,
        "computed_at": None if computed_at is None else computed_at.isoformat(),
        "intervals_computed_at": (
            None if intervals_computed_at is None else intervals_computed_at.isoformat()
        ),
    }


_RATING_COLUMNS = (
    "challenge_id",
    "tenant_id",
    "participant_id",
    "side",
    "position",
    "rank",
    "rating",
    "rating_low",
    "rating_high",
    "points",
    "matches",
    "wins",
    "baseline",
)


def _delete_ratings(
    session: Session, challenge_id: uuid.UUID, side: Side, participant_ids: list[uuid.UUID]
) -> None:
    """Deletes these participants' rows of one side of the board; on PostgreSQL in one
    statement with the ids as one array parameter (thousands at a time)."""
    if _dialect(session) == "postgresql":
        session.execute(
            delete(Rating).where(
                Rating.challenge_id == challenge_id,
                Rating.side == side,
                Rating.participant_id == any_(bindparam("ids", participant_ids, ARRAY(Uuid))),
            )
        )
        return
    for start in range(0, len(participant_ids), 500):
        session.execute(
            delete(Rating).where(
                Rating.challenge_id == challenge_id,
                Rating.side == side,
                Rating.participant_id.in_(participant_ids[start : start + 500]),
            )
        )


def _insert_ratings(
    session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID, rows: Sequence[RatingRow]
) -> None:
    """Inserts board rows; on PostgreSQL by COPY, in this transaction (a recompute may write
    thousands: COPY took 30-40 % less time than a multi-row INSERT, bench/README.md)."""
    values = [
        (
            challenge_id,
            tenant_id,
            row.participant_id,
            row.side.value,
            row.position,
            row.rank,
            row.rating,
            row.rating_low,
            row.rating_high,
            row.points,
            row.matches,
            row.wins,
            row.baseline,
        )
        for row in rows
    ]
    if _dialect(session) != "postgresql":
        session.execute(
            insert(_RATINGS), [dict(zip(_RATING_COLUMNS, v, strict=True)) for v in values]
        )
        return
    driver = session.connection().connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor:
        statement = f"COPY {_RATINGS.name} ({', '.join(_RATING_COLUMNS)}) FROM STDIN"
        with cursor.copy(statement) as copy:
            for value in values:
                copy.write_row(value)


@dataclass(frozen=True, slots=True)
class Pace:
    """What a recompute (or its interval refresh) took, and when the next may start."""

    seconds: float
    next_at: datetime


def pace_board(
    session: Session,
    challenge_id: uuid.UUID,
    generation: int,
    *,
    ratings: Pace | None,
    intervals: Pace | None,
) -> None:
    """Records what the recompute that wrote generation `generation` took, its write
    included, and when the next recompute and interval refresh may start (unless a later
    recompute wrote since)."""
    values: dict[str, Any] = {}
    if ratings is not None:
        values["recompute_seconds"] = ratings.seconds
        values["recompute_due_at"] = ratings.next_at
    if intervals is not None:
        values["intervals_seconds"] = intervals.seconds
        values["intervals_due_at"] = intervals.next_at
    if values:
        session.execute(
            update(Board)
            .where(Board.challenge_id == challenge_id, Board.written_generation == generation)
            .values(values)
        )


def board_after_write(
    session: Session, challenge_id: uuid.UUID
) -> tuple[bool, bool, datetime | None]:
    """(dirty, intervals older than the ratings, when they are due) of the board now."""
    row = session.execute(
        select(Board.dirty, Board.intervals_seq < Board.rated_seq, Board.intervals_due_at).where(
            Board.challenge_id == challenge_id
        )
    ).first()
    if row is None:
        return False, False, None
    return bool(row[0]), bool(row[1]), row[2]


def release_interval_refresh(
    session: Session, challenge_id: uuid.UUID, intervals_seq: int, now: datetime
) -> None:
    """An interval refresh that was not written (a later recompute wrote first) lets the next
    recompute bootstrap at once, if the board's intervals are older than the refresh's."""
    session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id, Board.intervals_seq < intervals_seq)
        .values(intervals_due_at=now)
    )


def mark_board_dirty_again(session: Session, challenge_id: uuid.UUID, now: datetime) -> None:
    """A recompute that failed leaves the board dirty (and its interval refresh due), for the
    sweep to try again."""
    session.execute(
        update(Board)
        .where(Board.challenge_id == challenge_id)
        .values(dirty=True, dirty_since=now, intervals_due_at=now)
    )


# The sweep


def stuck_matches(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Queued matches last sent long ago (their message was lost) and running ones whose
    lease ran out (their worker died: at once, see `leases.lapsed`)."""
    return leases.lapsed(
        session,
        MATCH_LEASES,
        now,
        resent_before,
        waiting=True,
        oldest_first=Match.enqueued_at,
        limit=limit,
    )


def stuck_defenses(
    session: Session, now: datetime, resent_before: datetime, limit: int
) -> list[uuid.UUID]:
    """Pending defenses whose self-test nobody holds, and active ones never paired."""
    return leases.lapsed(
        session,
        SELF_TEST_LEASES,
        now,
        resent_before,
        waiting=True,
        also=(Defense.status == DefenseStatus.ACTIVE) & Defense.paired_at.is_(None),
        oldest_first=Defense.enqueued_at,
        limit=limit,
    )


def stuck_attacks(session: Session, resent_before: datetime, limit: int) -> list[uuid.UUID]:
    return lock_some_ids(
        session,
        Attack.id,
        Attack.paired_at.is_(None),
        Attack.enqueued_at < resent_before,
        challenge_not_deleted(Attack.challenge_id),
        oldest_first=Attack.enqueued_at,
        limit=limit,
    )


def stuck_boards(session: Session, before: datetime, limit: int) -> list[uuid.UUID]:
    """Boards dirty since before `before` whose recompute was due by then (it was lost or
    failed; a board paced to wait longer is not stuck), and boards whose interval refresh
    was due before then and never came (its message was lost)."""
    return lock_some_ids(
        session,
        Board.challenge_id,
        or_(
            Board.dirty.is_(True)
            & (Board.dirty_since < before)
            & or_(Board.recompute_due_at.is_(None), Board.recompute_due_at < before),
            Board.dirty.is_(False)
            & (Board.intervals_seq < Board.rated_seq)
            & (Board.intervals_due_at < before),
        ),
        # A deleted challenge's board stays as it is until the challenge is restored.
        challenge_not_deleted(Board.challenge_id),
        limit=limit,
    )


def mark_resent(session: Session, model: Any, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(update(model).where(model.id.in_(ids)).values(enqueued_at=now))


def mark_boards_resent(session: Session, ids: Sequence[uuid.UUID], now: datetime) -> None:
    if ids:
        session.execute(
            update(Board)
            .where(Board.challenge_id.in_(ids))
            .values(
                dirty_since=case((Board.dirty.is_(True), now), else_=Board.dirty_since),
                intervals_due_at=case((Board.dirty.is_(False), now), else_=Board.intervals_due_at),
            )
        )


# The final round (app/kinds/red_blue/final_round.py)


def final_rounds_due(session: Session, now: datetime, limit: int) -> list[uuid.UUID]:
    """Red-blue challenges with a final round, closed by `now`, whose round for that close
    is not made yet (a deleted challenge's waits until it is restored)."""
    rows = session.scalars(
        select(Challenge.id)
        .outerjoin(FinalRound, FinalRound.challenge_id == Challenge.id)
        .where(
            Challenge.kind == "red_blue",
            Challenge.deleted_at.is_(None),
            Challenge.closes_at <= now,
            Challenge.kind_sections["final_round"].as_boolean().is_(True),
            or_(FinalRound.challenge_id.is_(None), FinalRound.closes_at != Challenge.closes_at),
        )
        .order_by(Challenge.closes_at)
        .limit(limit)
    )
    return list(rows)


def pending_defense_count(session: Session, challenge_id: uuid.UUID) -> int:
    """Defenses of the challenge whose self-test has not ended yet."""
    return count_where(
        session,
        Defense,
        Defense.challenge_id == challenge_id,
        Defense.status == DefenseStatus.PENDING,
    )


def claim_final_round(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    closes_at: datetime,
    now: datetime,
) -> bool:
    """Takes the making of the challenge's final round for this close: True for the one
    transaction that gets it (a concurrent one waits for its commit, then finds it made; one
    that is rolled back leaves it to be taken again)."""
    build = insert_for(session)
    statement = (
        build(FinalRound)
        .values(
            challenge_id=challenge_id,
            tenant_id=tenant_id,
            closes_at=closes_at,
            scheduled_at=now,
            matches=0,
            played_at=None,
        )
        .on_conflict_do_update(
            index_elements=["challenge_id"],
            set_={"closes_at": closes_at, "scheduled_at": now, "matches": 0, "played_at": None},
            where=FinalRound.closes_at != closes_at,
        )
        .returning(FinalRound.challenge_id)
    )
    return session.execute(statement).first() is not None


def insert_matches_in_batches(
    session: Session, matches: Sequence[NewMatch], batch: int = 1000
) -> list[uuid.UUID]:
    """`insert_matches` for many rows at once (a final round's): one multi-row statement per
    `batch` rows, skipping a pair that already has a match; the ids inserted now."""
    inserted: list[uuid.UUID] = []
    build = insert_for(session)
    for start in range(0, len(matches), batch):
        statement = (
            build(_MATCHES)
            .values([_queued_row(match) for match in matches[start : start + batch]])
            .on_conflict_do_nothing(index_elements=["attack_id", "defense_id"])
            .returning(_MATCHES.c.id)
        )
        inserted.extend(session.scalars(statement))
    return inserted


def set_final_round_matches(session: Session, challenge_id: uuid.UUID, matches: int) -> None:
    session.execute(
        update(FinalRound).where(FinalRound.challenge_id == challenge_id).values(matches=matches)
    )


def final_round_of(session: Session, challenge_id: uuid.UUID) -> FinalRound | None:
    return session.get(FinalRound, challenge_id)


def final_round_match_counts(session: Session, challenge_id: uuid.UUID) -> dict[MatchStatus, int]:
    """The challenge's final-round matches (of every round it had) by status
    (`ix_redblue_matches_final_round`)."""
    rows = session.execute(
        select(Match.status, func.count())
        .where(Match.challenge_id == challenge_id, Match.final_round.is_(True))
        .group_by(Match.status)
    ).tuples()
    return {MatchStatus(status): int(count) for status, count in rows}


def unplayed_final_rounds(session: Session, limit: int) -> list[uuid.UUID]:
    """Final rounds made whose matches were not all found finished yet."""
    return lock_some_ids(
        session,
        FinalRound.challenge_id,
        FinalRound.played_at.is_(None),
        challenge_not_deleted(FinalRound.challenge_id),
        oldest_first=FinalRound.scheduled_at,
        limit=limit,
    )


def mark_final_round_played(
    session: Session, challenge_id: uuid.UUID, matches: int, now: datetime
) -> None:
    """Every match of the round is finished: `matches` of them in all; the board's intervals
    are bootstrapped at its next recompute (the final ratings), not at their pace."""
    session.execute(
        update(FinalRound)
        .where(FinalRound.challenge_id == challenge_id)
        .values(played_at=now, matches=matches)
    )
    session.execute(
        update(Board).where(Board.challenge_id == challenge_id).values(intervals_due_at=now)
    )


def board_rated_all(session: Session, challenge_id: uuid.UUID) -> bool:
    """The board's ratings and intervals count every match landed on it (or it has none)."""
    row = session.execute(
        select(Board.dirty, Board.landed_seq, Board.rated_seq, Board.intervals_seq).where(
            Board.challenge_id == challenge_id
        )
    ).first()
    if row is None:
        return True
    dirty, landed, rated, intervals = row
    return not dirty and rated >= landed and intervals >= landed


def final_round_holds_freeze(session: Session, challenge_id: uuid.UUID, now: datetime) -> bool:
    """Whether the challenge's final round keeps its freeze past the close now (a board
    write takes the freeze's snapshot then, if none was taken before the close)."""
    row = session.execute(
        select(
            Challenge.freeze_at,
            Challenge.closes_at,
            Challenge.kind_sections["final_round"].as_boolean(),
            FinalRound.closes_at,
            FinalRound.played_at,
        )
        .outerjoin(FinalRound, FinalRound.challenge_id == Challenge.id)
        .where(Challenge.id == challenge_id)
    ).first()
    if row is None:
        return False
    freeze_at, closes_at, enabled, made_for, played_at = row
    if not enabled or freeze_at is None or closes_at is None or now < closes_at:
        return False
    phase = phase_of(
        closed=True,
        made=made_for == closes_at,
        played=played_at is not None,
        rated_all=board_rated_all(session, challenge_id),
    )
    return phase in HOLDS_FREEZE
