"""Rescoring: after a challenge's scoring (or its plugin) changes, recompute the scores of its
completed attempts in batches and rebuild its leaderboard.

The rebuild is computed aside and swapped in with one transaction, so readers never see a half
rebuilt leaderboard; running a job twice gives the same result. Attempts that finish while a
job runs are scored with the new configuration already (it is committed before the job is
sent) and are offered again after the swap, so none is lost.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import delete, func, select, tuple_, update
from sqlalchemy.orm import Session

from app.attempt.models import Attempt, AttemptStatus
from app.attempt.ranked import as_ranked
from app.challenge.models import Challenge
from app.db import session_scope, utcnow
from app.errors import NotFound
from app.leaderboard import repository as leaderboard
from app.leaderboard.models import LeaderboardEntry
from app.leaderboard.ranking import sort_tuple
from app.leaderboard.service import entry_for
from app.scoring.rescore_models import RescoreJob, RescoreStatus
from app.scoring.service import Scoring, prepare_scoring
from app.scoring.strategies import Strategy
from app.unit_of_work import UnitOfWork, WorkerTask

log = logging.getLogger(__name__)

RESCORE_TASK = "gauntlet.rescore_challenge"
RESCORE = WorkerTask(RESCORE_TASK, "POST .../rescore to retry")
BATCH = 200


def request_rescore(
    work: UnitOfWork, tenant_id: uuid.UUID, challenge_id: uuid.UUID, reason: str
) -> RescoreJob:
    """Records a job, sent to a worker once the caller commits."""
    session = work.session
    job = RescoreJob(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        challenge_id=challenge_id,
        status=RescoreStatus.QUEUED,
        reason=reason[:300],
        processed=0,
        created_at=utcnow(),
    )
    session.add(job)
    session.flush()
    work.send_after_commit(RESCORE, str(job.id))
    return job


def request_rescores_for_plugin(work: UnitOfWork, plugin_id: str, reason: str) -> list[RescoreJob]:
    """Jobs for every challenge, of every tenant, that scores with this plugin."""
    rows = work.session.execute(select(Challenge.id, Challenge.tenant_id, Challenge.scoring)).all()
    return [
        request_rescore(work, row.tenant_id, row.id, reason)
        for row in rows
        if row.scoring.strategy is Strategy.CUSTOM and row.scoring.plugin_id == plugin_id
    ]


def list_jobs(session: Session, tenant_id: uuid.UUID, challenge_id: uuid.UUID) -> list[RescoreJob]:
    return list(
        session.scalars(
            select(RescoreJob)
            .where(RescoreJob.tenant_id == tenant_id, RescoreJob.challenge_id == challenge_id)
            .order_by(RescoreJob.created_at.desc())
            .limit(50)
        )
    )


def get_job(session: Session, tenant_id: uuid.UUID, job_id: uuid.UUID) -> RescoreJob:
    job = session.scalar(
        select(RescoreJob).where(RescoreJob.tenant_id == tenant_id, RescoreJob.id == job_id)
    )
    if job is None:
        raise NotFound("rescore job not found")
    return job


def _superseded(session: Session, job: RescoreJob) -> bool:
    newer = session.scalar(
        select(func.count())
        .select_from(RescoreJob)
        .where(
            RescoreJob.challenge_id == job.challenge_id,
            RescoreJob.created_at > job.created_at,
            RescoreJob.status.in_((RescoreStatus.QUEUED, RescoreStatus.RUNNING)),
        )
    )
    return bool(newer)


def _finish(job_id: uuid.UUID, status: RescoreStatus, error: str | None = None) -> None:
    with session_scope() as session:
        job = session.get(RescoreJob, job_id)
        if job is not None:
            job.status = status
            job.error = error
            job.finished_at = utcnow()


def run_rescore(job_id: uuid.UUID) -> str:
    with session_scope() as session:
        job = session.get(RescoreJob, job_id, with_for_update=True)
        if job is None or job.status.finished:
            return "skipped"
        challenge = session.get(Challenge, job.challenge_id)
        if challenge is None:
            return "skipped: challenge gone"
        if _superseded(session, job):
            job.status = RescoreStatus.SUPERSEDED
            job.finished_at = utcnow()
            return "superseded"
        job.status = RescoreStatus.RUNNING
        job.started_at = job.started_at or utcnow()
        job.total = session.scalar(
            select(func.count())
            .select_from(Attempt)
            .where(
                Attempt.challenge_id == job.challenge_id, Attempt.status == AttemptStatus.COMPLETED
            )
        )
        started_at = job.started_at
        # The plugin is looked up once for the job, not once per attempt.
        scoring = prepare_scoring(session, challenge.strategy, challenge.scoring)
        challenge_id = challenge.id
    try:
        best = _rescore_attempts(job_id, challenge_id, scoring)
        _swap_leaderboard(job_id, challenge_id, scoring.strategy, best, started_at)
    except Exception as exc:
        log.exception("rescore job %s failed", job_id)
        _finish(job_id, RescoreStatus.ERROR, f"{type(exc).__name__}: {exc}"[:2000])
        return "error"
    return "completed"


def _rescore_attempts(
    job_id: uuid.UUID, challenge_id: uuid.UUID, scoring: Scoring
) -> dict[uuid.UUID, leaderboard.EntryValues]:
    """New scores for every completed attempt, batch by batch; returns each participant's best.

    Each batch is read in one transaction, scored with none open (a plugin call may take its
    whole timeout), and written in another.
    """
    strategy = scoring.strategy
    best: dict[uuid.UUID, leaderboard.EntryValues] = {}
    after: tuple[int, uuid.UUID] | None = None
    while True:
        with session_scope() as session:
            query = (
                select(Attempt)
                .where(
                    Attempt.challenge_id == challenge_id, Attempt.status == AttemptStatus.COMPLETED
                )
                .order_by(Attempt.created_at_ms, Attempt.id)
                .limit(BATCH)
            )
            if after is not None:
                query = query.where(tuple_(Attempt.created_at_ms, Attempt.id) > tuple_(*after))
            attempts = list(session.scalars(query))
        if not attempts:
            return best
        for attempt in attempts:
            # Detached objects (kept loaded after commit): set here, written below.
            scored = scoring.score(
                attempt.metrics.as_plugin_input() if attempt.metrics is not None else {},
                {
                    "attempt_id": attempt.id,
                    "tenant_id": attempt.tenant_id,
                    "challenge_id": attempt.challenge_id,
                    "participant_id": attempt.participant_id,
                },
            )
            attempt.score = scored.score
            attempt.score_details = scored.details
            entry = entry_for(as_ranked(attempt), strategy)
            if entry is None:
                continue
            current = best.get(attempt.participant_id)
            if current is None or sort_tuple(
                entry.key, entry.attempt_created_at_ms, str(entry.attempt_id)
            ) < sort_tuple(current.key, current.attempt_created_at_ms, str(current.attempt_id)):
                best[attempt.participant_id] = entry
        with session_scope() as session:
            for attempt in attempts:
                session.execute(
                    update(Attempt)
                    .where(Attempt.id == attempt.id)
                    .values(score=attempt.score, score_details=attempt.score_details)
                )
            session.execute(
                update(RescoreJob)
                .where(RescoreJob.id == job_id)
                .values(processed=RescoreJob.processed + len(attempts))
            )
        last = attempts[-1]
        after = (last.created_at_ms, last.id)


def _swap_leaderboard(
    job_id: uuid.UUID,
    challenge_id: uuid.UUID,
    strategy: Strategy,
    best: dict[uuid.UUID, leaderboard.EntryValues],
    started_at: Any,
) -> None:
    with session_scope() as session:
        job = session.get(RescoreJob, job_id, with_for_update=True)
        if job is None:
            return
        if _superseded(session, job):
            # A newer job will rebuild with newer settings; swapping now would only flicker.
            job.status = RescoreStatus.SUPERSEDED
            job.finished_at = utcnow()
            return
        session.execute(
            delete(LeaderboardEntry).where(LeaderboardEntry.challenge_id == challenge_id)
        )
        for entry in best.values():
            leaderboard.offer(session, entry)
        late = session.scalars(
            select(Attempt).where(
                Attempt.challenge_id == challenge_id,
                Attempt.status == AttemptStatus.COMPLETED,
                Attempt.finished_at >= started_at,
            )
        )
        for attempt in late:
            late_entry = entry_for(as_ranked(attempt), strategy)
            if late_entry is not None:
                leaderboard.offer(session, late_entry)
        job.status = RescoreStatus.COMPLETED
        job.finished_at = utcnow()
