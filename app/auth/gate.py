"""The authorization gate: the one place a request's credential becomes a typed subject
(`app.auth.subjects`), for the API (a bearer credential) and the web UI alike (its browser
sessions, through `app.auth.sessions` and the tenant's participants).

A route names the subject it needs (`CallerDep`, `PlatformAdminDep`, `TenantKeyDep`,
`TenantAdminDep`); the gate answers 401 or 403 before the route runs, and the route gets a
value of exactly that type: its tenant is a field, never an optional one narrowed later.

FastAPI runs each synchronous dependency in the thread pool, one hop each. Only the credential
lookup does I/O, so the role checks are `async` (no hop): a request pays one hop for
authentication and one for its endpoint.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from app.auth.service import authenticate
from app.auth.subjects import PlatformAdmin, TenantAdmin, TenantKey
from app.kit.deps import SessionDep
from app.kit.errors import Forbidden, Unauthorized
from app.kit.routing import release_request_session


async def get_credential(request: Request) -> str:
    """The bearer token as sent; it is looked up by `authenticate`, in the endpoint's thread."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized(
            "missing credential: send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return token.strip()


CredentialDep = Annotated[str, Depends(get_credential)]


def get_caller(credential: CredentialDep, session: SessionDep) -> PlatformAdmin | TenantKey:
    try:
        return authenticate(session, credential)
    finally:
        # The endpoint runs in another trip to the thread pool: the connection must not wait
        # for it checked out (app/kit/deps.py).
        release_request_session()


CallerDep = Annotated[PlatformAdmin | TenantKey, Depends(get_caller)]


async def require_platform_admin(caller: CallerDep) -> PlatformAdmin:
    if not isinstance(caller, PlatformAdmin):
        raise Forbidden("this needs the platform admin token")
    return caller


def check_tenant_key(caller: PlatformAdmin | TenantKey) -> TenantKey:
    if isinstance(caller, PlatformAdmin):
        raise Forbidden("this needs a tenant API key")
    return caller


async def require_tenant_key(caller: CallerDep) -> TenantKey:
    return check_tenant_key(caller)


async def require_tenant_admin(caller: CallerDep) -> TenantAdmin:
    if not isinstance(caller, TenantAdmin):
        raise Forbidden("this needs a tenant admin API key")
    return caller


PlatformAdminDep = Annotated[PlatformAdmin, Depends(require_platform_admin)]
TenantKeyDep = Annotated[TenantKey, Depends(require_tenant_key)]
TenantAdminDep = Annotated[TenantAdmin, Depends(require_tenant_admin)]
