from __future__ import annotations

import uuid
from datetime import datetime
from enum import StrEnum

from sqlalchemy import CheckConstraint, ForeignKey, Index, String, Uuid
from sqlalchemy.orm import Mapped, mapped_column

from app.auth.subjects import ApiKeyRole
from app.kit.db import Base, StrEnumColumn, UTCDateTime, new_id, utcnow


class ApiKey(Base):
    """A tenant credential. Only a SHA-256 of the key is stored: keys are long random strings,
    so a fast hash is safe and lets every request find its key with one indexed lookup."""

    __tablename__ = "api_keys"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    role: Mapped[ApiKeyRole] = mapped_column(StrEnumColumn(ApiKeyRole, 16))
    key_prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class BrowserSession(Base):
    """A signed-in browser: a participant's web session, or a tenant admin's (signed in with an
    API key). The cookie holds a random token; only its SHA-256 is stored, so the table does
    not give sessions away. Deleting the row ends the session (sign-out, password change),
    and `expires_at` is checked on every request."""

    __tablename__ = "browser_sessions"
    __table_args__ = (
        CheckConstraint(
            "(participant_id IS NULL) <> (api_key_id IS NULL)", name="one_kind_of_session"
        ),
        Index("ix_browser_sessions_tenant_id_expires_at", "tenant_id", "expires_at"),
    )

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(Uuid, ForeignKey("tenants.id", ondelete="CASCADE"))
    participant_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), index=True, default=None
    )
    api_key_id: Mapped[uuid.UUID | None] = mapped_column(
        Uuid, ForeignKey("api_keys.id", ondelete="CASCADE"), index=True, default=None
    )
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class TokenPurpose(StrEnum):
    CONFIRM_EMAIL = "confirm_email"
    RESET_PASSWORD = "reset_password"


class AccountToken(Base):
    """The secret of a single-use link sent by mail: an address's confirmation, a password
    reset. Like a session's, the token is random (256 bits) and only its SHA-256 is stored;
    using it deletes the row, so a link works once, and not after `expires_at`. `email` is
    the address it was sent to: a confirmation confirms that address only (not one the
    account changed to since)."""

    __tablename__ = "account_tokens"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("tenants.id", ondelete="CASCADE"), index=True
    )
    participant_id: Mapped[uuid.UUID] = mapped_column(
        Uuid, ForeignKey("participants.id", ondelete="CASCADE"), index=True
    )
    purpose: Mapped[TokenPurpose] = mapped_column(StrEnumColumn(TokenPurpose, 20))
    email: Mapped[str] = mapped_column(String(254))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PlatformSession(Base):
    """A browser signed in to the platform admin's pages with the platform admin token. As a
    tenant admin's session: the cookie holds a random token, this table its SHA-256; signing
    out deletes the row, and `expires_at` is checked on every request. `admin_token_hash` is
    the SHA-256 of the admin token it was opened with, so a new GAUNTLET_ADMIN_TOKEN ends
    every session opened with the old one."""

    __tablename__ = "platform_sessions"

    id: Mapped[uuid.UUID] = mapped_column(Uuid, primary_key=True, default=new_id)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    admin_token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
