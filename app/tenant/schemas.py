from __future__ import annotations

import uuid
from datetime import datetime
from typing import Literal

from pydantic import Field

from app.schemas import InputSchema, Name, OutputSchema, Slug


class TenantCreate(InputSchema):
    slug: Slug
    name: Name


class TenantRead(OutputSchema):
    id: uuid.UUID
    slug: str
    name: str
    created_at: datetime


class TenantCreated(TenantRead):
    api_key: str = Field(description="An admin key of the new tenant. Shown once, never again.")


class TenantList(OutputSchema):
    items: list[TenantRead]
    total: int


class ApiKeyCreate(InputSchema):
    name: Name
    role: Literal["admin", "member"]


class ApiKeyRead(OutputSchema):
    id: uuid.UUID
    name: str
    role: str
    key_prefix: str
    created_at: datetime
    revoked_at: datetime | None


class ApiKeyCreated(ApiKeyRead):
    key: str = Field(description="The key itself. Shown once, stored only as a hash.")


class ApiKeyList(OutputSchema):
    items: list[ApiKeyRead]


class ParticipantRead(OutputSchema):
    id: uuid.UUID
    handle: str
    created_at: datetime


class ParticipantList(OutputSchema):
    items: list[ParticipantRead]
    total: int
