"""SQL for credentials: API keys and browser sessions.

Key management is scoped to a tenant; the credential lookup is not (the key itself names its
tenant). A session's token, like an API key, is itself the credential, so ending one by its
token needs no tenant.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import String, Table, Uuid, bindparam, column, delete, select, table
from sqlalchemy.orm import Session

from app.auth.models import AccountToken, ApiKey, BrowserSession, PlatformSession, TokenPurpose
from app.auth.subjects import ApiKeyRole
from app.auth.tenant_access import TenantStatus
from app.kit.db import page_where

# Built once: every API request runs it, and composing the select each time cost ~4 % of
# an attempt submission's CPU (SQLAlchemy caches the compiled SQL either way). It reads the
# table, not the mapped class: the ORM layer would add a third to the statement's CPU.
_API_KEYS: Table = ApiKey.__table__  # type: ignore[assignment]
# The tenant's status is read with the key (a suspended tenant's keys open nothing), from the
# tenants table by name: credentials sit below the tenants' domain, as the foreign keys of
# this package's tables name "tenants.id".
_TENANTS = table("tenants", column("id", Uuid()), column("status", String()))
_ACTIVE_KEY = (
    select(_API_KEYS.c.id, _API_KEYS.c.tenant_id, _API_KEYS.c.role, _TENANTS.c.status)
    .join(_TENANTS, _TENANTS.c.id == _API_KEYS.c.tenant_id)
    .where(_API_KEYS.c.key_hash == bindparam("key_hash"), _API_KEYS.c.revoked_at.is_(None))
)


class ActiveKey(NamedTuple):
    id: uuid.UUID
    tenant_id: uuid.UUID
    role: ApiKeyRole
    tenant_status: TenantStatus


def active_key(session: Session, key_hash: str) -> ActiveKey | None:
    """The unrevoked key with this hash, and its tenant's status."""
    row = session.execute(_ACTIVE_KEY, {"key_hash": key_hash}).one_or_none()
    if row is None:
        return None
    key_id, tenant_id, role, status = row
    return ActiveKey(key_id, tenant_id, ApiKeyRole(role), TenantStatus(status))


class ApiKeyRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def add(self, key: ApiKey) -> None:
        self.session.add(key)
        self.session.flush()

    def all(self) -> list[ApiKey]:
        query = select(ApiKey).where(ApiKey.tenant_id == self.tenant_id).order_by(ApiKey.created_at)
        return list(self.session.scalars(query))

    def page(self, limit: int, offset: int) -> tuple[list[ApiKey], int]:
        return page_where(
            self.session,
            ApiKey,
            [ApiKey.tenant_id == self.tenant_id],
            (ApiKey.created_at, ApiKey.id),
            limit=limit,
            offset=offset,
        )

    def get(self, key_id: uuid.UUID) -> ApiKey | None:
        return self.session.scalar(
            select(ApiKey).where(ApiKey.tenant_id == self.tenant_id, ApiKey.id == key_id)
        )


class BrowserSessionRepository:
    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def add(
        self,
        token_hash: str,
        *,
        expires_at: datetime,
        participant_id: uuid.UUID | None = None,
        api_key_id: uuid.UUID | None = None,
    ) -> None:
        self.session.add(
            BrowserSession(
                id=uuid.uuid4(),
                token_hash=token_hash,
                tenant_id=self.tenant_id,
                participant_id=participant_id,
                api_key_id=api_key_id,
                expires_at=expires_at,
            )
        )
        self.session.flush()

    def admin_key(self, token_hash: str, now: datetime) -> ApiKey | None:
        """The admin key a live admin session of this tenant was opened with, if the key is
        still an unrevoked admin key."""
        return self.session.scalar(
            select(ApiKey)
            .join(BrowserSession, BrowserSession.api_key_id == ApiKey.id)
            .where(
                BrowserSession.token_hash == token_hash,
                BrowserSession.tenant_id == self.tenant_id,
                BrowserSession.expires_at > now,
                ApiKey.tenant_id == self.tenant_id,
                ApiKey.role == ApiKeyRole.ADMIN,
                ApiKey.revoked_at.is_(None),
            )
        )

    def delete_for_participant(self, participant_id: uuid.UUID) -> int:
        result = self.session.execute(
            delete(BrowserSession).where(
                BrowserSession.tenant_id == self.tenant_id,
                BrowserSession.participant_id == participant_id,
            )
        )
        return int(getattr(result, "rowcount", 0) or 0)

    def delete_expired(self, now: datetime) -> None:
        self.session.execute(
            delete(BrowserSession).where(
                BrowserSession.tenant_id == self.tenant_id, BrowserSession.expires_at <= now
            )
        )


def live_session_tenant(session: Session, token_hash: str, now: datetime) -> uuid.UUID | None:
    """The tenant of the live browser session with this token hash."""
    return session.scalar(
        select(BrowserSession.tenant_id).where(
            BrowserSession.token_hash == token_hash, BrowserSession.expires_at > now
        )
    )


def delete_by_token_hash(session: Session, token_hash: str) -> None:
    session.execute(delete(BrowserSession).where(BrowserSession.token_hash == token_hash))


class AccountTokenRepository:
    """Single-use links' tokens of one tenant, by the SHA-256 of the token."""

    def __init__(self, session: Session, tenant_id: uuid.UUID) -> None:
        self.session = session
        self.tenant_id = tenant_id

    def add(self, token: AccountToken) -> None:
        self.session.add(token)
        self.session.flush()

    def _live(self, token_hash: str, purpose: TokenPurpose, now: datetime) -> list[Any]:
        return [
            AccountToken.tenant_id == self.tenant_id,
            AccountToken.token_hash == token_hash,
            AccountToken.purpose == purpose,
            AccountToken.expires_at > now,
        ]

    def live(self, token_hash: str, purpose: TokenPurpose, now: datetime) -> AccountToken | None:
        """The token, if it is unused and unexpired (it stays so)."""
        return self.session.scalar(
            select(AccountToken).where(*self._live(token_hash, purpose, now))
        )

    def take(
        self, token_hash: str, purpose: TokenPurpose, now: datetime
    ) -> tuple[uuid.UUID, str] | None:
        """Uses the token up: deletes it if it is unused and unexpired, in one statement (of
        two requests with the same link, one gets it); returns its participant and address."""
        row = self.session.execute(
            delete(AccountToken)
            .where(*self._live(token_hash, purpose, now))
            .returning(AccountToken.participant_id, AccountToken.email)
        ).one_or_none()
        return None if row is None else (row[0], row[1])

    def delete_for(self, participant_id: uuid.UUID, purpose: TokenPurpose) -> None:
        self.session.execute(
            delete(AccountToken).where(
                AccountToken.tenant_id == self.tenant_id,
                AccountToken.participant_id == participant_id,
                AccountToken.purpose == purpose,
            )
        )

    def delete_expired(self, now: datetime) -> None:
        self.session.execute(
            delete(AccountToken).where(
                AccountToken.tenant_id == self.tenant_id, AccountToken.expires_at <= now
            )
        )


class PlatformSessionRepository:
    """Browsers signed in to the platform admin's pages (no tenant: the platform's own)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, row: PlatformSession) -> None:
        self.session.add(row)
        self.session.flush()

    def live(self, token_hash: str, admin_token_hash: str, now: datetime) -> bool:
        found = self.session.scalar(
            select(PlatformSession.id).where(
                PlatformSession.token_hash == token_hash,
                PlatformSession.admin_token_hash == admin_token_hash,
                PlatformSession.expires_at > now,
            )
        )
        return found is not None

    def delete(self, token_hash: str) -> None:
        self.session.execute(
            delete(PlatformSession).where(PlatformSession.token_hash == token_hash)
        )

    def delete_expired(self, now: datetime) -> None:
        self.session.execute(delete(PlatformSession).where(PlatformSession.expires_at <= now))
