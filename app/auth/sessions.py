"""Browser sessions: a participant's or a tenant admin's signed-in browser, kept on the server.

The cookie carries a random token (256 bits); the database keeps only its SHA-256, so a
leaked table opens no session. Every request looks the token up: a deleted row (sign-out, a
password change, a revoked admin key) or an expired one (`expires_at`, checked by the query)
signs the browser out at once, whatever copies of the cookie exist. Starting a session ends
the browser's previous one and sweeps the tenant's expired rows.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from datetime import timedelta

from sqlalchemy.orm import Session

from app.auth.models import ApiKey
from app.auth.repository import (
    BrowserSessionRepository,
    delete_by_token_hash,
    live_session_tenant,
)
from app.auth.subjects import TenantAdmin
from app.kit.db import utcnow

PARTICIPANT_SESSION_SECONDS = 14 * 24 * 3600
ADMIN_SESSION_SECONDS = 12 * 3600
TOKEN_BYTES = 32


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _start(
    session: Session,
    tenant_id: uuid.UUID,
    previous_token: str | None,
    seconds: int,
    *,
    participant_id: uuid.UUID | None = None,
    api_key_id: uuid.UUID | None = None,
) -> str:
    if previous_token:
        end_session(session, previous_token)
    now = utcnow()
    repository = BrowserSessionRepository(session, tenant_id)
    repository.delete_expired(now)
    token = new_token()
    repository.add(
        token_hash(token),
        expires_at=now + timedelta(seconds=seconds),
        participant_id=participant_id,
        api_key_id=api_key_id,
    )
    return token


def start_participant_session(
    session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID, previous_token: str | None
) -> str:
    """A new session for the participant; returns the token for the cookie. The caller
    commits."""
    return _start(
        session,
        tenant_id,
        previous_token,
        PARTICIPANT_SESSION_SECONDS,
        participant_id=participant_id,
    )


def start_admin_session(
    session: Session, tenant_id: uuid.UUID, api_key_id: uuid.UUID, previous_token: str | None
) -> str:
    return _start(session, tenant_id, previous_token, ADMIN_SESSION_SECONDS, api_key_id=api_key_id)


def admin_key_of(session: Session, tenant_id: uuid.UUID, token: str) -> ApiKey | None:
    return BrowserSessionRepository(session, tenant_id).admin_key(token_hash(token), utcnow())


def admin_subject(key: ApiKey) -> TenantAdmin:
    """A live admin session's key (see `admin_key_of`) as the gate's subject."""
    return TenantAdmin(key.tenant_id, key.id)


def end_session(session: Session, token: str) -> None:
    """Ends the session this token opens, whichever tenant it is in (holding the token is
    what entitles one to end it)."""
    delete_by_token_hash(session, token_hash(token))


def end_participant_sessions(
    session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID
) -> int:
    """Ends every session of the participant (a password change); returns how many."""
    return BrowserSessionRepository(session, tenant_id).delete_for_participant(participant_id)


def session_tenant(session: Session, token: str) -> uuid.UUID | None:
    """The tenant whose live browser session this token opens, if any."""
    return live_session_tenant(session, token_hash(token), utcnow())
