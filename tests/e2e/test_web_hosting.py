"""Self-serve hosting through the web routes: an organizer's sign-up ("Host a challenge") under
each policy (`open`: the console at once with its first key; `approval`: a pending tenant,
closed until a platform admin approves it, the approval mailed through a real SMTP server;
`closed`: the platform admin alone), its form's refusals and its limit per address; the
platform admin's pages (only its token opens them); suspension closing a tenant's pages,
sessions and console; quotas set there shown on the tenant's console; and the console's
sign-in saying which credential opens it."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from app.kit.config import get_settings
from app.kit.db import session_scope
from app.tenant import service as tenants
from tests.conftest import ADMIN_TOKEN, PUBLIC_URL, Api, Worker
from tests.e2e.conftest import PASSWORD, WebClient, create_tenant
from tests.fixtures.mail_server import MailServer

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Clients = Callable[[], WebClient]
_KEY = re.compile(r'id="first-admin-key">(gk_[A-Za-z0-9_-]+)<')


@pytest.fixture
def policy(api_url: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Sets GAUNTLET_TENANT_SIGNUP for the test (the API server runs in this process and
    reads the settings on each request)."""

    def set_policy(value: str) -> None:
        monkeypatch.setattr(get_settings(), "tenant_signup", value)

    return set_policy


def _organizer(**given: str) -> dict[str, str]:
    unique = uuid.uuid4().hex[:8]
    fields = {
        "name": f"Prompt Night {unique}",
        "slug": "",
        "handle": f"org{unique}",
        "email": f"org{unique}@example.org",
        "password": PASSWORD,
    }
    fields.update(given)
    return fields


def _host(client: WebClient, fields: dict[str, str]) -> Any:
    return client.post_form("/host", fields)


def _platform(web_client: Clients) -> WebClient:
    """A browser signed in to the platform admin's pages."""
    client = web_client()
    signed_in = client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN})
    assert signed_in.status_code == 303, signed_in.text
    assert signed_in.headers["location"] == "/admin?notice=signed-in"
    return client


def _tenant_id(slug: str) -> str:
    with session_scope() as session:
        found = tenants.tenant_by_slug(session, slug)
        assert found is not None
        return str(found.id)


def test_under_open_an_organizer_lands_signed_in_on_the_new_console_with_its_key_once(
    api: Api, policy: Callable[[str], None], web_client: Clients
) -> None:
    policy("open")
    client = web_client()
    home = client.get("/")
    assert 'href="/host"' in home.text and "Host a challenge" in home.text
    form = client.get("/host")
    assert form.status_code == 200 and "Create my event" in form.text
    unique = uuid.uuid4().hex[:8]
    fields = _organizer(name=f"Ünïcode Prompt Night {unique}!")
    landed = _host(client, fields)
    assert landed.status_code == 201, landed.text
    # The address is made from the name when left blank.
    slug = f"unicode-prompt-night-{unique}"
    assert f"/t/{slug}/admin/challenges/new" in landed.text
    assert "Your event is ready, and this is its console" in landed.text
    assert fields["handle"] in landed.text
    found = _KEY.search(landed.text)
    assert found, landed.text
    key = found.group(1)

    # The key is the tenant's first admin key; the tenant is active.
    own = api.request("GET", "/v1/tenant", key)
    assert own.status_code == 200 and (own.json()["slug"], own.json()["status"]) == (
        slug,
        "active",
    )
    # Shown once: the console, opened again, is the organizer's (an account with the admin
    # role) and shows the key's prefix at most.
    console = client.get(f"/t/{slug}/admin")
    assert console.status_code == 200
    assert "an account with the admin role" in console.text and key not in console.text
    listed = api.request("GET", "/v1/participants", key).json()["items"]
    assert [p["handle"] for p in listed] == [fields["handle"]]
    # Another organizer cannot take the address.
    taken = _host(web_client(), _organizer(name=f"Unicode prompt night {unique}"))
    assert taken.status_code == 409 and 'aria-invalid="true"' in taken.text
    assert f"The address /t/{slug}/ is taken: choose another." in taken.text


def test_a_sign_up_with_a_mistake_is_shown_again_beside_its_field_and_makes_nothing(
    policy: Callable[[str], None], web_client: Clients
) -> None:
    policy("open")
    client = web_client()
    cases = [
        ({"name": "   "}, "name", 422),
        ({"slug": "Not A Slug"}, "slug", 422),
        ({"name": "!!!", "slug": ""}, "slug", 422),
        ({"handle": "no spaces please"}, "handle", 422),
        ({"email": ""}, "email", 422),
        ({"email": "not-an-address"}, "email", 422),
        ({"password": "password1"}, "password", 422),
    ]
    for given, field, status in cases:
        fields = _organizer(**given)
        refused = _host(client, fields)
        assert refused.status_code == status, (given, refused.text)
        assert re.search(rf'id="{field}" name="{field}"[^>]*aria-invalid="true"', refused.text), (
            given
        )
        # What was typed comes back, but the password.
        assert fields["handle"] in refused.text or field == "handle"
        assert PASSWORD not in refused.text
    with session_scope() as session:
        assert tenants.tenant_by_slug(session, "not-a-slug") is None


def test_under_approval_the_tenant_stays_closed_until_approved_and_its_organizer_is_mailed(
    api: Api,
    policy: Callable[[str], None],
    web_client: Clients,
    worker: Worker,
    mail_server: MailServer,
) -> None:
    policy("approval")
    client = web_client()
    assert "Ask for my event" in client.get("/host").text
    fields = _organizer(slug=f"ask-{uuid.uuid4().hex[:8]}")
    slug, email = fields["slug"], fields["email"]
    asked = _host(client, fields)
    assert asked.status_code == 303, asked.text
    assert asked.headers["location"] == f"/host/{slug}?notice=host-requested"
    waiting = client.get(asked.headers["location"])
    assert waiting.status_code == 200
    assert "Waiting for approval" in waiting.text and "not confirmed yet" in waiting.text
    # Nothing of it opens meanwhile, to anyone.
    for path in (f"/t/{slug}/", f"/t/{slug}/admin", f"/t/{slug}/sign-up", f"/t/{slug}/account"):
        for who in (client, web_client()):
            closed = who.get(path)
            assert closed.status_code == 403, path
            assert "Waiting for approval" in closed.text and f'href="/host/{slug}"' in closed.text

    tenant_id = _tenant_id(slug)
    pending = api.request("GET", "/v1/tenants?status=pending&limit=200", ADMIN_TOKEN).json()
    (listed,) = [item for item in pending["items"] if item["slug"] == slug]
    assert listed["organizers"][0]["email"] == email
    assert listed["organizers"][0]["email_confirmed"] is False
    # Not before the organizer's address is confirmed: the approval is mailed there.
    early = api.request("PATCH", f"/v1/tenants/{tenant_id}", ADMIN_TOKEN, json={"status": "active"})
    assert early.status_code == 409
    assert early.json()["error"]["code"] == "organizer_unconfirmed"

    # The organizer may have the link sent again from the request's page; nobody else may.
    resent = client.post_form(f"/host/{slug}/confirmation", {}, token_from=f"/host/{slug}")
    assert resent.status_code == 303
    assert resent.headers["location"] == f"/host/{slug}?notice=confirmation-sent"
    stranger = web_client()
    refused = stranger.post_form(f"/host/{slug}/confirmation", {}, token_from="/admin/sign-in")
    assert refused.status_code == 404
    confirmations = mail_server.inbox.wait_for(email, count=2)
    assert len(confirmations) == 2
    link = confirmations[-1].link("/confirm-email/")
    assert link.startswith(PUBLIC_URL)
    path = urlsplit(link).path
    assert client.get(path).status_code == 200
    confirmed = client.post_form(path, {})
    assert confirmed.status_code == 303
    assert confirmed.headers["location"] == f"/host/{slug}?notice=email-confirmed-request"
    assert (
        "the platform admin can approve your request now"
        in client.get(confirmed.headers["location"]).text
    )

    admin = _platform(web_client)
    shown = admin.get("/admin?status=pending")
    assert f'data-tenant="{slug}"' in shown.text
    page = admin.get(f"/admin/tenants/{tenant_id}")
    assert "Waiting for approval" in page.text and "Approve" in page.text
    approved = admin.post_form(
        f"/admin/tenants/{tenant_id}/status",
        {"status": "active"},
        token_from=f"/admin/tenants/{tenant_id}",
    )
    assert approved.status_code == 303
    assert approved.headers["location"].endswith("?notice=approved")

    (mailed,) = mail_server.inbox.wait_for(
        email, matching=lambda m: "is approved" in str(m.message["Subject"])
    )
    assert mailed.message["Subject"] == f"{fields['name']} is approved"
    assert urlsplit(mailed.link("/admin")).path == f"/t/{slug}/admin"
    assert fields["handle"] in mailed.text
    # The organizer's session, started at sign-up, opens the console now.
    console = client.get(f"/t/{slug}/admin")
    assert console.status_code == 200 and fields["handle"] in console.text
    assert "first-admin-key" not in console.text
    assert client.get(f"/host/{slug}").text.count(f"{fields['name']} is open") == 1


def test_under_closed_only_the_platform_admin_makes_tenants(
    api: Api, policy: Callable[[str], None], web_client: Clients
) -> None:
    policy("closed")
    client = web_client()
    assert 'href="/host"' not in client.get("/").text
    page = client.get("/host")
    assert page.status_code == 200 and "ask its operator" in page.text
    assert "<form" not in page.text.split("<main", 1)[1]
    fields = _organizer(slug=f"closed-{uuid.uuid4().hex[:8]}")
    refused = client.post_form("/host", fields, token_from="/admin/sign-in")
    assert refused.status_code == 403
    with session_scope() as session:
        assert tenants.tenant_by_slug(session, fields["slug"]) is None
    assert create_tenant(api)["api_key"].startswith("gk_")


def test_new_tenants_from_one_address_are_limited(
    policy: Callable[[str], None], web_client: Clients
) -> None:
    policy("open")
    client = web_client()
    for _ in range(5):
        assert _host(client, _organizer()).status_code == 201
    refused = _host(client, _organizer())
    assert refused.status_code == 429
    assert "Too many new events from your network" in refused.text
    assert int(refused.headers["Retry-After"]) > 0


def test_the_platform_admin_pages_open_with_the_platform_token_only(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    anonymous = web_client()
    to_sign_in = anonymous.get("/admin")
    assert to_sign_in.status_code == 303 and to_sign_in.headers["location"] == "/admin/sign-in"
    # A tenant's admin key, signed in to its console, opens nothing here.
    tenant_admin = web_client()
    signed_in = tenant_admin.post_form(
        f"/t/{tenant['slug']}/admin/sign-in", {"api_key": tenant["api_key"]}
    )
    assert signed_in.status_code == 303
    assert tenant_admin.get("/admin").status_code == 303
    typed_key = tenant_admin.post_form("/admin/sign-in", {"admin_token": tenant["api_key"]})
    assert typed_key.status_code == 401
    assert f"an API key of the tenant {tenant['slug']}" in typed_key.text
    assert f"/t/{tenant['slug']}/admin" in typed_key.text
    wrong = anonymous.post_form("/admin/sign-in", {"admin_token": "gadm_" + "x" * 40})
    assert wrong.status_code == 401 and "not the platform admin token" in wrong.text
    # Its forms are not there for anyone else.
    tenant_id = tenant["id"]
    token = tenant_admin.csrf("/admin/sign-in")
    for path, data in (
        (f"/admin/tenants/{tenant_id}/status", {"status": "suspended"}),
        (f"/admin/tenants/{tenant_id}/quotas", {"max_challenges": "1"}),
    ):
        response = tenant_admin.post_form(path, {**data, "csrf_token": token})
        assert response.status_code == 404, path
    assert api.request("GET", f"/v1/tenants/{tenant_id}", ADMIN_TOKEN).json()["status"] == "active"

    admin = _platform(web_client)
    listed = admin.get("/admin")
    assert listed.status_code == 200 and f'data-tenant="{tenant["slug"]}"' in listed.text
    # Signing out ends the session on the server: a copy of the cookie opens nothing.
    copied = dict(admin.http.cookies)
    signed_out = admin.post_form("/admin/sign-out", {}, token_from="/admin")
    assert signed_out.status_code == 303
    replay = web_client()
    for name, value in copied.items():
        replay.http.cookies.set(name, value)
    assert replay.get("/admin").status_code == 303


def test_a_suspended_tenant_closes_its_pages_sessions_and_console_and_resumes_as_it_was(
    api: Api, web_client: Clients, worker: Worker
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    challenge = api.create_challenge(key, visibility="public")
    player = web_client()
    assert player.sign_up(slug, "ann").status_code == 303
    assert player.submit(slug, challenge["slug"], "PWNED").status_code == 303
    organizer = web_client()
    assert organizer.post_form(f"/t/{slug}/admin/sign-in", {"api_key": key}).status_code == 303
    challenge_page = f"/t/{slug}/challenges/{challenge['slug']}"
    assert player.get(challenge_page).status_code == 200

    admin = _platform(web_client)
    suspended = admin.post_form(
        f"/admin/tenants/{tenant['id']}/status",
        {"status": "suspended"},
        token_from=f"/admin/tenants/{tenant['id']}",
    )
    assert suspended.headers["location"].endswith("?notice=suspended")
    for who, path in (
        (player, challenge_page),
        (player, f"/t/{slug}/account"),
        (organizer, f"/t/{slug}/admin"),
        (web_client(), f"/t/{slug}/"),
        (web_client(), f"/t/{slug}/sign-in"),
    ):
        closed = who.get(path)
        assert closed.status_code == 403, path
        assert f"{slug} is suspended" in closed.text and "its data is kept" in closed.text
    assert f"/t/{slug}/" not in web_client().get("/").text
    assert api.request("GET", "/v1/challenges", key).json()["error"]["code"] == ("tenant_suspended")
    page = admin.get(f"/admin/tenants/{tenant['id']}")
    assert "Resume" in page.text and 'data-status="suspended"' in page.text

    resumed = admin.post_form(
        f"/admin/tenants/{tenant['id']}/status",
        {"status": "active"},
        token_from=f"/admin/tenants/{tenant['id']}",
    )
    assert resumed.headers["location"].endswith("?notice=resumed")
    # The same sessions, the same data.
    assert player.get(challenge_page).status_code == 200
    assert organizer.get(f"/t/{slug}/admin").status_code == 200
    attempts = api.request("GET", f"/v1/challenges/{challenge['id']}/attempts", key).json()
    assert [item["participant"] for item in attempts["items"]] == ["ann"]


def test_quotas_set_on_the_platform_page_are_shown_on_the_tenants_console(
    api: Api, web_client: Clients
) -> None:
    tenant = create_tenant(api)
    key, slug = tenant["api_key"], tenant["slug"]
    api.create_challenge(key)
    organizer = web_client()
    organizer.post_form(f"/t/{slug}/admin/sign-in", {"api_key": key})
    assert "has set no quota" in organizer.get(f"/t/{slug}/admin").text

    admin = _platform(web_client)
    page = f"/admin/tenants/{tenant['id']}"
    wrong = admin.post_form(f"{page}/quotas", {"max_challenges": "many"}, token_from=page)
    assert wrong.status_code == 422 and "Write a whole number" in wrong.text
    assert 'id="max_challenges" name="max_challenges"' in wrong.text
    saved = admin.post_form(
        f"{page}/quotas",
        {
            "max_challenges": "1",
            "max_participants": "50",
            "max_attempts_per_day": "",
            "daily_cost_budget_usd": "2.5",
        },
        token_from=page,
    )
    assert saved.status_code == 303 and saved.headers["location"].endswith("?notice=quotas-saved")
    quotas = api.request("GET", f"/v1/tenants/{tenant['id']}", ADMIN_TOKEN).json()["quotas"]
    assert quotas == {
        "max_challenges": 1,
        "max_participants": 50,
        "max_attempts_per_day": None,
        "daily_cost_budget_usd": 2.5,
    }
    console = organizer.get(f"/t/{slug}/admin").text
    card = console.split('id="quotas"', 1)[1].split("</section>", 1)[0]
    assert re.search(
        r'data-quota="max_challenges">.*?<td class="num">1</td><td class="num">1<', card
    )
    assert re.search(r'data-quota="max_participants">.*?<td class="num">50<', card)
    assert "this tenant&#39;s own" in card
    assert "of the daily budget of $2.50" in console


def test_the_console_sign_in_says_which_credential_opens_it(api: Api, web_client: Clients) -> None:
    tenant = create_tenant(api, name="Acme")
    slug = tenant["slug"]
    member = api.request(
        "POST", "/v1/api-keys", tenant["api_key"], json={"name": "m", "role": "member"}
    ).json()["key"]
    other = create_tenant(api)
    client = web_client()
    sign_in = f"/t/{slug}/admin/sign-in"
    platform = client.post_form(sign_in, {"api_key": ADMIN_TOKEN})
    assert platform.status_code == 401
    assert "This is the platform admin&#39;s token" in platform.text
    assert "/admin" in platform.text and "admin API keys" in platform.text
    as_member = client.post_form(sign_in, {"api_key": member})
    assert as_member.status_code == 401 and "This is a member key of Acme" in as_member.text
    elsewhere = client.post_form(sign_in, {"api_key": other["api_key"]})
    assert elsewhere.status_code == 401
    assert "This is not a valid admin API key of Acme" in elsewhere.text
    assert f"/t/{slug}/sign-in" in elsewhere.text
