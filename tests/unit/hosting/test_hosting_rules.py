"""The pure rules of self-serve hosting: the address a name gives, what an organizer may
type as a name and an address, the policy each mode starts with, the platform admin's quota
form, and what a console's sign-in says of a credential that does not open it."""

from __future__ import annotations

import uuid

import pytest

from app.auth.subjects import PlatformAdmin, TenantAdmin, TenantMember
from app.auth.tenant_access import TenantClosed, TenantStatus, refuse_unless_active
from app.hosting.service import checked_name, checked_slug, slug_from_name
from app.kit.config import Settings
from app.kit.errors import ValidationFailed
from app.tenant.models import Tenant
from app.web.admin.service import wrong_console_credential
from app.web.forms import FormError
from app.web.platform.service import quotas_from_form


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("Acme Prompt Night", "acme-prompt-night"),
        ("  Ünïcode — Café 2026!  ", "unicode-cafe-2026"),
        ("a--b__c", "a-b-c"),
        ("日本語", ""),
        ("!!!", ""),
        ("", ""),
        ("x" * 70, "x" * 64),
        ("a" * 63 + " b", "a" * 63),
    ],
)
def test_a_name_gives_an_address_of_its_letters_and_digits(name: str, slug: str) -> None:
    made = slug_from_name(name)
    assert made == slug
    assert len(made) <= 64 and not made.startswith("-") and not made.endswith("-")


def test_an_address_is_the_one_typed_or_the_names_and_must_be_one() -> None:
    assert checked_slug("", "Acme Night") == "acme-night"
    assert checked_slug("  my-event ", "Acme Night") == "my-event"
    for typed, name in (("Not A Slug", "x"), ("-edge", "x"), ("a" * 65, "x"), ("", "日本語")):
        with pytest.raises(ValidationFailed) as refused:
            checked_slug(typed, name)
        assert refused.value.details[0]["loc"] == ["body", "slug"]
    assert checked_name("  Acme  ") == "Acme"
    for name in ("", "   ", "n" * 201):
        with pytest.raises(ValidationFailed) as refused:
            checked_name(name)
        assert refused.value.details[0]["loc"] == ["body", "name"]


def test_sign_ups_are_open_in_embedded_mode_and_wait_for_approval_in_production() -> None:
    assert Settings(_env_file=None, mode="embedded").resolved_tenant_signup == "open"  # type: ignore[call-arg]
    production = Settings.model_construct(mode="production", tenant_signup=None)
    assert production.resolved_tenant_signup == "approval"
    chosen = Settings(_env_file=None, tenant_signup="closed")  # type: ignore[call-arg]
    assert chosen.resolved_tenant_signup == "closed"
    with pytest.raises(ValueError):
        Settings(_env_file=None, tenant_signup="anyone")  # type: ignore[call-arg]


def test_only_an_active_tenant_opens_and_a_closed_one_says_why() -> None:
    refuse_unless_active(TenantStatus.ACTIVE)
    with pytest.raises(TenantClosed) as suspended:
        refuse_unless_active(TenantStatus.SUSPENDED, "Acme")
    assert (suspended.value.code, suspended.value.status_code) == ("tenant_suspended", 403)
    assert suspended.value.message.startswith("Acme is suspended by the platform admin")
    with pytest.raises(TenantClosed) as pending:
        refuse_unless_active(TenantStatus.PENDING)
    assert pending.value.code == "tenant_pending"
    assert "waiting for the platform admin's approval" in pending.value.message


def test_the_quota_form_is_the_apis_body_with_blanks_for_no_quota() -> None:
    quotas = quotas_from_form(
        {
            "max_challenges": " 3 ",
            "max_participants": "",
            "max_attempts_per_day": "0",
            "daily_cost_budget_usd": "2.5",
        }
    )
    assert quotas.model_dump() == {
        "max_challenges": 3,
        "max_participants": None,
        "max_attempts_per_day": 0,
        "daily_cost_budget_usd": 2.5,
    }
    # Every quota is given: a blank one removes it.
    assert quotas.model_fields_set == {
        "max_challenges",
        "max_participants",
        "max_attempts_per_day",
        "daily_cost_budget_usd",
    }
    for field, typed in (
        ("max_challenges", "3.5"),
        ("max_participants", "-1"),
        ("daily_cost_budget_usd", "nan"),
        ("daily_cost_budget_usd", "inf"),
        ("max_attempts_per_day", "10" * 20),
    ):
        with pytest.raises(FormError) as refused:
            quotas_from_form({field: typed})
        assert refused.value.field == field, typed


def test_a_console_sign_in_says_which_credential_opens_it() -> None:
    tenant = Tenant(id=uuid.uuid4(), slug="acme", name="Acme")
    other = uuid.uuid4()
    platform = wrong_console_credential(PlatformAdmin(), tenant)
    assert platform.startswith("This is the platform admin's token: it opens the platform admin")
    assert "/admin" in platform and "admin API keys" in platform
    member = wrong_console_credential(TenantMember(tenant.id, uuid.uuid4()), tenant)
    assert member.startswith("This is a member key of Acme")
    for caller in (None, TenantAdmin(other, uuid.uuid4()), TenantMember(other, uuid.uuid4())):
        said = wrong_console_credential(caller, tenant)
        assert said.startswith("This is not a valid admin API key of Acme.")
        assert "/t/acme/sign-in" in said
