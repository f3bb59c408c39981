"""Rules acceptances and announcements, as the API takes and shows them."""

from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from app.kit.schemas import Handle, InputSchema, Name, OutputSchema

MAX_ANNOUNCEMENT_CHARS = 20_000


class RulesAcceptanceCreate(InputSchema):
    participant: Handle | None = Field(
        default=None,
        description="Who accepts (created on first use): required with a tenant key.",
    )


class RulesAcceptanceRead(OutputSchema):
    participant: str
    participant_id: uuid.UUID
    rules_sha256: str = Field(description="The version accepted: SHA-256 of the rules' text.")
    current: bool = Field(description="Whether it is the version the challenge has now.")
    accepted_at: datetime


class AnnouncementCreate(InputSchema):
    title: Name
    body: str = Field(
        default="",
        max_length=MAX_ANNOUNCEMENT_CHARS,
        description="Markdown, shown sanitized on the challenge page; mailed as written.",
    )


class AnnouncementRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    title: str
    body: str
    created_at: datetime


class AnnouncementPosted(AnnouncementRead):
    mailed: int = Field(
        description="Participants of the challenge it was mailed to (those with a "
        "confirmed address who get notification emails)."
    )


class AnnouncementList(OutputSchema):
    items: list[AnnouncementRead]
    total: int
    limit: int
    offset: int
