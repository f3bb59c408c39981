from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from app.auth.gate import TenantKeyDep
from app.deps import SessionDep
from app.leaderboard import kinds
from app.leaderboard.schemas import Leaderboard
from app.schemas import Limit, Offset

router = APIRouter(prefix="/v1", tags=["leaderboards"])

_PAGING = ("limit", "offset")


def _params(request: Request) -> dict[str, str]:
    """Query parameters besides paging, for kinds whose leaderboards take their own."""
    return {k: v for k, v in request.query_params.items() if k not in _PAGING}


def _answer(board: Any) -> Leaderboard | JSONResponse:
    # A kind with a leaderboard of its own shape answers it as it is (its own documentation
    # describes it); the schema here is the one most kinds share.
    return board if isinstance(board, Leaderboard) else JSONResponse(jsonable_encoder(board))


@router.get("/challenges/{challenge_id}/leaderboard", response_model=Leaderboard)
def get_leaderboard(
    challenge_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    caller: TenantKeyDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Leaderboard | JSONResponse:
    """One row per participant (their best attempt under the strategy), best first."""
    board = kinds.read_tenant_leaderboard(
        session, caller.tenant_id, challenge_id, limit=limit, offset=offset, params=_params(request)
    )
    return _answer(board)


@router.get(
    "/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard", response_model=Leaderboard
)
def get_public_leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Leaderboard | JSONResponse:
    """The leaderboard of a public challenge, without credentials. Others answer 404."""
    board = kinds.read_public_leaderboard(
        session, tenant_slug, challenge_slug, limit=limit, offset=offset, params=_params(request)
    )
    return _answer(board)
