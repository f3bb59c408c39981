"""The request side: red_blue's reads and writes, scoped to one tenant."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    Table,
    case,
    false,
    func,
    or_,
    select,
    true,
    tuple_,
    union_all,
)
from sqlalchemy.orm import InstrumentedAttribute, Session

from app.kinds.api.storage import (
    Challenge,
    Participant,
    challenge_not_deleted,
    count_where,
    insert_for,
    page_where,
)
from app.kinds.red_blue.models import (
    MATCH_LEASES,
    SELF_TEST_LEASES,
    Attack,
    Board,
    Defense,
    DefenseStatus,
    FrozenRating,
    Match,
    MatchStatus,
    Rating,
    Side,
)
from app.kinds.red_blue.readers import Reader
from app.kinds.red_blue.repository.rows import Activity, BoardLine, EntryModel, Places, T


class RedBlueRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    # What a reader sees (app/kinds/red_blue/readers.py), as SQL for this repository's lists
    # and counts: the same rule as `Reader.sees` and `Reader.settled` over a loaded row.

    def shown_to(
        self, reader: Reader, model: type[Defense] | type[Attack] | type[Match]
    ) -> ColumnElement[bool]:
        """The rows of `model` that exist for the reader."""
        if reader.cutoff is None:
            return true()
        return or_(model.created_at < reader.cutoff, self._owned_by(reader, model))

    def match_status_for(self, reader: Reader) -> ColumnElement[Any]:
        """A match's status as the reader sees it: a match whose end came after the freeze (not
        their own) is still queued for them."""
        if reader.cutoff is None:
            return Match.status.expression
        ended_before = Match.finished_at.is_not(None) & (Match.finished_at < reader.cutoff)
        return case(
            (or_(self._owned_by(reader, Match), ended_before), Match.status),
            else_=MatchStatus.QUEUED.value,
        )

    def _owned_by(
        self, reader: Reader, model: type[Defense] | type[Attack] | type[Match]
    ) -> ColumnElement[bool]:
        owner = reader.participant_id
        if owner is None:
            return false()
        if model is Match:
            return or_(Match.red_participant_id == owner, Match.blue_participant_id == owner)
        entry: type[Defense] | type[Attack] = model  # type: ignore[assignment]
        return entry.participant_id == owner

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

    def players(self, challenge_id: uuid.UUID) -> set[uuid.UUID]:
        """Everyone with a defense or an attack (not a baseline) at the challenge: the
        participant it is recorded under and the member who submitted a team's."""
        found: set[uuid.UUID] = set()
        for model in (Defense, Attack):
            conditions = (
                model.tenant_id == self.tenant_id,
                model.challenge_id == challenge_id,
                model.baseline.is_(False),
            )
            recorded = select(model.participant_id).where(*conditions)
            submitters = select(model.submitted_by_id).where(
                *conditions, model.submitted_by_id.is_not(None)
            )
            found.update(
                value
                for value in self.session.scalars(recorded.union(submitters))
                if value is not None
            )
        return found

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

    def challenge(self, challenge_id: uuid.UUID) -> Challenge | None:
        """The tenant's challenge, unless it is gone or deleted."""
        return self.session.scalar(
            select(Challenge).where(
                Challenge.tenant_id == self.tenant_id,
                Challenge.id == challenge_id,
                Challenge.deleted_at.is_(None),
            )
        )

    def newest_active_defense(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID
    ) -> uuid.UUID | None:
        return self.session.scalar(
            self._newest_active_defense(Defense.id, challenge_id, participant_id)
        )

    def newest_active_defense_text(
        self, challenge_id: uuid.UUID, participant_id: uuid.UUID
    ) -> str | None:
        return self.session.scalar(
            self._newest_active_defense(Defense.system_prompt, challenge_id, participant_id)
        )

    def _newest_active_defense(
        self, column: InstrumentedAttribute[T], challenge_id: uuid.UUID, participant_id: uuid.UUID
    ) -> Select[T]:
        """The participant's newest active defense here: the one that plays for them."""
        return (
            select(column)
            .where(
                Defense.tenant_id == self.tenant_id,
                Defense.challenge_id == challenge_id,
                Defense.participant_id == participant_id,
                Defense.status == DefenseStatus.ACTIVE,
            )
            .order_by(Defense.created_at.desc(), Defense.id.desc())
            .limit(1)
        )

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
            self.shown_to(reader, Match),
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
                        self.shown_to(reader, model),
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
        positions are 1..n with no gap (`cross_tenant.write_board`), so the page is the
        positions after `offset` and the total is the last position: two short range scans of
        the board's position index, whatever the offset (an OFFSET would read and join every
        row before the page)."""
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
            self.shown_to(reader, model),
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
        status = self.match_status_for(reader)
        rows = self.session.execute(
            select(column, status, func.count())
            .where(
                Match.tenant_id == self.tenant_id,
                column.in_(entry_ids),
                self.shown_to(reader, Match),
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

    def entrants_of(
        self, challenge_id: uuid.UUID, *, limit: int
    ) -> tuple[list[tuple[uuid.UUID, int, datetime]], int]:
        """The challenge's participants with defenses or attacks, the most recently active
        first (at most `limit`): each with how many entries (both sides) and when the newest
        was; and how many there are in all."""
        entries = union_all(
            *(
                select(model.participant_id, model.created_at).where(
                    model.tenant_id == self.tenant_id, model.challenge_id == challenge_id
                )
                for model in (Defense, Attack)
            )
        ).subquery()
        newest = func.max(entries.c.created_at)
        rows = self.session.execute(
            select(entries.c.participant_id, func.count(), newest)
            .group_by(entries.c.participant_id)
            .order_by(newest.desc(), entries.c.participant_id)
            .limit(limit)
        ).tuples()
        total = self.session.scalar(select(func.count(func.distinct(entries.c.participant_id))))
        return [(who, int(count), at) for who, count, at in rows], int(total or 0)

    def match_spend(self, challenge_id: uuid.UUID) -> tuple[int, float]:
        """How many of the challenge's matches were played (completed or ended in error),
        and what their model calls cost (USD; a match without a known price counts 0)."""
        played, cost = self.session.execute(
            select(func.count(), func.coalesce(func.sum(Match.cost_usd), 0.0)).where(
                Match.tenant_id == self.tenant_id,
                Match.challenge_id == challenge_id,
                Match.finished_at.is_not(None),
            )
        ).one()
        return int(played), float(cost or 0.0)

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
