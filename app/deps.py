"""Typed FastAPI dependencies: the database session and the caller's principal."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.auth.principal import Principal
from app.auth.service import authenticate
from app.db import get_sessionmaker
from app.errors import Forbidden, Unauthorized


def get_session() -> Iterator[Session]:
    session = get_sessionmaker()()
    try:
        yield session
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session)]


def get_principal(request: Request, session: SessionDep) -> Principal:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized(
            "missing credential: send 'Authorization: Bearer <token>'",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return authenticate(session, token.strip())


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def require_platform_admin(principal: PrincipalDep) -> Principal:
    if not principal.is_platform_admin:
        raise Forbidden("this needs the platform admin token")
    return principal


def require_tenant_member(principal: PrincipalDep) -> Principal:
    if principal.tenant_id is None:
        raise Forbidden("this needs a tenant API key")
    return principal


def require_tenant_admin(principal: PrincipalDep) -> Principal:
    if principal.tenant_id is None or principal.role != "admin":
        raise Forbidden("this needs a tenant admin API key")
    return principal


PlatformAdmin = Annotated[Principal, Depends(require_platform_admin)]
TenantMember = Annotated[Principal, Depends(require_tenant_member)]
TenantAdmin = Annotated[Principal, Depends(require_tenant_admin)]


def tenant_of(principal: Principal) -> uuid.UUID:
    assert principal.tenant_id is not None, "tenant dependencies guarantee a tenant"
    return principal.tenant_id
