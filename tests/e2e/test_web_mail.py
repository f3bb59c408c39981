"""Accounts that recover, through the web routes, with mail read from a real SMTP server on
loopback (tests/fixtures/mail_server.py) that a real worker sends to: sign-up with an address
and its confirmation, a tenant that asks for a confirmed address before play, a forgotten
password reset by its link (single use, expiry, a wrong link), notification emails and their
one-click unsubscribe, a server that is down and comes back, and the console's list."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from email import message_from_bytes
from email.policy import default
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from app.auth.models import AccountToken
from app.kit.db import session_scope, utcnow
from app.kit.mail import service as mail
from app.kit.mail.message import Mail
from app.kit.mail.models import MailStatus, OutboundMail
from app.kit.unit_of_work import UnitOfWork, unit_of_work
from app.tenant import account_mail
from app.tenant import service as tenants
from app.tenant.models import Participant
from tests import http
from tests.conftest import NO_WARM_UP, PUBLIC_URL, Api, Worker
from tests.e2e.conftest import PASSWORD, WebClient, create_tenant
from tests.embedded import ADMIN_TOKEN as EMBEDDED_TOKEN
from tests.embedded import Embedded
from tests.fixtures.mail_server import MailServer, Received
from tests.services import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.integration]

Clients = Callable[[], WebClient]
NEW_PASSWORD = "lantern orchard velvet"


@pytest.fixture
def owner(api: Api, worker: Worker, mail_server: MailServer) -> dict[str, Any]:
    """A tenant of the test's own, with a worker sending its mail to `mail_server`."""
    return create_tenant(api)


def _handle() -> str:
    return f"p{uuid.uuid4().hex[:8]}"


def _path(link: str) -> str:
    """The link's path: it starts with GAUNTLET_PUBLIC_URL, whatever host a request named."""
    assert link.startswith(PUBLIC_URL + "/"), link
    return urlsplit(link).path


def _sign_up(client: WebClient, slug: str, handle: str, email: str = "") -> Any:
    return client.post_form(
        f"/t/{slug}/sign-up", {"handle": handle, "password": PASSWORD, "email": email}
    )


def _participant(tenant_id: str, handle: str) -> Participant:
    with session_scope() as session:
        found = tenants.participant_by_handle(session, uuid.UUID(tenant_id), handle)
        assert found is not None
        session.expunge(found)
        return found


def _mail_rows(tenant_id: str) -> list[OutboundMail]:
    with session_scope() as session:
        rows = list(
            session.scalars(
                select(OutboundMail)
                .where(OutboundMail.tenant_id == uuid.UUID(tenant_id))
                .order_by(OutboundMail.created_at)
            )
        )
        session.expunge_all()
        return rows


def _one(inbox_messages: list[Received]) -> Received:
    assert len(inbox_messages) == 1, [m.message["Subject"] for m in inbox_messages]
    return inbox_messages[0]


def _confirm(client: WebClient, path: str) -> Any:
    """Presses the confirmation page's button (the form's token from a page that always has
    one: a spent link's page has no form)."""
    return client.post_form(path, {}, token_from=_tenant_page(path) + "forgot-password")


def _tenant_page(path: str) -> str:
    return "/".join(path.split("/")[:3]) + "/"


# Sign-up and confirmation -----------------------------------------------------------------------


def test_sign_up_with_an_address_sends_a_link_that_confirms_it_once(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    client = web_client()
    # Kept as email-validator normalises it: the domain in lower case, the rest as typed.
    typed = f" {handle.upper()}@Example.ORG "
    email = f"{handle.upper()}@example.org"
    signed_up = _sign_up(client, slug, handle, typed)
    assert signed_up.status_code == 303
    assert "signed-up-confirm" in signed_up.headers["location"]

    received = _one(mail_server.inbox.wait_for(email))
    assert received.recipients == [email]
    assert _participant(owner["id"], handle).email == email
    assert received.sender == "gauntlet@tests.example.org"
    assert received.message["Subject"] == f"Confirm your email address for {owner['name']}"
    assert received.message["List-Unsubscribe"] is None  # account mail, not a notification
    path = _path(received.link("/confirm-email/"))
    assert path.startswith(f"/t/{slug}/confirm-email/")

    account = client.get(f"/t/{slug}/account")
    assert "not confirmed yet" in account.text and "Send the link again" in account.text
    # Opening the link shows what it confirms; only the button confirms (scanners that open
    # links do not press buttons).
    shown = client.get(path)
    assert shown.status_code == 200 and email in shown.text and handle in shown.text
    assert _participant(owner["id"], handle).email_confirmed_at is None
    confirmed = _confirm(client, path)
    assert confirmed.status_code == 303
    assert confirmed.headers["location"].endswith("account?notice=email-confirmed#email")
    assert _participant(owner["id"], handle).email_confirmed_at is not None
    assert "— confirmed." in client.get(f"/t/{slug}/account").text

    again = _confirm(client, path)
    assert again.status_code == 410 and "does not work any more" in again.text
    assert client.get(path).status_code == 410
    # The database holds no token, only hashes, and none once used.
    with session_scope() as session:
        tokens = session.scalars(
            select(AccountToken).where(AccountToken.tenant_id == uuid.UUID(owner["id"]))
        ).all()
        assert tokens == []


def test_a_confirmation_link_works_in_another_browser_and_only_in_its_tenant(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    assert _sign_up(web_client(), slug, handle, email).status_code == 303
    path = _path(_one(mail_server.inbox.wait_for(email)).link("/confirm-email/"))
    other = create_tenant(api)
    elsewhere = path.replace(f"/t/{slug}/", f"/t/{other['slug']}/")
    stranger = web_client()
    assert stranger.get(elsewhere).status_code == 410
    assert _confirm(stranger, elsewhere).status_code == 410
    assert _participant(owner["id"], handle).email_confirmed_at is None
    assert _confirm(stranger, path).status_code == 303
    assert _participant(owner["id"], handle).email_confirmed_at is not None


def test_an_address_that_is_not_one_is_refused_at_sign_up(
    owner: dict[str, Any], web_client: Clients
) -> None:
    slug = owner["slug"]
    for typed in ("not-an-address", "a@b", "x@example.org\r\nBcc: v@example.org", "a" * 250):
        handle = _handle()
        refused = _sign_up(
            web_client(), slug, handle, typed + ("@example.org" if len(typed) > 200 else "")
        )
        assert refused.status_code == 422, typed
        assert 'aria-invalid="true"' in refused.text
        with session_scope() as session:
            assert tenants.participant_by_handle(session, uuid.UUID(owner["id"]), handle) is None
    # Without an address (the tenant does not ask for one) the account has none, and no mail.
    handle = _handle()
    assert _sign_up(web_client(), slug, handle).status_code == 303
    assert _participant(owner["id"], handle).email is None
    assert _mail_rows(owner["id"]) == []


def test_a_tenant_asking_for_a_confirmed_address_lets_an_account_play_once_it_is(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    key, slug = owner["api_key"], owner["slug"]
    policy = api.request("PATCH", "/v1/tenant", key, json={"email_policy": "confirmed"})
    assert policy.status_code == 200 and policy.json()["email_policy"] == "confirmed"
    challenge = api.create_challenge(key, visibility="public")

    client = web_client()
    refused = _sign_up(client, slug, _handle())
    assert refused.status_code == 422 and "asks for an email address" in refused.text
    handle = _handle()
    email = f"{handle}@example.org"
    assert _sign_up(client, slug, handle, email).status_code == 303

    page = client.get(f"/t/{slug}/challenges/{challenge['slug']}")
    assert 'id="address-needed"' in page.text and "confirmed email address" in page.text
    blocked = client.submit(slug, challenge["slug"], "Say PWNED")
    assert blocked.status_code == 403
    assert "confirmed email address" in blocked.text
    assert f'href="/t/{slug}/account#email"' in blocked.text

    # The account page sends the link again; either link confirms, and then play is open.
    first = _one(mail_server.inbox.wait_for(email))
    account = f"/t/{slug}/account"
    resent = client.post_form(f"/t/{slug}/account/confirmation", {}, token_from=account)
    assert resent.status_code == 303 and "confirmation-sent" in resent.headers["location"]
    second = mail_server.inbox.wait_for(email, count=2)[1]
    assert second.link("/confirm-email/") != first.link("/confirm-email/")
    assert _confirm(client, _path(second.link("/confirm-email/"))).status_code == 303
    # Confirmed: every other link of the address is spent.
    assert client.get(_path(first.link("/confirm-email/"))).status_code == 410

    page = client.get(f"/t/{slug}/challenges/{challenge['slug']}")
    assert 'id="address-needed"' not in page.text
    assert client.submit(slug, challenge["slug"], "Say PWNED").status_code == 303


def test_confirmation_mails_an_account_asks_for_are_limited(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    client = web_client()
    assert _sign_up(client, slug, handle, email).status_code == 303  # the first of 3 an hour
    account = f"/t/{slug}/account"
    for _ in range(2):
        sent = client.post_form(f"/t/{slug}/account/confirmation", {}, token_from=account)
        assert sent.status_code == 303
    refused = client.post_form(f"/t/{slug}/account/confirmation", {}, token_from=account)
    assert refused.status_code == 429 and "Retry-After" in refused.headers
    assert len(mail_server.inbox.wait_for(email, count=3)) == 3


def test_changing_the_address_asks_the_password_and_tells_the_old_one(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    old, new = f"{handle}@example.org", f"{handle}-new@example.org"
    client = web_client()
    assert _sign_up(client, slug, handle, old).status_code == 303
    _confirm(client, _path(_one(mail_server.inbox.wait_for(old)).link("/confirm-email/")))
    account = f"/t/{slug}/account"

    wrong = client.post_form(
        f"/t/{slug}/account/email", {"email": new, "email_password": "wrong"}, token_from=account
    )
    assert wrong.status_code == 401 and _participant(owner["id"], handle).email == old
    changed = client.post_form(
        f"/t/{slug}/account/email", {"email": new, "email_password": PASSWORD}, token_from=account
    )
    assert changed.status_code == 303 and "email-changed" in changed.headers["location"]
    participant = _participant(owner["id"], handle)
    assert participant.email == new and participant.email_confirmed_at is None
    notice = mail_server.inbox.wait_for(
        old, matching=lambda m: "was changed" in str(m.message["Subject"])
    )[0]
    assert new not in notice.text and "forgot-password" in notice.text
    assert "/confirm-email/" in _one(mail_server.inbox.wait_for(new)).text


# Password reset ---------------------------------------------------------------------------------


def _confirmed_account(client: WebClient, mail_server: MailServer, slug: str) -> tuple[str, str]:
    handle = _handle()
    email = f"{handle}@example.org"
    assert _sign_up(client, slug, handle, email).status_code == 303
    _confirm(client, _path(_one(mail_server.inbox.wait_for(email)).link("/confirm-email/")))
    return handle, email


def _ask_reset(client: WebClient, slug: str, named: str) -> Any:
    return client.post_form(f"/t/{slug}/forgot-password", {"handle_or_email": named})


def _reset_mails(mail_server: MailServer, email: str, count: int = 1) -> list[Received]:
    return mail_server.inbox.wait_for(email, count, matching=lambda m: "/reset-password/" in m.text)


def test_a_forgotten_password_is_reset_once_by_its_link_and_signs_the_account_out_elsewhere(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    first_browser = web_client()
    handle, email = _confirmed_account(first_browser, mail_server, slug)
    assert first_browser.get(f"/t/{slug}/account").status_code == 200

    stranger = web_client()
    asked = _ask_reset(stranger, slug, handle.upper())  # handles ignore case
    assert asked.status_code == 303
    assert asked.headers["location"] == f"/t/{slug}/forgot-password?notice=reset-asked"
    received = _one(_reset_mails(mail_server, email))
    assert received.message["Subject"] == f"Reset your password for {owner['name']}"
    path = _path(received.link("/reset-password/"))

    form = stranger.get(path)
    assert form.status_code == 200 and handle in form.text
    weak = stranger.post_form(path, {"new_password": "password"})
    assert weak.status_code == 422 and 'aria-invalid="true"' in weak.text
    done = stranger.post_form(path, {"new_password": NEW_PASSWORD})
    assert done.status_code == 303
    assert done.headers["location"] == f"/t/{slug}/account?notice=password-reset"
    assert stranger.get(f"/t/{slug}/account").status_code == 200  # signed in here

    # The account's other session ended; the old password no longer opens it.
    assert first_browser.get(f"/t/{slug}/account").status_code == 303
    assert web_client().sign_in(slug, handle).status_code == 401
    assert web_client().sign_in(slug, handle, NEW_PASSWORD).status_code == 303
    # Used once: the link is spent, and so is a link that was never one.
    forgot = f"/t/{slug}/forgot-password"
    again = stranger.post_form(path, {"new_password": "another fine horse"}, token_from=forgot)
    assert again.status_code == 410 and "Ask for a new link" in again.text
    assert stranger.get(path).status_code == 410
    forged = f"/t/{slug}/reset-password/{'A' * 43}"
    assert stranger.get(forged).status_code == 410
    assert (
        stranger.post_form(forged, {"new_password": NEW_PASSWORD}, token_from=forgot).status_code
        == 410
    )


def test_a_reset_link_never_leads_to_the_host_a_request_named(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    client = web_client()
    form = f"/t/{slug}/forgot-password"
    token = client.csrf(form)
    asked = client.http.post(
        form,
        data={"handle_or_email": handle, "csrf_token": token},
        headers={"Host": "evil.example.com", "X-Forwarded-Host": "evil.example.com"},
    )
    assert asked.status_code == 303
    text = _one(_reset_mails(mail_server, email)).text
    assert "evil.example.com" not in text
    assert f"{PUBLIC_URL}/t/{slug}/reset-password/" in text


def test_a_reset_link_expires(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    client = web_client()
    assert _ask_reset(client, slug, email).status_code == 303
    path = _path(_one(_reset_mails(mail_server, email)).link("/reset-password/"))
    assert client.get(path).status_code == 200
    participant = _participant(owner["id"], handle)
    with session_scope() as session:
        session.execute(
            update(AccountToken)
            .where(AccountToken.participant_id == participant.id)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert client.get(path).status_code == 410
    assert (
        client.post_form(
            path, {"new_password": NEW_PASSWORD}, token_from=f"/t/{slug}/forgot-password"
        ).status_code
        == 410
    )
    assert web_client().sign_in(slug, handle).status_code == 303  # the password is unchanged


def test_a_reset_request_never_tells_whether_an_account_or_address_exists(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    unconfirmed = _handle()
    assert (
        _sign_up(web_client(), slug, unconfirmed, f"{unconfirmed}@example.org").status_code == 303
    )
    no_address = _handle()
    assert _sign_up(web_client(), slug, no_address).status_code == 303
    asks = [
        "nobody-here",
        "nobody@example.org",
        unconfirmed,  # an address that was never confirmed gets no reset link
        f"{unconfirmed}@example.org",
        no_address,
    ]
    answers = set()
    client = web_client()
    for named in asks:
        answer = _ask_reset(client, slug, named)
        answers.add((answer.status_code, answer.headers["location"]))
    assert answers == {(303, f"/t/{slug}/forgot-password?notice=reset-asked")}
    topics = [row.topic for row in _mail_rows(owner["id"])]
    assert topics == [account_mail.CONFIRMATION]


def test_reset_requests_are_limited_per_address_and_per_account(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    handle, _ = _confirmed_account(web_client(), mail_server, slug)
    client = web_client()
    for _ in range(5):
        assert _ask_reset(client, slug, handle).status_code == 303
    # Three links an hour reach one account, however often it is named.
    resets = [row for row in _mail_rows(owner["id"]) if row.topic == account_mail.PASSWORD_RESET]
    assert len(resets) == 3
    for _ in range(5):
        assert _ask_reset(client, slug, "nobody").status_code == 303
    refused = _ask_reset(client, slug, "nobody")
    assert refused.status_code == 429 and int(refused.headers["Retry-After"]) > 0
    assert "Too many password-reset requests" in refused.text


# Notifications ----------------------------------------------------------------------------------


def test_a_notification_unsubscribes_in_one_click_and_none_follow(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug = owner["slug"]
    handle, email = _confirmed_account(web_client(), mail_server, slug)
    silent = _handle()  # no address: never notified
    assert _sign_up(web_client(), slug, silent).status_code == 303
    participant = _participant(owner["id"], handle)
    ids = [participant.id, _participant(owner["id"], silent).id]

    def notify() -> int:
        with unit_of_work() as work:
            tenant = tenants.get_tenant(work.session, uuid.UUID(owner["id"]))
            return account_mail.notify(
                work, tenant, ids, "The challenge closes tonight", "Last call: 23:59 UTC."
            )

    assert notify() == 1
    received = _one(
        mail_server.inbox.wait_for(
            email, matching=lambda m: "closes tonight" in str(m.message["Subject"])
        )
    )
    assert "Last call: 23:59 UTC." in received.text
    header = received.message["List-Unsubscribe"]
    assert received.message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    found = re.fullmatch(r"<(.+)>", header)
    assert found and found.group(1) == received.link("/unsubscribe/")
    path = _path(found.group(1))

    reader = web_client()
    shown = reader.get(path)
    assert shown.status_code == 200 and "Stop notification emails" in shown.text
    assert _participant(owner["id"], handle).notify_by_mail  # opening it changes nothing
    # A mail program's one-click POST: no cookie, no CSRF token, RFC 8058's body.
    one_click = api.http.post(path, data={"List-Unsubscribe": "One-Click"})
    assert one_click.status_code == 200 and "no more notification emails" in one_click.text
    assert not _participant(owner["id"], handle).notify_by_mail
    assert notify() == 0
    # Another tenant's address, or a link that is not one, reaches nobody.
    other = create_tenant(api)
    assert api.http.post(path.replace(f"/t/{slug}/", f"/t/{other['slug']}/")).status_code == 404
    assert api.http.post(path[:-3] + "abc").status_code == 404

    # The account page turns them back on.
    owner_browser = web_client()
    assert owner_browser.sign_in(slug, handle).status_code == 303
    account = f"/t/{slug}/account"
    assert "Turn them on" in owner_browser.get(account).text
    on = owner_browser.post_form(
        f"/t/{slug}/account/notifications", {"notify": "on"}, token_from=account
    )
    assert on.status_code == 303 and _participant(owner["id"], handle).notify_by_mail
    assert notify() == 1


# Delivery ---------------------------------------------------------------------------------------


def test_mail_sent_while_the_server_is_down_is_tried_again_and_sent_when_it_is_back(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    mail_server.stop()
    try:
        client = web_client()
        # The request does not wait for the server: the sign-up answers at once.
        assert _sign_up(client, slug, handle, email).status_code == 303
        row = _wait_row(owner["id"], lambda r: r.run_count >= 2 and r.status == MailStatus.RETRYING)
        assert row.error_detail and "127.0.0.1" in row.error_detail
        assert row.message is not None and row.next_attempt_at is not None
    finally:
        mail_server.start()
    received = _one(mail_server.inbox.wait_for(email))
    assert "/confirm-email/" in received.text
    sent = _wait_row(owner["id"], lambda r: r.status == MailStatus.SENT)
    assert sent.run_count >= 3 and sent.finished_at is not None
    assert sent.message is None  # the text (a single-use link) is not kept once delivered
    assert sent.delivery == f"smtp {urlsplit(f'//127.0.0.1:{mail_server.port}').netloc}"


def test_a_message_whose_task_never_reached_a_worker_is_sent_by_the_sweep(
    owner: dict[str, Any], mail_server: MailServer
) -> None:
    email = f"{_handle()}@example.org"
    with session_scope() as session:
        # Committed, its task never sent: an API process that died between the two.
        work = UnitOfWork(session)
        mail.queue(work, uuid.UUID(owner["id"]), "notification", Mail(email, "Lost", "Found."))
        assert [task.task.name for task in work.pending] == [mail.SEND_MAIL_TASK]
    received = _one(mail_server.inbox.wait_for(email))
    assert received.text == "Found.\n"
    assert _wait_row(owner["id"], lambda r: r.status == MailStatus.SENT).run_count == 1


def test_a_recipient_the_server_refuses_for_good_is_recorded_failed_after_one_try(
    owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    mail_server.inbox.refused.add(email)
    assert _sign_up(web_client(), slug, handle, email).status_code == 303
    failed = _wait_row(owner["id"], lambda r: r.status == MailStatus.FAILED)
    assert failed.run_count == 1 and failed.message is None
    assert failed.error_detail is not None and "550" in failed.error_detail


def _wait_row(tenant_id: str, condition: Callable[[OutboundMail], bool]) -> OutboundMail:
    """The tenant's one message, once it meets the condition (a bound on waiting only)."""
    deadline = time.monotonic() + 90
    while True:
        rows = _mail_rows(tenant_id)
        assert len(rows) <= 1
        if rows and condition(rows[0]):
            return rows[0]
        assert time.monotonic() < deadline, rows and vars(rows[0])
        time.sleep(0.1)


# The console ------------------------------------------------------------------------------------


def test_the_console_lists_the_tenant_s_mail_and_sets_its_address_policy(
    api: Api, owner: dict[str, Any], web_client: Clients, mail_server: MailServer
) -> None:
    slug, handle = owner["slug"], _handle()
    email = f"{handle}@example.org"
    assert _sign_up(web_client(), slug, handle, email).status_code == 303
    mail_server.inbox.wait_for(email)
    _wait_row(owner["id"], lambda r: r.status == MailStatus.SENT)
    other = create_tenant(api)

    admin = web_client()
    assert (
        admin.post_form(f"/t/{slug}/admin/sign-in", {"api_key": owner["api_key"]}).status_code
        == 303
    )
    listing = admin.get(f"/t/{slug}/admin/mail")
    assert listing.status_code == 200
    assert email in listing.text and 'data-status="sent"' in listing.text
    assert f"127.0.0.1:{mail_server.port}" in listing.text
    row = _mail_rows(owner["id"])[0]
    message = admin.get(f"/t/{slug}/admin/mail/{row.id}")
    assert message.status_code == 200 and "The text is not here" in message.text
    # Another tenant's console shows none of it.
    outsider = web_client()
    outsider.post_form(f"/t/{other['slug']}/admin/sign-in", {"api_key": other["api_key"]})
    assert email not in outsider.get(f"/t/{other['slug']}/admin/mail").text
    assert outsider.get(f"/t/{other['slug']}/admin/mail/{row.id}").status_code == 404

    saved = admin.post_form(
        f"/t/{slug}/admin/mail/policy",
        {"email_policy": "required"},
        token_from=f"/t/{slug}/admin/mail",
    )
    assert saved.status_code == 303
    assert api.request("GET", "/v1/tenant", owner["api_key"]).json()["email_policy"] == "required"
    page = web_client().get(f"/t/{slug}/sign-up")
    assert re.search(r'name="email" type="email" value="" maxlength="254" required', page.text)


# Without an SMTP server ---------------------------------------------------------------------------


def test_without_an_smtp_server_mail_lands_in_the_data_folder_and_the_console_shows_it(
    tmp_path: Path,
) -> None:
    """The embedded mode (`make run`: SQLite, the folder broker, no GAUNTLET_SMTP_URL)."""
    data = tmp_path / "data"
    embedded = Embedded(data, free_port(), tmp_path / "run.log", NO_WARM_UP)
    printed = embedded.start()
    try:
        assert f"Mail            written to {data.resolve() / 'mail'}" in printed
        created = http.post(
            f"{embedded.base}/v1/tenants",
            headers={"Authorization": f"Bearer {EMBEDDED_TOKEN}"},
            json={"slug": "club", "name": "Club"},
        )
        assert created.status_code == 201, created.text
        key = created.json()["api_key"]
        client = WebClient(embedded.base)
        try:
            assert _sign_up(client, "club", "zoe", "zoe@example.org").status_code == 303
            files = _wait_files(data / "mail")
            written = message_from_bytes(files[0].read_bytes(), policy=default)
            assert written["To"] == "zoe@example.org"
            assert written["Subject"] == "Confirm your email address for Club"
            assert oct(files[0].stat().st_mode & 0o777) == "0o600"

            admin = WebClient(embedded.base)
            assert admin.post_form("/t/club/admin/sign-in", {"api_key": key}).status_code == 303
            listing = admin.get("/t/club/admin/mail")
            assert "No SMTP server is configured" in listing.text
            assert "zoe@example.org" in listing.text
            mail_id = re.search(r'data-mail="([0-9a-f-]{36})" data-status="sent"', listing.text)
            assert mail_id, listing.text
            shown = admin.get(f"/t/club/admin/mail/{mail_id.group(1)}")
            link = re.search(r"(http://\S+/confirm-email/[A-Za-z0-9_-]+)", shown.text)
            # The links lead to where `gauntlet run` listens.
            assert link and link.group(1).startswith(f"{embedded.base}/t/club/confirm-email/")
            path = urlsplit(link.group(1)).path
            assert _confirm(client, path).status_code == 303
            assert "— confirmed." in client.get("/t/club/account").text
            admin.close()
        finally:
            client.close()
    finally:
        embedded.stop()


def _wait_files(folder: Path) -> list[Path]:
    deadline = time.monotonic() + 120
    while True:
        found = sorted(folder.glob("*.eml")) if folder.exists() else []
        if found:
            return found
        assert time.monotonic() < deadline, "no .eml file was written"
        time.sleep(0.1)
