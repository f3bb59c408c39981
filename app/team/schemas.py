from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import Field

from app.kit.schemas import Handle, InputSchema, OutputSchema

_MEMBER = Field(
    description="The member acting, by handle (created on first use, as in submissions)."
)


class TeamCreate(InputSchema):
    participant: Handle = _MEMBER
    name: Handle = Field(
        description="The team's name: what its board row shows. A team is a player of the "
        "tenant, so its name may not be any participant's handle (ignoring case)."
    )


class TeamMemberAct(InputSchema):
    participant: Handle = _MEMBER


class InviteCode(OutputSchema):
    invite_code: str = Field(
        description="The team's new invite code (the previous one stops working). Shown once, "
        "stored only as a hash."
    )


class TeamJoin(InputSchema):
    participant: Handle = _MEMBER
    invite_code: str = Field(min_length=1, max_length=200)


class TeamMemberRead(OutputSchema):
    participant: str
    joined_at: datetime


class TeamRead(OutputSchema):
    id: uuid.UUID
    challenge_id: uuid.UUID
    name: str
    members: list[TeamMemberRead] = Field(description="Oldest member first.")
    created_at: datetime


class TeamCreated(TeamRead):
    invite_code: str = Field(
        description="What another participant joins with. Shown once, to the member who "
        "created the team, and stored only as a hash."
    )


class TeamList(OutputSchema):
    items: list[TeamRead]
    total: int
    limit: int
    offset: int
