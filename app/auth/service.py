"""API keys (made random, shown once, stored as a SHA-256 hash, revocable) and the one place a
bearer credential turns into a subject."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid

from sqlalchemy.orm import Session

from app.auth.models import ApiKey
from app.auth.repository import ApiKeyRepository, active_key
from app.auth.subjects import ApiKeyRole, PlatformAdmin, TenantKey, tenant_key
from app.auth.tenant_access import refuse_unless_active
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.errors import NotFound, Unauthorized

KEY_PREFIX = "gk_"


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def create_api_key(
    session: Session, tenant_id: uuid.UUID, name: str, role: ApiKeyRole
) -> tuple[ApiKey, str]:
    """Returns the stored row and the key itself, which is never retrievable again."""
    key = KEY_PREFIX + secrets.token_urlsafe(32)
    row = ApiKey(
        id=uuid.uuid4(),
        tenant_id=tenant_id,
        name=name,
        role=role,
        key_prefix=key[:10],
        key_hash=hash_key(key),
        created_at=utcnow(),
    )
    ApiKeyRepository(session, tenant_id).add(row)
    return row, key


def list_api_keys(session: Session, tenant_id: uuid.UUID) -> list[ApiKey]:
    return ApiKeyRepository(session, tenant_id).all()


def page_api_keys(
    session: Session, tenant_id: uuid.UUID, *, limit: int, offset: int
) -> tuple[list[ApiKey], int]:
    """A page of the tenant's keys, oldest first, and how many it has."""
    return ApiKeyRepository(session, tenant_id).page(limit, offset)


def revoke_api_key(session: Session, tenant_id: uuid.UUID, key_id: uuid.UUID) -> ApiKey:
    row = ApiKeyRepository(session, tenant_id).get(key_id)
    if row is None:
        raise NotFound("api key not found")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        session.flush()
    return row


def authenticate(session: Session, token: str) -> PlatformAdmin | TenantKey:
    """The one place where a bearer credential turns into a subject (and so into a tenant).
    A key of a tenant that is not active (suspended, or not yet approved) is refused with
    403 saying so (`TenantClosed`)."""
    admin_token = get_settings().resolved_admin_token
    if hmac.compare_digest(token.encode(), admin_token.encode()):
        return PlatformAdmin()
    if token.startswith(KEY_PREFIX):
        key = active_key(session, hash_key(token))
        if key is not None:
            refuse_unless_active(key.tenant_status)
            return tenant_key(key.tenant_id, key.id, key.role)
    raise Unauthorized("invalid or revoked credential")


def key_tenant(session: Session, token: str) -> uuid.UUID | None:
    """The tenant of an unrevoked API key (without the gate's other checks: what a request's
    share is counted against, before the request runs)."""
    if not token.startswith(KEY_PREFIX):
        return None
    key = active_key(session, hash_key(token))
    return None if key is None else key.tenant_id
