from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

Role = Literal["admin", "member"]


@dataclass(frozen=True)
class Principal:
    """Who is calling. The tenant comes from the credential only, never from a request body."""

    kind: Literal["platform_admin", "tenant_key", "participant"]
    tenant_id: uuid.UUID | None = None
    role: Role | None = None
    api_key_id: uuid.UUID | None = None
    # Set for a participant signed in to the web UI: they act only as themselves.
    participant_id: uuid.UUID | None = None
    participant_handle: str | None = None

    @property
    def is_platform_admin(self) -> bool:
        return self.kind == "platform_admin"
