"""Running a rescore job on a worker: recompute the scores of a challenge's completed attempts
in batches and rebuild its leaderboard.

The rebuild is computed aside and swapped in with one transaction, so readers never see a half
rebuilt leaderboard; running a job twice gives the same result. Attempts that finish while a
job runs are scored with the new configuration already (it is committed before the job is
sent) and are offered again after the swap, so none is lost.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime

from app.attempt import cross_tenant as attempts
from app.attempt.models import Attempt
from app.attempt.ranked import as_ranked
from app.challenge import service as challenges
from app.kit.db import session_scope, utcnow
from app.kit.errors import NotFound
from app.leaderboard import service as leaderboard
from app.leaderboard.ranking import PlacedAttempt, placed
from app.rescore import cross_tenant as jobs
from app.rescore.models import RescoreStatus
from app.scoring.service import Scoring, prepare_scoring
from app.scoring.strategies import Strategy

log = logging.getLogger(__name__)

BATCH = 200


def _finish(job_id: uuid.UUID, status: RescoreStatus, error: str | None = None) -> None:
    with session_scope() as session:
        job = jobs.get(session, job_id)
        if job is not None:
            job.status = status
            job.error = error
            job.finished_at = utcnow()


def run_rescore(job_id: uuid.UUID) -> str:
    with session_scope() as session:
        job = jobs.get(session, job_id, lock=True)
        if job is None or job.status.finished:
            return "skipped"
        try:
            challenge = challenges.get_challenge(session, job.tenant_id, job.challenge_id)
        except NotFound:
            return "skipped: challenge gone"
        if jobs.newer_pending_exists(session, job):
            job.status = RescoreStatus.SUPERSEDED
            job.finished_at = utcnow()
            return "superseded"
        job.status = RescoreStatus.RUNNING
        job.started_at = job.started_at or utcnow()
        job.total = attempts.count_completed(session, job.challenge_id)
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


def _rescored(attempt: Attempt, scoring: Scoring) -> None:
    """Scores a detached attempt again (set here, written by the caller)."""
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


def _better(entry: PlacedAttempt, current: PlacedAttempt | None) -> bool:
    return current is None or entry.place() < current.place()


def _rescore_attempts(
    job_id: uuid.UUID, challenge_id: uuid.UUID, scoring: Scoring
) -> dict[uuid.UUID, PlacedAttempt]:
    """New scores for every completed attempt, batch by batch; returns each participant's best.

    Each batch is read in one transaction, scored with none open (a plugin call may take its
    whole timeout), and written in another.
    """
    best: dict[uuid.UUID, PlacedAttempt] = {}
    after: Attempt | None = None
    while True:
        with session_scope() as session:
            batch = attempts.completed_after(session, challenge_id, after, BATCH)
        if not batch:
            return best
        for attempt in batch:
            _rescored(attempt, scoring)
            entry = placed(scoring.strategy, as_ranked(attempt))
            if entry is not None and _better(entry, best.get(attempt.entrant_id)):
                best[attempt.entrant_id] = entry
        with session_scope() as session:
            attempts.set_scores(session, batch)
            jobs.add_processed(session, job_id, len(batch))
        after = batch[-1]


def _swap_leaderboard(
    job_id: uuid.UUID,
    challenge_id: uuid.UUID,
    strategy: Strategy,
    best: dict[uuid.UUID, PlacedAttempt],
    started_at: datetime | None,
) -> None:
    with session_scope() as session:
        job = jobs.get(session, job_id, lock=True)
        if job is None:
            return
        if jobs.newer_pending_exists(session, job):
            # A newer job will rebuild with newer settings; swapping now would only flicker.
            job.status = RescoreStatus.SUPERSEDED
            job.finished_at = utcnow()
            return
        leaderboard.rebuild(session, job.tenant_id, challenge_id, list(best.values()))
        if started_at is not None:
            for attempt in attempts.completed_since(session, challenge_id, started_at):
                leaderboard.offer(session, as_ranked(attempt), strategy)
        job.status = RescoreStatus.COMPLETED
        job.finished_at = utcnow()
