from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from app.attempt import service, unscored
from app.attempt.models import AttemptStatus
from app.attempt.schemas import (
    AttemptCreate,
    AttemptList,
    AttemptRead,
    AttemptsLeft,
    PracticeCreate,
    PracticeLeft,
    RerunAttempts,
    TestRunCreate,
    TrialList,
    UnscoredRunList,
    UnscoredRunRead,
)
from app.auth.gate import CredentialDep, TenantAdminDep, TenantKeyDep, check_tenant_key
from app.auth.service import authenticate
from app.auth.subjects import Audience
from app.challenge.reference import (
    ChallengeFilterDep,
    ChallengeIdDep,
    ChallengeRef,
    resolve_challenge,
)
from app.kit.conditional import CONDITIONAL_READ
from app.kit.db import TransactionNeeded, get_autocommit_sessionmaker, get_sessionmaker
from app.kit.deps import IdempotencyKey, SessionDep, UnitOfWorkDep, accepted_headers
from app.kit.error_codes import (
    DAILY_LIMIT_REACHED,
    IDEMPOTENCY_KEY_REUSED,
    KIND_TAKES_NO_ATTEMPTS,
    NO_UNSCORED_RUNS,
    NOT_IN_ERROR,
    NOT_OPEN,
    PRACTICE_OFF,
    QUEUE_SHARE_FULL,
    QUOTA_MAX_ATTEMPTS_PER_DAY,
    QUOTA_MAX_PARTICIPANTS,
    RULES_NOT_ACCEPTED,
    TOTAL_LIMIT_REACHED,
    raises,
)
from app.kit.observability import context
from app.kit.observability import metrics as telemetry
from app.kit.routing import ApiRoute
from app.kit.schemas import Handle, Limit, Offset, TrialLimit
from app.kit.unit_of_work import UnitOfWork

router = APIRouter(prefix="/v1", tags=["attempts"], route_class=ApiRoute)


@router.post(
    "/challenges/{challenge_id}/attempts",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AttemptRead,
    # Its credential is read in its one trip to the thread pool, not by the dependencies
    # app/api_docs.py reads, so its 401 and 403 are declared here.
    responses=raises(
        *NOT_OPEN,
        IDEMPOTENCY_KEY_REUSED,
        RULES_NOT_ACCEPTED,
        TOTAL_LIMIT_REACHED,
        DAILY_LIMIT_REACHED,
        QUOTA_MAX_PARTICIPANTS,
        QUOTA_MAX_ATTEMPTS_PER_DAY,
        QUEUE_SHARE_FULL,
        also={401: {}, 403: {"description": "Not a tenant key."}},
    ),
)
async def post_attempt(
    challenge_id: ChallengeRef,
    body: AttemptCreate,
    credential: CredentialDep,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    """Submit an attempt; it is queued and run by a worker. Poll `GET /v1/attempts/{id}`."""
    # The busiest route. A synchronous route takes three trips to the thread pool (the key
    # lookup, the endpoint, the check of its return value); this one takes one for all its
    # blocking work and serializes its answer once (bench/README.md has the figures).
    return await run_in_threadpool(_submit, challenge_id, body, credential, idempotency_key)


def _submit(
    challenge_ref: str, body: AttemptCreate, credential: str, idempotency_key: str | None
) -> Response:
    # Most submissions write one row, so their statements run without a transaction around
    # them (no BEGIN and COMMIT round trips); a challenge with attempt limits, or a tenant's
    # quota, needs one.
    try:
        return _submit_in(
            get_autocommit_sessionmaker(), challenge_ref, body, credential, idempotency_key
        )
    except TransactionNeeded:
        return _submit_in(get_sessionmaker(), challenge_ref, body, credential, idempotency_key)


def _submit_in(
    sessions: sessionmaker[Session],
    challenge_ref: str,
    body: AttemptCreate,
    credential: str,
    idempotency_key: str | None,
) -> Response:
    with sessions() as session:
        work = UnitOfWork(session)
        caller = check_tenant_key(authenticate(session, credential))
        challenge_id = resolve_challenge(session, caller.tenant_id, challenge_ref)
        submission = service.submit_attempt(work, caller, challenge_id, body, idempotency_key)
        attempt = submission.attempt
        headers = accepted_headers(f"/v1/attempts/{attempt.id}", submission.created)
        if submission.created:
            context.bind(attempt_id=str(attempt.id))
        work.commit()
    if submission.created:
        telemetry.attempt_reached(submission.kind, "queued")
    # The submitter's own attempt, seen before its challenge's close as they see it then.
    sealed = caller.audience is Audience.ADMIN
    view = service.to_view(
        attempt,
        submission.kind,
        submission.participant_handle,
        None,
        caller.audience,
        sealed=sealed,
        submitted_by=submission.submitted_by,
    )
    return Response(
        view.model_dump_json(),
        status_code=status.HTTP_202_ACCEPTED,
        media_type="application/json",
        headers=headers,
    )


# A member key acts for the participant it names: in a freeze, their own results read live.
ActingFor = Annotated[
    Handle | None,
    Query(
        description="The participant the key acts for. From the challenge's `freeze_at` to its "
        "close, a member key sees another's attempt submitted before the freeze as it stood "
        "then (unfinished: no result); naming the attempt's participant (or a member of its "
        "team), it sees the attempt live, as the participant sees their own "
        "(docs/boards.md)."
    ),
]


@router.get("/attempts/{attempt_id}", responses=CONDITIONAL_READ)
def get_attempt(
    attempt_id: uuid.UUID,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: ActingFor = None,
) -> AttemptRead:
    """Status, metrics, score and trials. Member keys get the participant view of trials.

    Benchmark attempts show their progress and curve here; their trials (tasks times k of them)
    are paged at `GET /v1/attempts/{id}/trials`.
    """
    return service.read_attempt(session, caller, attempt_id, acting_for=participant)


@router.get("/attempts/{attempt_id}/trials", responses=CONDITIONAL_READ)
def get_attempt_trials(
    attempt_id: uuid.UUID,
    session: SessionDep,
    caller: TenantKeyDep,
    task_index: Annotated[int | None, Query(ge=0, le=10_000_000)] = None,
    limit: TrialLimit = 100,
    offset: Offset = 0,
    participant: ActingFor = None,
) -> TrialList:
    """An attempt's trials, by task then index (participant view for member keys)."""
    return service.read_trials(
        session,
        caller,
        attempt_id,
        task_index=task_index,
        limit=limit,
        offset=offset,
        acting_for=participant,
    )


@router.get(
    "/attempts",
    responses={
        **CONDITIONAL_READ,
        404: {"description": "`challenge_id` is a slug of none of the tenant's challenges."},
    },
)
def list_attempts(
    session: SessionDep,
    caller: TenantKeyDep,
    challenge_id: ChallengeFilterDep,
    participant: str | None = None,
    status: AttemptStatus | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> AttemptList:
    """The tenant's attempts, newest first, filtered by challenge, participant handle, status.
    From a challenge's `freeze_at` to its close, a member key naming no participant sees its
    attempts as they stood at the freeze (those submitted since left out); naming one, it acts
    for them and sees their attempts live."""
    return service.list_attempts(
        session,
        caller,
        challenge_id=challenge_id,
        participant=participant,
        status=status,
        limit=limit,
        offset=offset,
    )


@router.get("/challenges/{challenge_id}/attempts/left", responses=raises(KIND_TAKES_NO_ATTEMPTS))
def attempts_left(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: Annotated[Handle, Query(description="The participant's handle.")],
) -> AttemptsLeft:
    """What the challenge's limits leave one participant: attempts left in all and today, and
    when the day's count starts again (409 for a kind that takes no attempts)."""
    return service.attempts_left(session, caller, challenge_id, participant)


@router.get("/challenges/{challenge_id}/attempts", responses=CONDITIONAL_READ)
def list_challenge_attempts(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: str | None = None,
    status: AttemptStatus | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> AttemptList:
    """The attempts of one challenge (404 if the challenge is not the tenant's); in a freeze,
    as `GET /v1/attempts` shows them."""
    return service.list_challenge_attempts(
        session,
        caller,
        challenge_id,
        participant=participant,
        status=status,
        limit=limit,
        offset=offset,
    )


@router.post(
    "/challenges/{challenge_id}/attempts/rerun-failed",
    status_code=status.HTTP_202_ACCEPTED,
)
def post_challenge_rerun_failed(
    challenge_id: ChallengeIdDep, work: UnitOfWorkDep, caller: TenantAdminDep
) -> RerunAttempts:
    """Re-run every attempt of the challenge that ended in error (tenant admin), up to 1,000
    a call, oldest first; finished trials are kept."""
    queued = service.rerun_failed(work, caller.tenant_id, challenge_id)
    work.commit()
    return RerunAttempts(queued=queued)


@router.post(
    "/attempts/{attempt_id}/rerun",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(NOT_IN_ERROR),
)
def post_attempt_rerun(
    attempt_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep
) -> AttemptRead:
    """Re-run an attempt that ended in error (tenant admin); finished trials are kept. (The
    same word as for matches and defenses.)"""
    view = service.rerun_view(work, caller, attempt_id)
    work.commit()
    return view


@router.post(
    "/attempts/{attempt_id}/retry",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(NOT_IN_ERROR),
    deprecated=True,
)
def post_attempt_retry(
    attempt_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep
) -> AttemptRead:
    """The former name of `POST /v1/attempts/{attempt_id}/rerun`, kept for existing clients."""
    return post_attempt_rerun(attempt_id, work, caller)


# Unscored runs: test runs (tenant admins) and practice (participants) --------------------------


@router.post(
    "/challenges/{challenge_id}/test-runs",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(NO_UNSCORED_RUNS, QUEUE_SHARE_FULL),
)
def post_test_run(
    challenge_id: ChallengeIdDep, body: TestRunCreate, work: UnitOfWorkDep, caller: TenantAdminDep
) -> UnscoredRunRead:
    """Run the challenge's configuration once on a sample input (tenant admin; any state, a
    draft's too): a worker runs it as an attempt; poll `GET /v1/test-runs/{id}` for the exact
    messages, the reply, the verdict, the score and the cost. It touches no leaderboard,
    standings, rating or limit."""
    started = unscored.start_test_run(work, caller, challenge_id, body)
    work.commit()
    telemetry.attempt_reached(started.kind, "queued")
    return started.view


@router.get("/test-runs/{run_id}")
def get_test_run(run_id: uuid.UUID, session: SessionDep, caller: TenantAdminDep) -> UnscoredRunRead:
    """One test run, with its trials (tenant admin)."""
    return unscored.read_test_run(session, caller, run_id)


@router.get("/challenges/{challenge_id}/test-runs")
def list_test_runs(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantAdminDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> UnscoredRunList:
    """The challenge's test runs, newest first (tenant admin)."""
    return unscored.list_test_runs(session, caller, challenge_id, limit=limit, offset=offset)


@router.post(
    "/challenges/{challenge_id}/practice-runs",
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(
        NO_UNSCORED_RUNS,
        *NOT_OPEN,
        PRACTICE_OFF,
        DAILY_LIMIT_REACHED,
        QUOTA_MAX_PARTICIPANTS,
        QUEUE_SHARE_FULL,
    ),
)
def post_practice_run(
    challenge_id: ChallengeIdDep, body: PracticeCreate, work: UnitOfWorkDep, caller: TenantKeyDep
) -> UnscoredRunRead:
    """Practise: an unscored run for a participant (open challenges), under the challenge's
    `limits.max_practice_per_day`. It is on no board and counts against no attempt limit;
    poll `GET /v1/practice-runs/{id}` for the reply and the verdict."""
    started = unscored.start_practice(work, caller, challenge_id, body)
    work.commit()
    telemetry.attempt_reached(started.kind, "queued")
    return started.view


PracticeActingFor = Annotated[
    Handle | None,
    Query(
        description="The participant the key acts for. From the challenge's `freeze_at` to its "
        "close, a member key sees another's practice run started before the freeze as it "
        "stood then (unfinished: no result); naming the run's participant, it sees the run "
        "live, as the participant sees their own (docs/boards.md)."
    ),
]


@router.get("/practice-runs/{run_id}")
def get_practice_run(
    run_id: uuid.UUID,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: PracticeActingFor = None,
) -> UnscoredRunRead:
    """One practice run, with its trials (member keys get the participant's view)."""
    return unscored.read_practice(session, caller, run_id, acting_for=participant)


@router.get("/challenges/{challenge_id}/practice-runs/left")
def practice_runs_left(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: Annotated[Handle, Query(description="The participant's handle.")],
) -> PracticeLeft:
    """What the day's practice quota leaves one participant, and when it starts again."""
    return unscored.practice_left(session, caller, challenge_id, participant)


@router.get("/challenges/{challenge_id}/practice-runs")
def list_practice_runs(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    participant: str | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> UnscoredRunList:
    """The challenge's practice runs, newest first, of one participant if named."""
    return unscored.list_practice(
        session, caller, challenge_id, participant, limit=limit, offset=offset
    )
