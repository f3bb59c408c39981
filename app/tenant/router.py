from __future__ import annotations

import uuid

from fastapi import APIRouter, status

from app.auth.service import create_api_key, list_api_keys, revoke_api_key
from app.config import get_settings
from app.deps import (
    PlatformAdminDep,
    SessionDep,
    TenantAdminDep,
    TenantKeyDep,
    UnitOfWorkDep,
)
from app.errors import NotFound
from app.schemas import Limit, Offset
from app.tenant import repository
from app.tenant.schemas import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyList,
    ApiKeyRead,
    ParticipantList,
    ParticipantRead,
    TenantCreate,
    TenantCreated,
    TenantList,
    TenantRead,
    TenantUsage,
)
from app.tenant.service import create_tenant, tenant_usage

router = APIRouter(prefix="/v1")


@router.post(
    "/tenants",
    status_code=status.HTTP_201_CREATED,
    tags=["tenants"],
    responses={409: {"description": "A tenant has this slug."}},
)
def post_tenant(body: TenantCreate, work: UnitOfWorkDep, _: PlatformAdminDep) -> TenantCreated:
    """Create a tenant and its first admin API key (platform admin)."""
    tenant, _key_row, key = create_tenant(work.session, body.slug, body.name)
    work.commit()
    return TenantCreated(
        id=tenant.id, slug=tenant.slug, name=tenant.name, created_at=tenant.created_at, api_key=key
    )


@router.get("/tenants", tags=["tenants"])
def get_tenants(
    session: SessionDep, _: PlatformAdminDep, limit: Limit = 50, offset: Offset = 0
) -> TenantList:
    """List tenants (platform admin)."""
    rows, total = repository.list_tenants(session, limit, offset)
    return TenantList(items=[TenantRead.model_validate(t) for t in rows], total=total)


@router.get("/tenants/{tenant_id}", tags=["tenants"])
def get_tenant(tenant_id: uuid.UUID, session: SessionDep, _: PlatformAdminDep) -> TenantRead:
    tenant = repository.get_tenant(session, tenant_id)
    if tenant is None:
        raise NotFound("tenant not found")
    return TenantRead.model_validate(tenant)


@router.get("/tenant", tags=["tenants"])
def get_own_tenant(session: SessionDep, caller: TenantKeyDep) -> TenantRead:
    """The tenant of the calling key."""
    tenant = repository.get_tenant(session, caller.tenant_id)
    if tenant is None:
        raise NotFound("tenant not found")
    return TenantRead.model_validate(tenant)


@router.get("/tenant/usage", tags=["tenants"])
def get_own_usage(session: SessionDep, caller: TenantAdminDep) -> TenantUsage:
    """Model spend of the caller's tenant today against its daily budget, and the last 30 days
    (tenant admin). No model call starts once the day's budget is spent; it resets at 00:00
    UTC."""
    return tenant_usage(session, caller.tenant_id, get_settings())


@router.post("/api-keys", status_code=status.HTTP_201_CREATED, tags=["api keys"])
def post_api_key(body: ApiKeyCreate, work: UnitOfWorkDep, caller: TenantAdminDep) -> ApiKeyCreated:
    """Create an API key of the caller's tenant (tenant admin). The key is shown once."""
    row, key = create_api_key(work.session, caller.tenant_id, body.name, body.role)
    work.commit()
    return ApiKeyCreated(**ApiKeyRead.model_validate(row).model_dump(), key=key)


@router.get("/api-keys", tags=["api keys"])
def get_api_keys(session: SessionDep, caller: TenantAdminDep) -> ApiKeyList:
    rows = list_api_keys(session, caller.tenant_id)
    return ApiKeyList(items=[ApiKeyRead.model_validate(r) for r in rows])


@router.delete("/api-keys/{key_id}", tags=["api keys"])
def delete_api_key(key_id: uuid.UUID, work: UnitOfWorkDep, caller: TenantAdminDep) -> ApiKeyRead:
    """Revoke a key: it stops working at once; the row stays for the record."""
    row = revoke_api_key(work.session, caller.tenant_id, key_id)
    work.commit()
    return ApiKeyRead.model_validate(row)


@router.get("/participants", tags=["participants"])
def get_participants(
    session: SessionDep, caller: TenantKeyDep, limit: Limit = 50, offset: Offset = 0
) -> ParticipantList:
    repo = repository.ParticipantRepository(session, caller.tenant_id)
    rows, total = repo.page(limit, offset)
    return ParticipantList(items=[ParticipantRead.model_validate(p) for p in rows], total=total)


@router.get("/participants/{participant_id}", tags=["participants"])
def get_participant(
    participant_id: uuid.UUID, session: SessionDep, caller: TenantKeyDep
) -> ParticipantRead:
    participant = repository.ParticipantRepository(session, caller.tenant_id).get(participant_id)
    if participant is None:
        raise NotFound("participant not found")
    return ParticipantRead.model_validate(participant)
