from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Query, Response, status
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator
from starlette.requests import Request

from app.auth.gate import TenantAdminDep, TenantKeyDep
from app.challenge import service
from app.challenge.config import ChallengeState, Visibility
from app.challenge.reference import ChallengeIdDep
from app.challenge.schemas import (
    ChallengeCreate,
    ChallengeList,
    ChallengePublic,
    ChallengeRead,
    ChallengeUpdate,
    registered_kind,
)
from app.kit.conditional import CONDITIONAL_READ
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import (
    CHALLENGE_ARCHIVED,
    QUOTA_MAX_CHALLENGES,
    SLUG_TAKEN,
    SPLIT_FROZEN,
    raises,
)
from app.kit.errors import ValidationFailed, request_error_details
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset


class ChallengeBodyRoute(ApiRoute):
    """A route taking a new challenge's body: refused, it lists every problem of the body at
    once (`service.body_problems`), its kind's sections' too, where validating the body's
    model alone would stop at the fields every challenge has."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        body_field = self.body_field
        if body_field is None or body_field.field_info.annotation is not ChallengeCreate:
            return handler

        async def every_problem(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as error:
                if not isinstance(error.body, Mapping):
                    raise  # not an object (or not JSON): nothing of a challenge to check
                elsewhere = [e for e in error.errors() if tuple(e.get("loc", ()))[:1] != ("body",)]
                problems = [*service.body_problems(error.body), *request_error_details(elsewhere)]
                if not problems:
                    raise
                raise ValidationFailed.of(problems) from error

        return every_problem


router = APIRouter(prefix="/v1/challenges", tags=["challenges"], route_class=ChallengeBodyRoute)


def _known_kind(name: str | None) -> str | None:
    return None if name is None else registered_kind(name)


# One of the registered kinds (app/challenge/registry.py).
KindFilter = Annotated[str | None, Query(max_length=16), AfterValidator(_known_kind)]


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=raises(SLUG_TAKEN, QUOTA_MAX_CHALLENGES),
)
def post_challenge(
    body: ChallengeCreate, work: UnitOfWorkDep, caller: TenantAdminDep
) -> ChallengeRead:
    """Create a challenge (tenant admin). Configs are validated; errors name the field."""
    challenge = service.create_challenge(work.session, caller.tenant_id, body)
    work.commit()
    return service.to_admin_view(challenge)


@router.get("", responses=CONDITIONAL_READ)
def list_challenges(
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
    kind: KindFilter = None,
    visibility: Visibility | None = None,
    state: ChallengeState | None = None,
) -> ChallengeList:
    """List the tenant's challenges, newest first: the live ones and, for admin keys, the
    drafts; archived ones with `state=archived`. Member keys see the participant view and
    never a draft."""
    rows, total = service.list_challenges(
        session,
        caller.tenant_id,
        limit=limit,
        offset=offset,
        kind=kind,
        visibility=visibility,
        state=state,
        audience=caller.audience,
    )
    return ChallengeList(
        items=[service.challenge_view(c, caller.audience) for c in rows],
        total=total,
        limit=limit,
        offset=offset,
    )


@router.get("/{challenge_id}", responses=CONDITIONAL_READ)
def get_challenge(
    challenge_id: ChallengeIdDep, session: SessionDep, caller: TenantKeyDep
) -> ChallengeRead | ChallengePublic:
    challenge = service.readable_challenge(session, caller.tenant_id, challenge_id, caller.audience)
    return service.challenge_view(challenge, caller.audience)


@router.patch("/{challenge_id}", responses=raises(CHALLENGE_ARCHIVED, SPLIT_FROZEN))
def patch_challenge(
    challenge_id: ChallengeIdDep,
    body: ChallengeUpdate,
    work: UnitOfWorkDep,
    caller: TenantAdminDep,
    response: Response,
) -> ChallengeRead:
    """Change some fields (tenant admin); the result is validated as a whole.

    Changing `scoring` starts a rescore job (its address is in the `Location` header): past
    attempts are scored again and the leaderboard is rebuilt.
    """
    challenge, job_id = service.update_challenge(work, caller.tenant_id, challenge_id, body)
    work.commit()
    if job_id is not None:
        response.headers["Location"] = f"/v1/rescore-jobs/{job_id}"
    return service.to_admin_view(challenge)


@router.delete("/{challenge_id}", status_code=status.HTTP_204_NO_CONTENT)
def delete_challenge(
    challenge_id: ChallengeIdDep, work: UnitOfWorkDep, caller: TenantAdminDep
) -> Response:
    """Delete a challenge (tenant admin): hidden from everyone, its work not run, its slug free;
    kept with its data until purged (`/v1/deleted-challenges`)."""
    service.delete_challenge(work.session, caller.tenant_id, challenge_id)
    work.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
