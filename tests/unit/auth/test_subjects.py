"""The authorization gate's subjects: a key's role decides its type, the type its audience."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from app.auth.gate import require_platform_admin, require_tenant_admin, require_tenant_key
from app.auth.subjects import (
    ApiKeyRole,
    Audience,
    PlatformAdmin,
    SignedInParticipant,
    TenantAdmin,
    TenantMember,
    tenant_key,
)
from app.kit.errors import Forbidden

TENANT = uuid.uuid4()
KEY = uuid.uuid4()


def test_a_keys_role_decides_its_subject_and_what_it_sees() -> None:
    admin = tenant_key(TENANT, KEY, ApiKeyRole.ADMIN)
    member = tenant_key(TENANT, KEY, ApiKeyRole.MEMBER)
    assert admin == TenantAdmin(TENANT, KEY) and admin.audience is Audience.ADMIN
    assert member == TenantMember(TENANT, KEY) and member.audience is Audience.PARTICIPANT
    participant = SignedInParticipant(TENANT, uuid.uuid4(), "alice")
    assert participant.audience is Audience.PARTICIPANT


@pytest.mark.parametrize(
    ("check", "allowed"),
    [
        (require_platform_admin, {PlatformAdmin}),
        (require_tenant_key, {TenantAdmin, TenantMember}),
        (require_tenant_admin, {TenantAdmin}),
    ],
)
def test_each_gate_lets_only_its_subjects_through(check: object, allowed: set[type]) -> None:
    callers = [PlatformAdmin(), TenantAdmin(TENANT, KEY), TenantMember(TENANT, KEY)]
    for caller in callers:
        if type(caller) in allowed:
            assert asyncio.run(check(caller)) is caller  # type: ignore[operator]
        else:
            with pytest.raises(Forbidden):
                asyncio.run(check(caller))  # type: ignore[operator]
