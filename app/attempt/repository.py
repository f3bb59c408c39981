"""SQL for attempts and trials, bound to one tenant.

The request path's queries are scoped to a tenant (`AttemptRepository`); a run stores its
trials through `RunTrialRepository`, bound to the tenant of the attempt it runs. The worker
side's statements that take attempt ids from the queue across tenants (claims, leases, the
sweep, a rescore's recomputation) are in `app.attempt.cross_tenant`.
"""

from __future__ import annotations

import functools
import uuid
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, cast

from sqlalchemy import (
    ColumnElement,
    Table,
    and_,
    bindparam,
    case,
    exists,
    func,
    literal_column,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, defer

from app.attempt.models import (
    Attempt,
    AttemptScoreAtFreeze,
    AttemptStatus,
    AttemptTask,
    RunPurpose,
    Trial,
)
from app.attempt.schemas import FailedAttempt, RunRow
from app.challenge.config import ChallengeState, LimitsConfig
from app.challenge.models import Challenge, challenge_not_deleted, challenge_work_runs
from app.competition.models import RulesAcceptance
from app.evaluation.engine.types import TrialRecord
from app.kit.db import (
    count_where,
    insert_for,
    page_where,
    utcnow,
)
from app.kit.lease import repository as leases
from app.kit.lease.models import LeasedTable
from app.team.models import Team, TeamMember
from app.tenant.models import Participant, Tenant


@dataclass(frozen=True, slots=True)
class SubmissionTarget:
    """What a submission checks of its challenge, and its participant if the handle exists."""

    challenge_id: uuid.UUID
    kind: str
    limits: LimitsConfig
    state: ChallengeState
    opens_at: datetime | None
    closes_at: datetime | None
    participant_id: uuid.UUID | None
    participant_handle: str | None
    # The team the participant plays this challenge in (its id is the participant its entries
    # are recorded under, its name that participant's handle); None when they play alone.
    team_id: uuid.UUID | None = None
    team_name: str | None = None
    # Whether the handle is a team's own: a team submits through its members, never by name.
    participant_is_team: bool = False
    # The tenant's quota of entries a day (app.tenant.quotas); None: none.
    tenant_attempts_per_day: int | None = None
    # The version of the challenge's rules (None: it has none), and whether the handle's
    # participant accepted a version of them (app.competition.service).
    rules_sha256: str | None = None
    rules_accepted: bool = False


# The submission's statements are the busiest of the service (bench/README.md), so they are
# built once and run on the tables, not the mapped classes: SQLAlchemy's ORM layer costs about
# as much CPU per statement as the rest of its work and psycopg's together, and the ORM's unit
# of work three times a plain insert.
_ATTEMPTS: Table = Attempt.__table__  # type: ignore[assignment]
_CHALLENGES: Table = Challenge.__table__  # type: ignore[assignment]
_PARTICIPANTS: Table = Participant.__table__  # type: ignore[assignment]
_TENANTS: Table = Tenant.__table__  # type: ignore[assignment]
_TEAM_MEMBERS: Table = TeamMember.__table__  # type: ignore[assignment]
_TEAM_PARTICIPANTS = _PARTICIPANTS.alias("team_participants")
_OWN_TEAMS = Team.__table__.alias("own_teams")
_ACCEPTANCES: Table = RulesAcceptance.__table__  # type: ignore[assignment]
_SUBMISSION_TARGET = (
    select(
        _CHALLENGES.c.id,
        _CHALLENGES.c.kind,
        _CHALLENGES.c.limits,
        _CHALLENGES.c.state,
        _CHALLENGES.c.opens_at,
        _CHALLENGES.c.closes_at,
        _PARTICIPANTS.c.id.label("participant_id"),
        _PARTICIPANTS.c.handle.label("participant_handle"),
        _TEAM_MEMBERS.c.team_id,
        _TEAM_PARTICIPANTS.c.handle.label("team_name"),
        _OWN_TEAMS.c.id.is_not(None).label("participant_is_team"),
        _TENANTS.c.max_attempts_per_day,
        _CHALLENGES.c.rules_sha256,
        exists()
        .where(
            _ACCEPTANCES.c.challenge_id == _CHALLENGES.c.id,
            _ACCEPTANCES.c.participant_id == _PARTICIPANTS.c.id,
        )
        .label("rules_accepted"),
    )
    .select_from(
        _CHALLENGES.join(_TENANTS, _TENANTS.c.id == _CHALLENGES.c.tenant_id)
        .outerjoin(
            _PARTICIPANTS,
            and_(
                _PARTICIPANTS.c.tenant_id == _CHALLENGES.c.tenant_id,
                # Handles are unique ignoring case; this is the unique index's expression.
                func.lower(_PARTICIPANTS.c.handle) == bindparam("handle_lower"),
            ),
        )
        .outerjoin(
            _TEAM_MEMBERS,
            and_(
                _TEAM_MEMBERS.c.challenge_id == _CHALLENGES.c.id,
                _TEAM_MEMBERS.c.member_id == _PARTICIPANTS.c.id,
            ),
        )
        .outerjoin(_TEAM_PARTICIPANTS, _TEAM_PARTICIPANTS.c.id == _TEAM_MEMBERS.c.team_id)
        .outerjoin(_OWN_TEAMS, _OWN_TEAMS.c.id == _PARTICIPANTS.c.id)
    )
    .where(
        _CHALLENGES.c.tenant_id == bindparam("tenant_id"),
        _CHALLENGES.c.id == bindparam("challenge_id"),
        # A deleted challenge takes no submission: it is not found (404).
        _CHALLENGES.c.deleted_at.is_(None),
    )
)

_IDEMPOTENCY_KEY = ["tenant_id", "idempotency_key"]
# Scored play only: every reader of boards, limits, rescoring, exports, dashboards and the
# attempt lists reads entries alone (unscored runs are read by `unscored_*`).
ENTRIES_ONLY = Attempt.purpose == RunPurpose.ENTRY
_NEWEST_FIRST = (Attempt.created_at.desc(), Attempt.id)
# An attempt of a deleted challenge is read by nobody (404, left out of lists) until the
# challenge is restored; its challenge's boards and exports are not found either.
_CHALLENGE_KEPT = challenge_not_deleted(Attempt.challenge_id)
_INSERT_NEW = {
    "postgresql": postgresql.insert(_ATTEMPTS)
    .on_conflict_do_nothing(index_elements=_IDEMPOTENCY_KEY)
    .returning(_ATTEMPTS.c.id),
    "sqlite": sqlite.insert(_ATTEMPTS)
    .on_conflict_do_nothing(index_elements=_IDEMPOTENCY_KEY)
    .returning(_ATTEMPTS.c.id),
}


# The workers' queue: attempts queued or running, as the literal condition of the partial
# indexes over it (a parameter in its place would keep a generic plan off those indexes).
QUEUED = _ATTEMPTS.c.status == literal_column("'queued'")
RUNNING = _ATTEMPTS.c.status == literal_column("'running'")
_UNFINISHED = or_(QUEUED, RUNNING)
_TENANT = _ATTEMPTS.c.tenant_id == bindparam("tenant_id")
_RUNNABLE = challenge_work_runs(_ATTEMPTS.c.challenge_id)
RUNNABLE_IN_ORDER = challenge_work_runs(_ATTEMPTS.c.challenge_id, row_by_row=True)
_QUEUE_PLACE = select(
    # What the tenant's share counts: its attempts a worker has to run (not those waiting
    # because their challenge is deleted, or the tenant suspended).
    select(func.count()).where(_UNFINISHED, _TENANT, _RUNNABLE).scalar_subquery(),
    select(func.max(_ATTEMPTS.c.turn)).where(_UNFINISHED, _TENANT).scalar_subquery(),
    # The queue's clock, across tenants (a number, nothing of any tenant's rows): the next
    # turn a worker takes, or, with nothing queued, the latest turn running.
    func.coalesce(
        select(func.min(_ATTEMPTS.c.turn)).where(QUEUED, RUNNABLE_IN_ORDER).scalar_subquery(),
        select(func.max(_ATTEMPTS.c.turn)).where(_UNFINISHED).scalar_subquery(),
        0,
    ),
)


class QueuePlace(NamedTuple):
    """A tenant's place in the workers' queue (app/attempt/turns.py)."""

    # Its attempts queued or running that a worker has to run.
    unfinished: int
    # The latest turn among them (None: it has none).
    last_turn: int | None
    # The turn the workers are at.
    clock: int

    @property
    def next_turn(self) -> int:
        """The turn of the tenant's next attempt: after its own unfinished ones, and never
        before the turn the workers are at."""
        return self.clock if self.last_turn is None else max(self.clock, self.last_turn + 1)


class AttemptWithChallenge(NamedTuple):
    """An attempt with what its reads need of its challenge."""

    attempt: Attempt
    kind: str
    closes_at: datetime | None
    freeze_at: datetime | None


@dataclass(frozen=True)
class FrozenView:
    """Conditions on an attempt, at a moment, about its challenge's freeze then (from its
    `freeze_at` until its close): whether the attempt was submitted since the freeze began,
    and its status as it stood when it began."""

    submitted_since: ColumnElement[bool]
    status: ColumnElement[str]


class ScoreAtFreeze(NamedTuple):
    """An attempt's score and its details as they stood at its challenge's freeze."""

    score: float | None
    score_details: dict[str, Any] | None


class AttemptRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def submission_target(
        self, challenge_id: uuid.UUID, handle: str | None
    ) -> SubmissionTarget | None:
        """The tenant's challenge (None if it has none of that id) and the handle's participant
        (ignoring case)."""
        row = self.session.execute(
            _SUBMISSION_TARGET,
            {
                "tenant_id": self.tenant_id,
                "challenge_id": challenge_id,
                "handle_lower": handle.lower() if handle is not None else None,
            },
        ).one_or_none()
        return None if row is None else SubmissionTarget(*row)

    def queue_place(self) -> QueuePlace:
        """The tenant's attempts in the workers' queue (those its share counts) and the turn
        its next attempt takes: one statement (`QueuePlace`)."""
        row = self.session.execute(_QUEUE_PLACE, {"tenant_id": self.tenant_id}).one()
        return QueuePlace(*row)

    def insert_new(self, attempt: Attempt) -> bool:
        """Inserts a new attempt's row; False if its idempotency key is already taken.

        The object is not added to the session: it stays a transient record of the row as
        inserted (defaults left to the table are not on it). A key taken by a concurrent request
        waits for that request's transaction and then inserts nothing, on both databases.
        """
        state = vars(attempt)
        values = {c.key: state[c.key] for c in _ATTEMPTS.columns if c.key in state}
        statement = _INSERT_NEW[self.session.get_bind().dialect.name]
        return self.session.execute(statement, values).first() is not None

    def get(self, attempt_id: uuid.UUID) -> Attempt | None:
        """An entry (an unscored run's id finds none: `unscored`)."""
        return self.session.scalar(
            select(Attempt).where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.id == attempt_id,
                ENTRIES_ONLY,
                _CHALLENGE_KEPT,
            )
        )

    def get_with_kind(
        self, attempt_id: uuid.UUID, purposes: Sequence[RunPurpose] = (RunPurpose.ENTRY,)
    ) -> AttemptWithChallenge | None:
        """The attempt, if it has one of these purposes, with its challenge's kind and
        schedule, in one query."""
        row = self.session.execute(
            select(Attempt, Challenge.kind, Challenge.closes_at, Challenge.freeze_at)
            .join(Challenge, Challenge.id == Attempt.challenge_id)
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.id == attempt_id,
                Attempt.purpose.in_(purposes),
                Challenge.deleted_at.is_(None),
            )
        ).first()
        return None if row is None else AttemptWithChallenge(*row)

    def by_idempotency_key(self, key: str) -> Attempt | None:
        return self.session.scalar(
            select(Attempt).where(
                Attempt.tenant_id == self.tenant_id, Attempt.idempotency_key == key
            )
        )

    def count_counting(
        self,
        challenge_id: uuid.UUID,
        participant_id: uuid.UUID,
        since: datetime | None = None,
        purpose: RunPurpose = RunPurpose.ENTRY,
    ) -> int:
        """Attempts that count against limits: all entries but those ended by an
        infrastructure error (`purpose` says which limits: practice runs have a quota of their
        own, and count against nothing else)."""
        conditions = [
            Attempt.tenant_id == self.tenant_id,
            Attempt.challenge_id == challenge_id,
            Attempt.participant_id == participant_id,
            Attempt.purpose == purpose,
            Attempt.status != AttemptStatus.ERROR,
        ]
        if since is not None:
            conditions.append(Attempt.created_at >= since)
        return count_where(self.session, Attempt, *conditions)

    def players(self, challenge_id: uuid.UUID) -> set[uuid.UUID]:
        """Everyone with an entry (not practice, not a baseline) at the challenge: the
        participant it is recorded under and the member who submitted a team's."""
        conditions = (
            Attempt.tenant_id == self.tenant_id,
            Attempt.challenge_id == challenge_id,
            Attempt.baseline.is_(False),
            ENTRIES_ONLY,
        )
        recorded = select(Attempt.participant_id).where(
            *conditions, Attempt.participant_id.is_not(None)
        )
        submitters = select(Attempt.submitted_by_id).where(
            *conditions, Attempt.submitted_by_id.is_not(None)
        )
        return set(self.session.scalars(recorded.union(submitters)))

    def entrants(
        self, challenge_id: uuid.UUID, participant_ids: Collection[uuid.UUID]
    ) -> set[uuid.UUID]:
        """Those of the participants with an entry (not practice) at the challenge."""
        if not participant_ids:
            return set()
        rows = self.session.scalars(
            select(Attempt.participant_id)
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.challenge_id == challenge_id,
                Attempt.participant_id.in_(participant_ids),
                ENTRIES_ONLY,
            )
            .distinct()
        )
        return {row for row in rows if row is not None}

    def mark_resent_if_stalled(
        self, attempt_id: uuid.UUID, now: datetime, last_sent_before: datetime
    ) -> bool:
        """Marks the attempt sent now if it is still queued and was last sent before the given
        time; False otherwise. One conditional update, so concurrent callers send it once."""
        result = self.session.execute(
            update(Attempt)
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.id == attempt_id,
                Attempt.status == AttemptStatus.QUEUED,
                Attempt.enqueued_at < last_sent_before,
            )
            .values(enqueued_at=now)
            .returning(Attempt.id)
        )
        return result.scalar_one_or_none() is not None

    def page(
        self,
        *,
        limit: int,
        offset: int,
        challenge_id: uuid.UUID | None = None,
        participant_id: uuid.UUID | None = None,
        status: AttemptStatus | None = None,
        as_at_freezes: datetime | None = None,
    ) -> tuple[list[Attempt], int]:
        """A page of the tenant's entries, newest first. `as_at_freezes` (now): the attempts
        of challenges frozen now as they stood at the freeze (`_frozen_view`): those
        submitted since left out, the others' status as it was then."""
        conditions = [Attempt.tenant_id == self.tenant_id, ENTRIES_ONLY, _CHALLENGE_KEPT]
        if challenge_id is not None:
            conditions.append(Attempt.challenge_id == challenge_id)
        if participant_id is not None:
            conditions.append(Attempt.participant_id == participant_id)
        if as_at_freezes is None:
            if status is not None:
                conditions.append(Attempt.status == status)
        else:
            frozen = self._frozen_view(as_at_freezes)
            conditions.append(~frozen.submitted_since)
            if status is not None:
                conditions.append(frozen.status == status)
        return page_where(
            self.session, Attempt, conditions, _NEWEST_FIRST, limit=limit, offset=offset
        )

    def _frozen_view(self, now: datetime) -> FrozenView:
        """An attempt as it stood when its challenge's freeze began, for a freeze going on at
        `now` (`app.leaderboard.freeze.frozen_at`: from `freeze_at` until the close); elsewhere
        the attempt as it is. As it stood then, an attempt not finished before the freeze is
        running if it had started, else queued."""

        def in_freeze(*conditions: ColumnElement[bool]) -> ColumnElement[bool]:
            return exists().where(
                Challenge.tenant_id == self.tenant_id,
                Challenge.id == Attempt.challenge_id,
                Challenge.freeze_at <= now,
                or_(Challenge.closes_at.is_(None), Challenge.closes_at > now),
                *conditions,
            )

        unsettled = in_freeze(
            or_(Attempt.finished_at.is_(None), Attempt.finished_at >= Challenge.freeze_at)
        )
        started = in_freeze(Attempt.started_at < Challenge.freeze_at)
        status = case(
            (~unsettled, Attempt.status),
            (started, AttemptStatus.RUNNING.value),
            else_=AttemptStatus.QUEUED.value,
        )
        return FrozenView(in_freeze(Attempt.created_at >= Challenge.freeze_at), status)

    def unscored_page(
        self,
        challenge_id: uuid.UUID,
        purpose: RunPurpose,
        *,
        participant_id: uuid.UUID | None,
        limit: int,
        offset: int,
        created_before: datetime | None = None,
    ) -> tuple[list[Attempt], int]:
        """A challenge's unscored runs of one purpose, newest first (one participant's, if
        given; those made before `created_before`, if given)."""
        conditions = [
            Attempt.tenant_id == self.tenant_id,
            Attempt.challenge_id == challenge_id,
            Attempt.purpose == purpose,
        ]
        if participant_id is not None:
            conditions.append(Attempt.participant_id == participant_id)
        if created_before is not None:
            conditions.append(Attempt.created_at < created_before)
        return page_where(
            self.session, Attempt, conditions, _NEWEST_FIRST, limit=limit, offset=offset
        )

    def scores_at_freeze(
        self, freezes: dict[uuid.UUID, datetime]
    ) -> dict[uuid.UUID, ScoreAtFreeze]:
        """The scores kept for these attempts (by id, each with its challenge's `freeze_at`)
        as they stood at that freeze; an attempt no rescore scored in it has none (its score
        is the one of the freeze)."""
        if not freezes:
            return {}
        rows = self.session.execute(
            select(
                AttemptScoreAtFreeze.attempt_id,
                AttemptScoreAtFreeze.freeze_at,
                AttemptScoreAtFreeze.score,
                AttemptScoreAtFreeze.score_details,
            ).where(
                AttemptScoreAtFreeze.tenant_id == self.tenant_id,
                AttemptScoreAtFreeze.attempt_id.in_(list(freezes)),
            )
        )
        return {
            attempt_id: ScoreAtFreeze(score, details)
            for attempt_id, freeze_at, score, details in rows
            if freezes.get(attempt_id) == freeze_at
        }

    def trials_page(
        self,
        attempt_id: uuid.UUID,
        *,
        task_index: int | None,
        limit: int,
        offset: int,
        with_sealed: bool = True,
        stored_before: datetime | None = None,
    ) -> tuple[list[Trial], int]:
        """A page of an attempt's trials by task and index; `with_sealed`: with those of its
        challenge's private part (`Trial.sealed`); `stored_before`: those stored by then
        only (an attempt as it stood at a freeze)."""
        conditions = [Trial.tenant_id == self.tenant_id, Trial.attempt_id == attempt_id]
        if task_index is not None:
            conditions.append(Trial.task_index == task_index)
        if not with_sealed:
            conditions.append(Trial.sealed.is_(False))
        if stored_before is not None:
            conditions.append(Trial.created_at < stored_before)
        return page_where(
            self.session,
            Trial,
            conditions,
            (Trial.task_index, Trial.trial_index),
            limit=limit,
            offset=offset,
        )

    def of_participant(
        self,
        challenge_id: uuid.UUID,
        participant_id: uuid.UUID,
        *,
        limit: int,
        offset: int,
        purpose: RunPurpose = RunPurpose.ENTRY,
    ) -> tuple[list[Attempt], int]:
        """One participant's attempts of this purpose at one challenge, newest first."""
        conditions = (
            Attempt.tenant_id == self.tenant_id,
            Attempt.challenge_id == challenge_id,
            Attempt.participant_id == participant_id,
            Attempt.purpose == purpose,
        )
        return page_where(
            self.session, Attempt, conditions, _NEWEST_FIRST, limit=limit, offset=offset
        )

    def of_participant_by_ids(
        self,
        challenge_id: uuid.UUID,
        participant_id: uuid.UUID,
        attempt_ids: Sequence[uuid.UUID],
        purposes: Sequence[RunPurpose] = (RunPurpose.ENTRY,),
    ) -> list[Attempt]:
        if not attempt_ids:
            return []
        return list(
            self.session.scalars(
                select(Attempt)
                .where(
                    Attempt.tenant_id == self.tenant_id,
                    Attempt.challenge_id == challenge_id,
                    Attempt.participant_id == participant_id,
                    Attempt.id.in_(attempt_ids),
                    Attempt.purpose.in_(purposes),
                )
                # Newest first, as the page shows them: the same answer for the same rows.
                .order_by(Attempt.created_at.desc(), Attempt.id)
            )
        )

    def counts_of_participant(
        self, participant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, int]:
        """How many attempts the participant made at each of these challenges."""
        if not challenge_ids:
            return {}
        rows = self.session.execute(
            select(Attempt.challenge_id, func.count())
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.participant_id == participant_id,
                Attempt.challenge_id.in_(challenge_ids),
                ENTRIES_ONLY,
            )
            .group_by(Attempt.challenge_id)
        )
        return {challenge_id: count for challenge_id, count in rows.tuples()}

    def status_counts(
        self, challenge_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, dict[AttemptStatus, int]]:
        counts: dict[uuid.UUID, dict[AttemptStatus, int]] = defaultdict(dict)
        if not challenge_ids:
            return counts
        rows = self.session.execute(
            select(Attempt.challenge_id, Attempt.status, func.count())
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.challenge_id.in_(challenge_ids),
                ENTRIES_ONLY,
            )
            .group_by(Attempt.challenge_id, Attempt.status)
        )
        for challenge_id, status, count in rows.tuples():
            counts[challenge_id][status] = count
        return counts

    def spend_by_purpose(self, challenge_id: uuid.UUID) -> dict[RunPurpose, tuple[int, float]]:
        """Per purpose (entries, practice, test runs) of the challenge's runs: how many there
        are, and their model spend in USD."""
        rows = self.session.execute(
            select(Attempt.purpose, func.count(), func.coalesce(func.sum(Attempt.spent_usd), 0.0))
            .where(Attempt.tenant_id == self.tenant_id, Attempt.challenge_id == challenge_id)
            .group_by(Attempt.purpose)
        )
        return {purpose: (count, float(spent)) for purpose, count, spent in rows.tuples()}

    def activity_of(
        self, participant_ids: Sequence[uuid.UUID]
    ) -> dict[uuid.UUID, tuple[int, datetime]]:
        """Per participant with attempts: how many, and when the newest was submitted."""
        if not participant_ids:
            return {}
        rows = self.session.execute(
            select(Attempt.participant_id, func.count(), func.max(Attempt.created_at))
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.participant_id.in_(participant_ids),
                ENTRIES_ONLY,
            )
            .group_by(Attempt.participant_id)
        )
        # Entries only: every one has a participant.
        return {
            participant_id: (count, newest)
            for participant_id, count, newest in rows.tuples()
            if participant_id is not None
        }

    def entrants_of(
        self, challenge_id: uuid.UUID, *, limit: int
    ) -> tuple[list[tuple[uuid.UUID, int, datetime]], int]:
        """The challenge's participants with entries, the most recently active first (at most
        `limit`): each with how many entries and when the newest was; and how many there are
        in all."""
        entered = (
            Attempt.tenant_id == self.tenant_id,
            Attempt.challenge_id == challenge_id,
            ENTRIES_ONLY,
        )
        newest = func.max(Attempt.created_at)
        rows = self.session.execute(
            select(Attempt.participant_id, func.count(), newest)
            .where(*entered)
            .group_by(Attempt.participant_id)
            .order_by(newest.desc(), Attempt.participant_id)
            .limit(limit)
        ).tuples()
        total = self.session.scalar(
            select(func.count(func.distinct(Attempt.participant_id))).where(*entered)
        )
        # Entries only: every one has a participant.
        found = [(who, count, at) for who, count, at in rows if who is not None]
        return found, int(total or 0)

    def errored_of_challenge(self, challenge_id: uuid.UUID, *, limit: int) -> list[Attempt]:
        """The challenge's attempts that ended in error, oldest first, locked for the caller."""
        return list(
            self.session.scalars(
                select(Attempt)
                .where(
                    Attempt.tenant_id == self.tenant_id,
                    Attempt.challenge_id == challenge_id,
                    Attempt.status == AttemptStatus.ERROR,
                    ENTRIES_ONLY,
                )
                .order_by(Attempt.created_at, Attempt.id)
                .limit(limit)
                .with_for_update(skip_locked=True)
            )
        )

    def recent_errors(self, *, limit: int) -> list[FailedAttempt]:
        """The tenant's latest attempts that ended in error, with who and where."""
        rows = self.session.execute(
            select(Attempt, Participant.handle, Challenge.title, Challenge.slug)
            .join(Participant, Participant.id == Attempt.participant_id)
            .join(Challenge, Challenge.id == Attempt.challenge_id)
            .where(
                Attempt.tenant_id == self.tenant_id,
                Participant.tenant_id == self.tenant_id,
                Challenge.tenant_id == self.tenant_id,
                Challenge.deleted_at.is_(None),
                Attempt.status == AttemptStatus.ERROR,
                ENTRIES_ONLY,
            )
            .order_by(Attempt.finished_at.desc().nulls_last(), Attempt.id)
            .limit(limit)
        ).tuples()
        return [FailedAttempt(a, handle, title, slug) for a, handle, title, slug in rows]

    def runs(self, attempt_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, RunRow]:
        """The submission (its kind's fields) and metrics (the kind's too) of the given
        attempts (a leaderboard page's), in one query; not their run records or progress,
        which can be large."""
        if not attempt_ids:
            return {}
        rows = self.session.execute(
            select(
                Attempt.id,
                Attempt.kind_fields,
                Attempt.metrics,
                Attempt.kind_metrics,
                Attempt.cost_usd,
            ).where(Attempt.tenant_id == self.tenant_id, Attempt.id.in_(attempt_ids))
        ).tuples()
        return {row[0]: RunRow(*row) for row in rows}

    def trials_by_attempt(
        self, attempt_ids: Sequence[uuid.UUID], *, with_sealed: bool = True
    ) -> dict[uuid.UUID, list[Trial]]:
        found: dict[uuid.UUID, list[Trial]] = {attempt_id: [] for attempt_id in attempt_ids}
        if not attempt_ids:
            return found
        query = select(Trial).where(
            Trial.tenant_id == self.tenant_id, Trial.attempt_id.in_(attempt_ids)
        )
        if not with_sealed:
            query = query.where(Trial.sealed.is_(False))
        rows = self.session.scalars(query.order_by(Trial.attempt_id, Trial.trial_index))
        for trial in rows:
            found[trial.attempt_id].append(trial)
        return found

    def tasks_page(
        self, attempt_id: uuid.UUID, *, limit: int, offset: int, with_sealed: bool = True
    ) -> tuple[list[tuple[int, str, dict[str, Any] | None]], int]:
        """A page of a benchmark attempt's tasks by index: (index, task id, summary). Not their
        descriptions (`meta`, with the whole task prompt): a task's trials show its prompt.
        `with_sealed`: with its challenge's private part's tasks."""
        conditions = [AttemptTask.tenant_id == self.tenant_id, AttemptTask.attempt_id == attempt_id]
        if not with_sealed:
            conditions.append(AttemptTask.sealed.is_(False))
        rows = self.session.execute(
            select(AttemptTask.task_index, AttemptTask.task_id, AttemptTask.summary)
            .where(*conditions)
            .order_by(AttemptTask.task_index)
            .limit(limit)
            .offset(offset)
        ).tuples()
        return list(rows), count_where(self.session, AttemptTask, *conditions)

    def task(
        self, attempt_id: uuid.UUID, task_index: int, *, with_sealed: bool = True
    ) -> tuple[str, dict[str, Any] | None] | None:
        """One task of a benchmark attempt: (task id, summary), or None (also for a sealed
        task without `with_sealed`)."""
        query = select(AttemptTask.task_id, AttemptTask.summary).where(
            AttemptTask.tenant_id == self.tenant_id,
            AttemptTask.attempt_id == attempt_id,
            AttemptTask.task_index == task_index,
        )
        if not with_sealed:
            query = query.where(AttemptTask.sealed.is_(False))
        row = self.session.execute(query).first()
        return None if row is None else (row[0], row[1])

    # Exports: a challenge's attempts and trials in submission order, a batch after a cursor.
    # The tenant's index on (tenant_id, created_at) is read in order from the cursor on (the
    # `created_at >=` bound is what the index can use), so every batch costs the same.

    def in_submission_order(
        self, challenge_id: uuid.UUID, after: tuple[datetime, uuid.UUID] | None, limit: int
    ) -> list[Attempt]:
        """Up to `limit` of the challenge's attempts after (created_at, id), oldest first;
        not their run records, which only the worker reads."""
        query = select(Attempt).where(
            Attempt.tenant_id == self.tenant_id, Attempt.challenge_id == challenge_id, ENTRIES_ONLY
        )
        if after is not None:
            query = query.where(
                Attempt.created_at >= after[0],
                tuple_(Attempt.created_at, Attempt.id) > tuple_(*after),
            )
        query = query.options(defer(Attempt.run_config, raiseload=True))
        return list(
            self.session.scalars(query.order_by(Attempt.created_at, Attempt.id).limit(limit))
        )

    def trials_in_submission_order(
        self,
        challenge_id: uuid.UUID,
        after: tuple[datetime, uuid.UUID, int, int] | None,
        limit: int,
        *,
        with_sealed: bool = True,
    ) -> list[tuple[Trial, datetime, uuid.UUID]]:
        """Up to `limit` trials of the challenge's attempts after (the attempt's created_at,
        its id, task index, trial index): each with its attempt's created_at and participant;
        `with_sealed`: with those of the challenge's private part."""
        order = (Attempt.created_at, Attempt.id, Trial.task_index, Trial.trial_index)
        query = (
            select(Trial, Attempt.created_at, Attempt.participant_id)
            .join(Attempt, Attempt.id == Trial.attempt_id)
            .where(
                Attempt.tenant_id == self.tenant_id,
                Attempt.challenge_id == challenge_id,
                Trial.tenant_id == self.tenant_id,
                ENTRIES_ONLY,
            )
        )
        if after is not None:
            query = query.where(Attempt.created_at >= after[0], tuple_(*order) > tuple_(*after))
        if not with_sealed:
            query = query.where(Trial.sealed.is_(False))
        rows = self.session.execute(query.order_by(*order).limit(limit)).tuples()
        # Entries only: every one has a participant.
        return [
            (trial, created_at, participant_id)
            for trial, created_at, participant_id in rows
            if participant_id is not None
        ]

    def trials(
        self,
        attempt_id: uuid.UUID,
        *,
        with_sealed: bool = True,
        stored_before: datetime | None = None,
    ) -> list[Trial]:
        query = select(Trial).where(
            Trial.tenant_id == self.tenant_id, Trial.attempt_id == attempt_id
        )
        if not with_sealed:
            query = query.where(Trial.sealed.is_(False))
        if stored_before is not None:
            query = query.where(Trial.created_at < stored_before)
        return list(self.session.scalars(query.order_by(Trial.trial_index)))


# The /metrics gauge -----------------------------------------------------------------------


def unfinished_by_status(session: Session) -> dict[AttemptStatus, int]:
    """Attempts queued and running now, across tenants (ix_attempts_status_lease serves it)."""
    rows = session.execute(
        select(Attempt.status, func.count())
        .where(Attempt.status.in_((AttemptStatus.QUEUED, AttemptStatus.RUNNING)))
        .group_by(Attempt.status)
    )
    counts = {AttemptStatus.QUEUED: 0, AttemptStatus.RUNNING: 0}
    for status, count in rows.tuples():
        counts[status] = int(count)
    return counts


# A run's storage ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LandedTrial:
    """A trial to store, with its task (prompt attempts have one task, index 0; benchmark
    attempts give the task's index and id)."""

    trial: TrialRecord
    task_index: int = 0
    task_id: str | None = None
    # A task of the challenge's private part (`Trial.sealed`).
    sealed: bool = False


class RunTrialRepository:
    """What a run of one of the tenant's attempts stores as it lands and reads back: its
    trials and its tasks' rows. A worker makes one with the tenant of the attempt it runs
    (`AttemptJob.tenant_id`); the lease is checked by the caller, in the same transaction."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def insert_trials(self, attempt_id: uuid.UUID, landed: Sequence[LandedTrial]) -> None:
        """Adds the trials, in one statement, but any whose index exists: a late worker
        cannot duplicate one."""
        if not landed:
            return
        now = utcnow()
        rows = []
        for item in landed:
            data = item.trial.to_dict()
            rows.append(
                {
                    "id": uuid.uuid4(),
                    "tenant_id": self.tenant_id,
                    "attempt_id": attempt_id,
                    "task_index": item.task_index,
                    "task_id": item.task_id[:200] if item.task_id is not None else None,
                    "trial_index": item.trial.attempt_index,
                    "success": item.trial.judge.success,
                    "score": item.trial.judge.score,
                    "actor": data["actor"],
                    "judge": data["judge"],
                    "critic": data["critic"],
                    "sealed": item.sealed,
                    "created_at": now,
                }
            )
        self.session.execute(self._trials_insert(self.session.get_bind().dialect.name), rows)

    @staticmethod
    @functools.cache
    def _trials_insert(dialect: str) -> Any:
        """The trials' INSERT, built once per database dialect and run with a row of
        parameters per trial (a statement with the rows' values in it was compiled anew each
        time)."""
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        table = cast(Table, Trial.__table__)
        return insert(table).on_conflict_do_nothing(
            index_elements=["attempt_id", "task_index", "trial_index"]
        )

    def trial_records(
        self, attempt_id: uuid.UUID, task_index: int | None = None
    ) -> list[TrialRecord]:
        """The attempt's stored trials (one task's, when given) by index, as the engine's
        records (the run-folder attempt layout)."""
        query = select(Trial).where(
            Trial.tenant_id == self.tenant_id, Trial.attempt_id == attempt_id
        )
        if task_index is not None:
            query = query.where(Trial.task_index == task_index)
        return [
            TrialRecord.from_dict(
                {
                    "attempt_index": row.trial_index,
                    "actor": row.actor,
                    "judge": row.judge,
                    "critic": row.critic,
                }
            )
            for row in self.session.scalars(query.order_by(Trial.trial_index))
        ]

    def upsert_task(
        self,
        attempt_id: uuid.UUID,
        task_index: int,
        values: dict[str, Any],
        update_fields: list[str],
    ) -> None:
        """Stores a task's row of the attempt with these values; a row already stored for the
        task has `update_fields` of them written."""
        insert = insert_for(self.session)
        statement = insert(AttemptTask).values(
            tenant_id=self.tenant_id, attempt_id=attempt_id, task_index=task_index, **values
        )
        self.session.execute(
            statement.on_conflict_do_update(
                index_elements=["attempt_id", "task_index"],
                set_={name: getattr(statement.excluded, name) for name in update_fields},
                where=AttemptTask.tenant_id == self.tenant_id,
            )
        )


def set_run_record(
    session: Session, table: LeasedTable[Any], row_id: uuid.UUID, token: uuid.UUID, **values: Any
) -> bool:
    """Writes `run_config` / `progress` of a held row (an attempt, or another run of an
    attempt's trials with those columns); False when the lease is lost."""
    written = leases.write_held(session, table, [row_id], token, **values)
    return written.first() is not None


def run_config_of(
    session: Session, table: LeasedTable[Any], row_id: uuid.UUID
) -> dict[str, Any] | None:
    """The run record a run stored on its row (None before its first run)."""
    config = session.scalar(select(table.model.run_config).where(table.model.id == row_id))
    return cast(dict[str, Any] | None, config)
