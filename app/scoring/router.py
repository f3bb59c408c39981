from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.auth.gate import CallerDep, PlatformAdminDep
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import PLUGIN_ID_TAKEN, SCORER_IN_USE, raises
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset, page_of
from app.scoring import registry
from app.scoring.schemas import (
    InstalledScorerList,
    ScorerCreate,
    ScorerList,
    ScorerRead,
    ScorerUpdate,
)

router = APIRouter(prefix="/v1/scorers", tags=["scorers"], route_class=ApiRoute)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses=raises(PLUGIN_ID_TAKEN),
)
def post_scorer(body: ScorerCreate, work: UnitOfWorkDep, _: PlatformAdminDep) -> ScorerRead:
    """Register a scorer plugin (platform admin). The entrypoint is loaded in the sandbox."""
    plugin = registry.register(work.session, body)
    work.commit()
    return ScorerRead.model_validate(plugin)


@router.get("")
def get_scorers(
    session: SessionDep, _: CallerDep, limit: Limit = 50, offset: Offset = 0
) -> ScorerList:
    """Registered scorers (any authenticated caller, so tenant admins can pick one)."""
    plugins, total = registry.page_registered(session, limit, offset)
    return ScorerList(
        items=[ScorerRead.model_validate(p) for p in plugins],
        total=total,
        limit=limit,
        offset=offset,
    )


@router.get("/installed")
def get_installed_scorers(
    session: SessionDep, _: PlatformAdminDep, limit: Limit = 50, offset: Offset = 0
) -> InstalledScorerList:
    """Scorers declared by installed packages (entry-point group `gauntlet.scorers`)."""
    items, total = page_of(registry.list_installed(session), limit, offset)
    return InstalledScorerList(items=items, total=total, limit=limit, offset=offset)


@router.get("/{plugin_id}")
def get_scorer(plugin_id: str, session: SessionDep, _: CallerDep) -> ScorerRead:
    return ScorerRead.model_validate(registry.get(session, plugin_id))


@router.patch("/{plugin_id}")
def patch_scorer(
    plugin_id: str, body: ScorerUpdate, work: UnitOfWorkDep, admin: PlatformAdminDep
) -> ScorerRead:
    """Change a scorer's description, defaults, schema, or disable it (platform admin).

    A change of defaults or of `enabled` rescores every challenge that uses the scorer.
    """
    plugin = registry.update(work, admin, plugin_id, body)
    work.commit()
    return ScorerRead.model_validate(plugin)


@router.delete(
    "/{plugin_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=raises(SCORER_IN_USE),
)
def delete_scorer(plugin_id: str, work: UnitOfWorkDep, admin: PlatformAdminDep) -> Response:
    """Remove a scorer no challenge uses; one in use must be disabled instead."""
    registry.delete(work, admin, plugin_id)
    work.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
