from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from app.auth.gate import CredentialDep, check_tenant_key
from app.auth.service import authenticate
from app.challenge.reference import ChallengeRef, resolve_challenge
from app.kit.conditional import CONDITIONAL_READ
from app.kit.db import get_sessionmaker
from app.kit.deps import SessionDep
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset
from app.leaderboard import leaderboard_kind
from app.leaderboard.schemas import Leaderboard

router = APIRouter(prefix="/v1", tags=["leaderboards"], route_class=ApiRoute)

_PAGING = ("limit", "offset")


def _params(request: Request) -> dict[str, str]:
    """Query parameters besides paging, for kinds whose leaderboards take their own."""
    return {k: v for k, v in request.query_params.items() if k not in _PAGING}


def _answer(board: BaseModel) -> Response:
    """The board as JSON, serialized once by pydantic. A kind with a leaderboard of its own
    shape answers it as it is (its own documentation describes it); the schema declared here
    is the one most kinds share. (`jsonable_encoder` took a third of a red-blue page's time.)"""
    return Response(board.model_dump_json(), media_type="application/json")


@router.get(
    "/challenges/{challenge_id}/leaderboard",
    response_model=Leaderboard,
    # The key is looked up inside the one trip to the thread pool (below), not by a
    # dependency that app/api_docs.py reads, so its 401 and 403 are declared here.
    responses={**CONDITIONAL_READ, 401: {}, 403: {"description": "Not a tenant key."}},
)
async def get_leaderboard(
    challenge_id: ChallengeRef,
    request: Request,
    credential: CredentialDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Response:
    """One row per participant (their best attempt under the strategy), best first. From the
    challenge's `freeze_at` until its close, member keys see the board as it stood at
    `freeze_at` (`frozen`); admin keys see it live."""
    # A read as frequent as submissions: a synchronous route takes a trip to the thread pool
    # for the key lookup and another for the read; this one takes one for both, and
    # serializes its answer once (bench/README.md, "Red-blue leaderboard page").
    params = _params(request)
    return await run_in_threadpool(_read, challenge_id, credential, limit, offset, params)


def _read(
    challenge_ref: str, credential: str, limit: int, offset: int, params: dict[str, str]
) -> Response:
    with get_sessionmaker()() as session:
        caller = check_tenant_key(authenticate(session, credential))
        board = leaderboard_kind.read_tenant_leaderboard(
            session,
            caller.tenant_id,
            resolve_challenge(session, caller.tenant_id, challenge_ref),
            caller.audience,
            limit=limit,
            offset=offset,
            params=params,
        )
    return _answer(board)


@router.get(
    "/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
    response_model=Leaderboard,
    responses=CONDITIONAL_READ,
)
def get_public_leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Response:
    """The leaderboard of a public challenge, without credentials (frozen from the challenge's
    `freeze_at` until its close). Others answer 404."""
    board = leaderboard_kind.read_public_leaderboard(
        session, tenant_slug, challenge_slug, limit=limit, offset=offset, params=_params(request)
    )
    return _answer(board)
