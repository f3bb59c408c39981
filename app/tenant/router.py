from __future__ import annotations

import uuid

from fastapi import APIRouter, status

from app.auth.gate import PlatformAdminDep, TenantAdminDep, TenantKeyDep
from app.auth.service import create_api_key, page_api_keys, revoke_api_key
from app.kit.config import get_settings
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.error_codes import SLUG_TAKEN, raises
from app.kit.routing import ApiRoute
from app.kit.schemas import Limit, Offset
from app.tenant import service
from app.tenant.schemas import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ApiKeyRead,
    ParticipantRead,
    TenantCreate,
    TenantCreated,
    TenantRead,
    TenantUpdate,
    TenantUsage,
)

router = APIRouter(prefix="/v1", route_class=ApiRoute)


@router.post(
    "/tenants",
    status_code=status.HTTP_201_CREATED,
    tags=["tenants"],
    responses=raises(SLUG_TAKEN),
)
def post_tenant(body: TenantCreate, work: UnitOfWorkDep, _: PlatformAdminDep) -> TenantCreated:
    """Create a tenant and its first admin API key (platform admin)."""
    tenant, _key_row, key = service.create_tenant(work.session, body.slug, body.name)
    work.commit()
    return TenantCreated(**TenantRead.model_validate(tenant).model_dump(), api_key=key)


@router.get("/tenant", tags=["tenants"])
def get_own_tenant(session: SessionDep, caller: TenantKeyDep) -> TenantRead:
    """The tenant of the calling key."""
    return TenantRead.model_validate(service.get_tenant(session, caller.tenant_id))


@router.patch("/tenant", tags=["tenants"])
def patch_own_tenant(body: TenantUpdate, work: UnitOfWorkDep, caller: TenantAdminDep) -> TenantRead:
    """Change the caller's tenant's settings (tenant admin): what it asks of participants'
    email addresses (docs/accounts.md)."""
    tenant = service.get_tenant(work.session, caller.tenant_id)
    if body.email_policy is not None:
        tenant = service.set_email_policy(work.session, caller.tenant_id, body.email_policy)
    work.commit()
    return TenantRead.model_validate(tenant)


@router.get("/tenant/usage", tags=["tenants"])
def get_own_usage(session: SessionDep, caller: TenantAdminDep) -> TenantUsage:
    """Model spend of the caller's tenant today against its daily budget, and the last 30 days
    (tenant admin). No model call starts once the day's budget is spent; it resets at 00:00
    UTC."""
    return service.tenant_usage(session, caller.tenant_id, get_settings())


@router.post("/api-keys", status_code=status.HTTP_201_CREATED, tags=["api keys"])
def post_api_key(body: ApiKeyCreate, work: UnitOfWorkDep, caller: TenantAdminDep) -> ApiKeyCreated:
    """Create an API key of the caller's tenant (tenant admin). The key is shown once."""
    row, key = create_api_key(work.session, caller.tenant_id, body.name, body.role)
    work.commit()
    return ApiKeyCreated(**ApiKeyRead.model_validate(row).model_dump(), key=key)


@router.get("/api-keys", tags=["api keys"])
def get_api_keys(
    session: SessionDep, caller: TenantAdminDep, limit: Limit = 50, offset: Offset = 0
) -> ApiKeyList:
    """The tenant's API keys, revoked ones too, oldest first (tenant admin)."""
    rows, total = page_api_keys(session, caller.tenant_id, limit=limit, offset=offset)
    return ApiKeyList(
        items=[ApiKeyRead.model_validate(r) for r in rows],
        total=total,
        limit=limit,
        offset=offset,
    )


@router.delete("/api-keys/{key_id}", tags=["api keys"])
def delete_api_key(key_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep) -> ApiKeyRead:
    """Revoke a key: it stops working at once; the row stays for the record."""
    row = revoke_api_key(work.session, caller.tenant_id, key_id)
    work.commit()
    return ApiKeyRead.model_validate(row)


@router.get("/participants/{participant_id}", tags=["participants"])
def get_participant(
    participant_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep
) -> ParticipantRead:
    participant = service.get_participant(session, caller.tenant_id, participant_id)
    return ParticipantRead.model_validate(participant)
