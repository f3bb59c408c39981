"""The secrets of single-use links sent by mail: an address's confirmation, a password reset.

A token is random (256 bits, as a session's); the database keeps only its SHA-256, so a copy
of the table opens no link. Using a token deletes it in the same statement that finds it, so
of two requests with one link only one succeeds, and an expired token is never found. Issuing
sweeps the tenant's expired tokens.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from app.auth.models import AccountToken, TokenPurpose
from app.auth.repository import AccountTokenRepository
from app.auth.sessions import new_token, token_hash
from app.kit.db import utcnow

LIFETIMES = {
    # Long enough for a mail read the next day (and a slow mail server's retries).
    TokenPurpose.CONFIRM_EMAIL: timedelta(days=3),
    # Short: whoever holds the link holds the account.
    TokenPurpose.RESET_PASSWORD: timedelta(hours=1),
}
# The most characters a token in a link may have before it is not even looked up.
MAX_TOKEN_CHARS = 100


@dataclass(frozen=True)
class UsedToken:
    participant_id: uuid.UUID
    email: str


def issue(
    session: Session,
    tenant_id: uuid.UUID,
    participant_id: uuid.UUID,
    purpose: TokenPurpose,
    email: str,
) -> str:
    """A new token for the participant, sent to `email`; returns the token (for the link:
    never stored). The caller commits."""
    now = utcnow()
    tokens = AccountTokenRepository(session, tenant_id)
    tokens.delete_expired(now)
    token = new_token()
    tokens.add(
        AccountToken(
            id=uuid.uuid4(),
            token_hash=token_hash(token),
            tenant_id=tenant_id,
            participant_id=participant_id,
            purpose=purpose,
            email=email,
            created_at=now,
            expires_at=now + LIFETIMES[purpose],
        )
    )
    return token


def _looks_like_one(token: str) -> bool:
    return 0 < len(token) <= MAX_TOKEN_CHARS


def live(
    session: Session, tenant_id: uuid.UUID, purpose: TokenPurpose, token: str
) -> UsedToken | None:
    """Whose the token is, if it is unused and unexpired, without using it (a page showing a
    form that will)."""
    if not _looks_like_one(token):
        return None
    found = AccountTokenRepository(session, tenant_id).live(token_hash(token), purpose, utcnow())
    return None if found is None else UsedToken(found.participant_id, found.email)


def take(
    session: Session, tenant_id: uuid.UUID, purpose: TokenPurpose, token: str
) -> UsedToken | None:
    """Uses the token up; whose it was, or None when it is unknown, used or expired."""
    if not _looks_like_one(token):
        return None
    taken = AccountTokenRepository(session, tenant_id).take(token_hash(token), purpose, utcnow())
    return None if taken is None else UsedToken(*taken)


def revoke(
    session: Session, tenant_id: uuid.UUID, participant_id: uuid.UUID, purpose: TokenPurpose
) -> None:
    """Ends every token of the participant for this purpose (a reset done, an address
    confirmed or changed)."""
    AccountTokenRepository(session, tenant_id).delete_for(participant_id, purpose)
