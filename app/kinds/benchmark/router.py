"""The benchmark kind's REST endpoints, mounted by the app because the kind is registered:
final submissions and the private board of a split challenge (docs/boards.md)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query, status

from app.kinds.api import Limit, NotFound, Offset
from app.kinds.api.error_codes import (
    ATTEMPT_NOT_COMPLETED,
    BASELINE_NOT_FINAL,
    CHALLENGE_CLOSED,
    FINAL_PICKS_EXHAUSTED,
    NOT_IN_ERROR,
    raises,
)
from app.kinds.api.http import (
    ApiRoute,
    ChallengeIdDep,
    SessionDep,
    TenantAdminDep,
    TenantKeyDep,
    UnitOfWorkDep,
)
from app.kinds.api.services import participant_by_handle
from app.kinds.benchmark import finals, private_part
from app.kinds.benchmark.schemas import FinalMarks, PrivateBoard, SealedMeasures

router = APIRouter(prefix="/v1", route_class=ApiRoute)

_NO_SUCH_ATTEMPT: dict[int | str, dict[str, str]] = {
    404: {"description": "No such attempt, or its challenge has no private part."}
}


@router.post(
    "/attempts/{attempt_id}/final",
    tags=["attempts"],
    responses=raises(
        CHALLENGE_CLOSED,
        BASELINE_NOT_FINAL,
        ATTEMPT_NOT_COMPLETED,
        FINAL_PICKS_EXHAUSTED,
        also=_NO_SUCH_ATTEMPT,
    ),
)
def post_final(attempt_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantKeyDep) -> FinalMarks:
    """Mark a completed submission to a split benchmark challenge final, before the close:
    the private board ranks the participant's best final one."""
    marks = finals.mark_final(work, caller, attempt_id, final=True)
    work.commit()
    return marks


@router.delete(
    "/attempts/{attempt_id}/final",
    tags=["attempts"],
    responses=raises(CHALLENGE_CLOSED, BASELINE_NOT_FINAL, also=_NO_SUCH_ATTEMPT),
)
def delete_final(attempt_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantKeyDep) -> FinalMarks:
    """Take back a final mark, before the close."""
    marks = finals.mark_final(work, caller, attempt_id, final=False)
    work.commit()
    return marks


@router.get("/challenges/{challenge_id}/final-submissions", tags=["attempts"])
def get_final_submissions(
    challenge_id: ChallengeIdDep,
    participant: Annotated[str, Query(min_length=1, max_length=64)],
    session: SessionDep,
    caller: TenantKeyDep,
) -> FinalMarks:
    """A participant's final submissions to a split benchmark challenge."""
    found = participant_by_handle(session, caller.tenant_id, participant)
    if found is None:
        raise NotFound("participant not found")
    return finals.final_marks(session, caller, challenge_id, found)


@router.get(
    "/challenges/{challenge_id}/private-leaderboard",
    tags=["leaderboards"],
    responses={403: {"description": "Before the close, for everyone but the tenant's admins."}},
)
def get_private_leaderboard(
    challenge_id: ChallengeIdDep,
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> PrivateBoard:
    """The private board of a split benchmark challenge: each participant's best counted
    submission on the private part (their final ones, or their best by the public part)."""
    return finals.read_private_board(session, caller, challenge_id, limit=limit, offset=offset)


@router.post(
    "/attempts/{attempt_id}/private-part/rerun",
    tags=["attempts"],
    status_code=status.HTTP_202_ACCEPTED,
    responses=raises(
        NOT_IN_ERROR,
        also={404: {"description": "No such attempt, or not one of a split challenge's."}},
    ),
)
def post_private_part_rerun(
    attempt_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep
) -> SealedMeasures:
    """Re-run the private part of a split challenge's attempt that ended in error (tenant
    admin; its finished tasks are kept): its `kind_metrics.sealed` says `queued` until it has
    run again."""
    queued = private_part.rerun(work, caller, attempt_id)
    work.commit()
    return queued
