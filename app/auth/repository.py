"""SQL for browser sessions. Lookups name their tenant; a session's token (like an API key)
is itself the credential, so ending one by its token needs no tenant."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.auth.models import ApiKey, BrowserSession
from app.tenant.models import Participant


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

    def participant(self, token_hash: str, now: datetime) -> Participant | None:
        """The participant a live session of this tenant is for, if it is still a web account
        (has a password)."""
        return self.session.scalar(
            select(Participant)
            .join(BrowserSession, BrowserSession.participant_id == Participant.id)
            .where(
                BrowserSession.token_hash == token_hash,
                BrowserSession.tenant_id == self.tenant_id,
                BrowserSession.expires_at > now,
                Participant.tenant_id == self.tenant_id,
                Participant.password_hash.is_not(None),
            )
        )

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
                ApiKey.role == "admin",
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


def delete_by_token_hash(session: Session, token_hash: str) -> None:
    session.execute(delete(BrowserSession).where(BrowserSession.token_hash == token_hash))
