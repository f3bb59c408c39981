"""The platform admin's browser sessions: its pages (`/admin`) are signed in to with the
platform admin token, as a tenant's console is with an admin key.

The cookie holds a random token (256 bits); the database keeps its SHA-256 (a copy of the
table opens nothing) and the SHA-256 of the admin token the session was opened with, so
changing `GAUNTLET_ADMIN_TOKEN` ends every session opened with the old one. Signing out
deletes the row; sessions expire on the server after 12 hours.
"""

from __future__ import annotations

import hashlib
import hmac
import uuid
from datetime import timedelta

from sqlalchemy.orm import Session

from app.auth.models import PlatformSession
from app.auth.repository import PlatformSessionRepository
from app.auth.sessions import ADMIN_SESSION_SECONDS, new_token, token_hash
from app.kit.config import get_settings
from app.kit.db import utcnow


def _admin_token_hash() -> str:
    return hashlib.sha256(get_settings().resolved_admin_token.encode()).hexdigest()


def is_admin_token(typed: str) -> bool:
    """Whether what was typed is the platform admin token (compared in constant time)."""
    return hmac.compare_digest(
        typed.encode("utf-8", "surrogateescape"),
        get_settings().resolved_admin_token.encode(),
    )


def start(session: Session, previous_token: str | None) -> str:
    """A new platform admin session (ending the browser's previous one); its token, for the
    cookie. The caller commits."""
    repository = PlatformSessionRepository(session)
    now = utcnow()
    if previous_token:
        repository.delete(token_hash(previous_token))
    repository.delete_expired(now)
    token = new_token()
    repository.add(
        PlatformSession(
            id=uuid.uuid4(),
            token_hash=token_hash(token),
            admin_token_hash=_admin_token_hash(),
            created_at=now,
            expires_at=now + timedelta(seconds=ADMIN_SESSION_SECONDS),
        )
    )
    return token


def is_live(session: Session, token: str) -> bool:
    """Whether the token opens a live session, opened with today's admin token."""
    return PlatformSessionRepository(session).live(token_hash(token), _admin_token_hash(), utcnow())


def end(session: Session, token: str) -> None:
    PlatformSessionRepository(session).delete(token_hash(token))
