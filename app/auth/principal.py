from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

Role = Literal["admin", "member"]


@dataclass(frozen=True)
class Principal:
    """Who is calling. The tenant comes from the credential only, never from a request body."""

    kind: Literal["platform_admin", "tenant_key"]
    tenant_id: uuid.UUID | None = None
    role: Role | None = None
    api_key_id: uuid.UUID | None = None

    @property
    def is_platform_admin(self) -> bool:
        return self.kind == "platform_admin"
