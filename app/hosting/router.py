"""The platform admin's tenants over REST (list with their activity, read, approve, suspend,
resume, set quotas), and a tenant admin's quotas."""

from __future__ import annotations

import uuid

from fastapi import APIRouter

from app.auth.gate import PlatformAdminDep, TenantAdminDep
from app.auth.tenant_access import TenantStatus
from app.hosting import service
from app.hosting.schemas import (
    TenantAdminUpdate,
    TenantOverview,
    TenantOverviewList,
    TenantQuotaUsage,
)
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import ORGANIZER_UNCONFIRMED, STATUS_CHANGE_REFUSED, raises
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset

router = APIRouter(prefix="/v1", route_class=ApiRoute)


@router.get("/tenants", tags=["tenants"])
def get_tenants(
    session: SessionDep,
    admin: PlatformAdminDep,
    status: TenantStatus | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> TenantOverviewList:
    """List tenants, oldest first, each with its status, quotas, organizers and activity
    (challenges, participants, attempts and model spend today); `status` keeps one status
    (platform admin)."""
    rows, total = service.list_overviews(session, admin, limit=limit, offset=offset, status=status)
    return TenantOverviewList(items=rows, total=total, limit=limit, offset=offset)


@router.get("/tenants/{tenant_id}", tags=["tenants"])
def get_tenant(
    tenant_id: uuid.UUID, session: SessionDep, admin: PlatformAdminDep
) -> TenantOverview:
    """One tenant, as the list shows it (platform admin)."""
    return service.overview(session, admin, tenant_id)


@router.patch(
    "/tenants/{tenant_id}",
    tags=["tenants"],
    responses=raises(ORGANIZER_UNCONFIRMED, STATUS_CHANGE_REFUSED),
)
def patch_tenant(
    tenant_id: uuid.UUID, body: TenantAdminUpdate, work: UnitOfWorkDep, admin: PlatformAdminDep
) -> TenantOverview:
    """Change a tenant (platform admin): `status` `active` approves a pending tenant (its
    organizers are mailed) or resumes a suspended one; `suspended` closes its keys, sessions,
    pages, public reads and play (403 `tenant_suspended`) and stops its work from being run,
    keeping its data. `quotas` sets the given quotas, null removing one."""
    service.change_tenant(work, tenant_id, body)
    work.commit()
    return service.overview(work.session, admin, tenant_id)


@router.get("/tenant/quotas", tags=["tenants"])
def get_own_quotas(session: SessionDep, caller: TenantAdminDep) -> TenantQuotaUsage:
    """The caller's tenant's quotas, set by the platform admin, and how much of each is used
    (tenant admin). Past one, what it counts is refused: 409 `quota_max_challenges` or
    `quota_max_participants`, 429 `quota_max_attempts_per_day`."""
    return service.quota_usage(session, caller.tenant_id)
