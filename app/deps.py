"""Typed FastAPI dependencies: the database session and the caller's principal.

FastAPI runs each synchronous dependency in the thread pool, one hop each. Only the credential
lookup does I/O, so the session factory and the role checks are `async` (no hop): a request
pays one hop for authentication and one for its endpoint.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.auth.principal import Principal
from app.auth.service import authenticate
from app.db import get_sessionmaker
from app.errors import Forbidden, Unauthorized
from app.unit_of_work import UnitOfWork


async def get_session() -> AsyncIterator[Session]:
    # Creating a Session does no I/O (it connects on first use, in the endpoint's thread).
    # Closing one that committed sends nothing; one that only read sends a ROLLBACK, a local
    # round trip on the event loop that costs less than a hop to the thread pool.
    session = get_sessionmaker()()
    try:
        yield session
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]


async def get_unit_of_work(session: SessionDep) -> UnitOfWork:
    """The request's session as a unit of work: routes that write commit through it, and the
    tasks their services asked for are sent after that commit."""
    return UnitOfWork(session)


UnitOfWorkDep = Annotated[UnitOfWork, Depends(get_unit_of_work)]


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


def get_principal(credential: CredentialDep, session: SessionDep) -> Principal:
    return authenticate(session, credential)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def require_platform_admin(principal: PrincipalDep) -> Principal:
    if not principal.is_platform_admin:
        raise Forbidden("this needs the platform admin token")
    return principal


def check_tenant_member(principal: Principal) -> Principal:
    if principal.tenant_id is None:
        raise Forbidden("this needs a tenant API key")
    return principal


async def require_tenant_member(principal: PrincipalDep) -> Principal:
    return check_tenant_member(principal)


async def require_tenant_admin(principal: PrincipalDep) -> Principal:
    if principal.tenant_id is None or principal.role != "admin":
        raise Forbidden("this needs a tenant admin API key")
    return principal


PlatformAdmin = Annotated[Principal, Depends(require_platform_admin)]
TenantMember = Annotated[Principal, Depends(require_tenant_member)]
TenantAdmin = Annotated[Principal, Depends(require_tenant_admin)]


def tenant_of(principal: Principal) -> uuid.UUID:
    assert principal.tenant_id is not None, "tenant dependencies guarantee a tenant"
    return principal.tenant_id
