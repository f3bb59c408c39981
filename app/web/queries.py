"""SQL the web UI needs beyond the domains' repositories. Every query names its tenant, except
the home page's, which reads public challenges only."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select, tuple_
from sqlalchemy.orm import Session

from app.attempt.metrics import AttemptMetrics
from app.attempt.models import Attempt, AttemptStatus, AttemptTask, Trial
from app.challenge.config import Visibility
from app.challenge.models import Challenge
from app.db import utcnow
from app.leaderboard.models import LeaderboardEntry
from app.tenant.models import Participant, Tenant

# Home page ------------------------------------------------------------------------------------


def tenants_with_public_challenges(
    session: Session, *, limit: int, offset: int, challenges_per_tenant: int
) -> tuple[list[tuple[Tenant, list[Challenge]]], int]:
    """Tenants that have at least one public challenge, by name, each with its newest public
    challenges; and how many such tenants there are."""
    has_public = (
        select(Challenge.id)
        .where(Challenge.tenant_id == Tenant.id, Challenge.visibility == Visibility.PUBLIC)
        .exists()
    )
    tenants = list(
        session.scalars(
            select(Tenant)
            .where(has_public)
            .order_by(Tenant.name, Tenant.slug)
            .limit(limit)
            .offset(offset)
        )
    )
    total = session.scalar(select(func.count()).select_from(Tenant).where(has_public)) or 0
    if not tenants:
        return [], total
    position = (
        func.row_number()
        .over(
            partition_by=Challenge.tenant_id,
            order_by=(Challenge.created_at.desc(), Challenge.id),
        )
        .label("position")
    )
    ranked = (
        select(Challenge.id, position)
        .where(
            Challenge.tenant_id.in_([t.id for t in tenants]),
            Challenge.visibility == Visibility.PUBLIC,
        )
        .subquery()
    )
    challenges = session.scalars(
        select(Challenge)
        .join(ranked, ranked.c.id == Challenge.id)
        .where(ranked.c.position <= challenges_per_tenant)
        .order_by(Challenge.created_at.desc(), Challenge.id)
    )
    by_tenant: dict[uuid.UUID, list[Challenge]] = defaultdict(list)
    for challenge in challenges:
        by_tenant[challenge.tenant_id].append(challenge)
    return [(tenant, by_tenant[tenant.id]) for tenant in tenants], total


def public_challenge_counts(
    session: Session, tenant_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, int]:
    if not tenant_ids:
        return {}
    rows = session.execute(
        select(Challenge.tenant_id, func.count())
        .where(Challenge.tenant_id.in_(tenant_ids), Challenge.visibility == Visibility.PUBLIC)
        .group_by(Challenge.tenant_id)
    )
    return {tenant_id: count for tenant_id, count in rows.tuples()}


# Challenges -----------------------------------------------------------------------------------


def challenges_with_visibility(
    session: Session, tenant_id: uuid.UUID, visibilities: Collection[str], *, limit: int
) -> list[Challenge]:
    return list(
        session.scalars(
            select(Challenge)
            .where(Challenge.tenant_id == tenant_id, Challenge.visibility.in_(visibilities))
            .order_by(Challenge.created_at.desc(), Challenge.id)
            .limit(limit)
        )
    )


def all_challenges(session: Session, tenant_id: uuid.UUID, *, limit: int) -> list[Challenge]:
    return list(
        session.scalars(
            select(Challenge)
            .where(Challenge.tenant_id == tenant_id)
            .order_by(Challenge.created_at.desc(), Challenge.id)
            .limit(limit)
        )
    )


# Participants ---------------------------------------------------------------------------------


def handle_in_use(session: Session, tenant_id: uuid.UUID, handle: str) -> bool:
    """Whether a participant of the tenant has this handle, ignoring case."""
    found = session.scalar(
        select(Participant.id)
        .where(
            Participant.tenant_id == tenant_id,
            func.lower(Participant.handle) == handle.lower(),
        )
        .limit(1)
    )
    return found is not None


def add_participant(
    session: Session, tenant_id: uuid.UUID, handle: str, password_hash: str
) -> Participant:
    """Inserts a participant with a password; raises IntegrityError if the handle is taken."""
    participant = Participant(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        handle=handle,
        password_hash=password_hash,
        created_at=utcnow(),
    )
    with session.begin_nested():
        session.add(participant)
    return participant


# Leaderboard positions ------------------------------------------------------------------------


def best_entries(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    challenge_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, LeaderboardEntry]:
    if not challenge_ids:
        return {}
    rows = session.scalars(
        select(LeaderboardEntry).where(
            LeaderboardEntry.tenant_id == tenant_id,
            LeaderboardEntry.participant_id == participant_id,
            LeaderboardEntry.challenge_id.in_(challenge_ids),
        )
    )
    return {row.challenge_id: row for row in rows}


def rank_of(session: Session, tenant_id: uuid.UUID, entry: LeaderboardEntry) -> int:
    """1 + the rows ranked before this one: an index range scan on the leaderboard's order."""
    entry_model = LeaderboardEntry
    ahead = session.scalar(
        select(func.count())
        .select_from(entry_model)
        .where(
            entry_model.tenant_id == tenant_id,
            entry_model.challenge_id == entry.challenge_id,
            tuple_(
                entry_model.rank_key,
                entry_model.rank_tiebreak,
                entry_model.attempt_created_at_ms,
                entry_model.attempt_id,
            )
            < tuple_(
                entry.rank_key, entry.rank_tiebreak, entry.attempt_created_at_ms, entry.attempt_id
            ),
        )
    )
    return (ahead or 0) + 1


# Attempts -------------------------------------------------------------------------------------


def attempt_counts_of_participant(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    challenge_ids: Sequence[uuid.UUID],
) -> dict[uuid.UUID, int]:
    if not challenge_ids:
        return {}
    rows = session.execute(
        select(Attempt.challenge_id, func.count())
        .where(
            Attempt.tenant_id == tenant_id,
            Attempt.participant_id == participant_id,
            Attempt.challenge_id.in_(challenge_ids),
        )
        .group_by(Attempt.challenge_id)
    )
    return {challenge_id: count for challenge_id, count in rows.tuples()}


def participant_attempts(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    *,
    limit: int,
    offset: int,
) -> tuple[list[Attempt], int]:
    """One participant's attempts at one challenge, newest first."""
    conditions = (
        Attempt.tenant_id == tenant_id,
        Attempt.challenge_id == challenge_id,
        Attempt.participant_id == participant_id,
    )
    rows = session.scalars(
        select(Attempt)
        .where(*conditions)
        .order_by(Attempt.created_at.desc(), Attempt.id)
        .limit(limit)
        .offset(offset)
    )
    total = session.scalar(select(func.count()).select_from(Attempt).where(*conditions))
    return list(rows), total or 0


def participant_attempts_by_ids(
    session: Session,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    participant_id: uuid.UUID,
    attempt_ids: Sequence[uuid.UUID],
) -> list[Attempt]:
    if not attempt_ids:
        return []
    return list(
        session.scalars(
            select(Attempt).where(
                Attempt.tenant_id == tenant_id,
                Attempt.challenge_id == challenge_id,
                Attempt.participant_id == participant_id,
                Attempt.id.in_(attempt_ids),
            )
        )
    )


def trials_by_attempt(
    session: Session, tenant_id: uuid.UUID, attempt_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[Trial]]:
    found: dict[uuid.UUID, list[Trial]] = {attempt_id: [] for attempt_id in attempt_ids}
    if not attempt_ids:
        return found
    rows = session.scalars(
        select(Trial)
        .where(Trial.tenant_id == tenant_id, Trial.attempt_id.in_(attempt_ids))
        .order_by(Trial.attempt_id, Trial.trial_index)
    )
    for trial in rows:
        found[trial.attempt_id].append(trial)
    return found


# Benchmark attempts ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRow:
    attempt_id: uuid.UUID
    model_spec: dict[str, Any] | None
    metrics: AttemptMetrics | None
    cost_usd: float | None


def benchmark_runs(
    session: Session, tenant_id: uuid.UUID, attempt_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, RunRow]:
    """The model spec and metrics of the given attempts (a leaderboard page's), in one query;
    not their run records or progress, which can be large."""
    if not attempt_ids:
        return {}
    rows = session.execute(
        select(Attempt.id, Attempt.model_spec, Attempt.metrics, Attempt.cost_usd).where(
            Attempt.tenant_id == tenant_id, Attempt.id.in_(attempt_ids)
        )
    ).tuples()
    return {
        attempt_id: RunRow(attempt_id, model_spec, metrics, cost_usd)
        for attempt_id, model_spec, metrics, cost_usd in rows
    }


def attempt_tasks_page(
    session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[tuple[int, str, dict[str, Any] | None]], int]:
    """A page of a benchmark attempt's tasks by index: (index, task id, summary). Not their
    descriptions (`meta`, with the whole task prompt): a task's trials show its prompt."""
    conditions = (AttemptTask.tenant_id == tenant_id, AttemptTask.attempt_id == attempt_id)
    rows = session.execute(
        select(AttemptTask.task_index, AttemptTask.task_id, AttemptTask.summary)
        .where(*conditions)
        .order_by(AttemptTask.task_index)
        .limit(limit)
        .offset(offset)
    ).tuples()
    total = session.scalar(select(func.count()).select_from(AttemptTask).where(*conditions))
    return list(rows), total or 0


def attempt_task(
    session: Session, tenant_id: uuid.UUID, attempt_id: uuid.UUID, task_index: int
) -> tuple[str, dict[str, Any] | None] | None:
    """One task of a benchmark attempt: (task id, summary), or None."""
    row = session.execute(
        select(AttemptTask.task_id, AttemptTask.summary).where(
            AttemptTask.tenant_id == tenant_id,
            AttemptTask.attempt_id == attempt_id,
            AttemptTask.task_index == task_index,
        )
    ).first()
    return None if row is None else (row[0], row[1])


# Admin view -----------------------------------------------------------------------------------


def attempt_status_counts(
    session: Session, tenant_id: uuid.UUID, challenge_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, dict[str, int]]:
    counts: dict[uuid.UUID, dict[str, int]] = defaultdict(dict)
    if not challenge_ids:
        return counts
    rows = session.execute(
        select(Attempt.challenge_id, Attempt.status, func.count())
        .where(Attempt.tenant_id == tenant_id, Attempt.challenge_id.in_(challenge_ids))
        .group_by(Attempt.challenge_id, Attempt.status)
    )
    for challenge_id, status, count in rows.tuples():
        counts[challenge_id][status] = count
    return counts


@dataclass(frozen=True)
class FailedAttempt:
    attempt: Attempt
    handle: str
    challenge_title: str
    challenge_slug: str


def recent_errors(session: Session, tenant_id: uuid.UUID, *, limit: int) -> list[FailedAttempt]:
    rows = session.execute(
        select(Attempt, Participant.handle, Challenge.title, Challenge.slug)
        .join(Participant, Participant.id == Attempt.participant_id)
        .join(Challenge, Challenge.id == Attempt.challenge_id)
        .where(
            Attempt.tenant_id == tenant_id,
            Participant.tenant_id == tenant_id,
            Challenge.tenant_id == tenant_id,
            Attempt.status == AttemptStatus.ERROR,
        )
        .order_by(Attempt.finished_at.desc().nulls_last(), Attempt.id)
        .limit(limit)
    ).tuples()
    return [FailedAttempt(attempt, handle, title, slug) for attempt, handle, title, slug in rows]
