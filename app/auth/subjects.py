"""Who is calling, as a type: what each kind of caller may do is decided by its type, never by
optional fields narrowed at run time.

- `PlatformAdmin`: the one admin token from the settings; no tenant.
- `TenantAdmin` / `TenantMember`: an API key of one tenant, by its role.
- `SignedInParticipant`: a participant signed in to the web UI; acts only as themselves.

The tenant always comes from the credential (or the web session), never from a request body.
What a caller may see of hidden configuration is its `audience`: tenant admins see
everything, every other reader the participant's view (`Audience`). Views decide redaction
from the audience alone, each in one place.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum


class ApiKeyRole(StrEnum):
    ADMIN = "admin"
    MEMBER = "member"


class Audience(StrEnum):
    """Whom a view is for: tenant admins see hidden configuration and full error reasons;
    members, participants and anonymous readers see the participant's view."""

    ADMIN = "admin"
    PARTICIPANT = "participant"


@dataclass(frozen=True, slots=True)
class PlatformAdmin:
    """The holder of the platform admin token: creates tenants, registers scorer plugins."""


@dataclass(frozen=True, slots=True)
class TenantAdmin:
    tenant_id: uuid.UUID
    # None for a participant account with the admin role, signed in on the web.
    api_key_id: uuid.UUID | None

    @property
    def audience(self) -> Audience:
        return Audience.ADMIN


@dataclass(frozen=True, slots=True)
class TenantMember:
    tenant_id: uuid.UUID
    api_key_id: uuid.UUID

    @property
    def audience(self) -> Audience:
        return Audience.PARTICIPANT


@dataclass(frozen=True, slots=True)
class SignedInParticipant:
    tenant_id: uuid.UUID
    participant_id: uuid.UUID
    handle: str

    @property
    def audience(self) -> Audience:
        return Audience.PARTICIPANT


# A tenant's API key, whatever its role.
TenantKey = TenantAdmin | TenantMember
# Every caller that acts inside one tenant.
TenantSubject = TenantAdmin | TenantMember | SignedInParticipant
Subject = PlatformAdmin | TenantAdmin | TenantMember | SignedInParticipant


def tenant_key(tenant_id: uuid.UUID, api_key_id: uuid.UUID, role: ApiKeyRole) -> TenantKey:
    if role is ApiKeyRole.ADMIN:
        return TenantAdmin(tenant_id, api_key_id)
    return TenantMember(tenant_id, api_key_id)
