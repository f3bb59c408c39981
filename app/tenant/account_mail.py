"""Participants' email addresses and the mail their accounts get: an address's confirmation, a
password reset, a notice when the address changes, and notifications with an unsubscribe.

- An address is checked as typed with `email-validator` (syntax and normalisation; no DNS
  look-up, which would put a network call in a request). Addresses are not unique: one
  person may hold several handles.
- Account mail other than an address's own confirmation goes only to a **confirmed** address
  (its link was opened): an address typed wrong at sign-up, never confirmed, receives no
  reset link, so a stranger who owns that address cannot take the account over.
- Links start with `GAUNTLET_PUBLIC_URL`, never with the Host header of the request that
  caused the mail: a request naming another host cannot have a reset link pointed at it.
- The secrets of confirmation and reset links are single-use and expire (app.auth.
  account_tokens). An unsubscribe link is not a secret to keep: it carries the account's ids
  signed with `GAUNTLET_SECRET_KEY` (nothing is stored), never expires, and can do one thing,
  turn the account's notification emails off.

Who is notified of what (announcements, a challenge closing, a board revealed) is the
callers'; `notify` sends one message to each of the given participants who gets them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from email_validator import EmailNotValidError, validate_email
from itsdangerous import BadData, URLSafeSerializer
from sqlalchemy.orm import Session

from app.auth import account_tokens
from app.auth.models import TokenPurpose
from app.auth.sessions import end_participant_sessions
from app.kit.config import get_settings
from app.kit.db import utcnow
from app.kit.mail import service as mail
from app.kit.mail.message import Mail
from app.kit.unit_of_work import UnitOfWork
from app.tenant.models import EmailPolicy, Participant, Tenant
from app.tenant.repository import ParticipantRepository

MAX_EMAIL_CHARS = 254
# Accounts one reset request asked by address may reach (one person, a few handles).
RESET_ACCOUNTS_PER_ADDRESS = 5
# What the messages are, in the outbox (the console shows it).
CONFIRMATION = "email_confirmation"
PASSWORD_RESET = "password_reset"
ADDRESS_CHANGED = "email_changed"
NOTIFICATION = "notification"


class EmailRefused(ValueError):
    """An address that cannot be used; the message says why, to the person who typed it."""


def normalized_email(raw: str) -> str:
    """The address as it is kept (domain lower-cased, international domains in ASCII);
    `EmailRefused` saying what is wrong with it."""
    typed = raw.strip()
    if len(typed) > MAX_EMAIL_CHARS:
        raise EmailRefused(f"An email address has at most {MAX_EMAIL_CHARS} characters.")
    try:
        checked = validate_email(typed, check_deliverability=False, allow_smtputf8=False)
    except EmailNotValidError as exc:
        raise EmailRefused(f"That is not an email address we can send to: {exc}") from None
    return checked.ascii_email or checked.normalized


def _link(tenant: Tenant, path: str) -> str:
    return f"{get_settings().resolved_public_url}/t/{tenant.slug}/{path}"


def _greeting(participant: Participant) -> str:
    return f"Hello {participant.handle},"


# Confirmation -----------------------------------------------------------------------------------


def send_confirmation(work: UnitOfWork, tenant: Tenant, participant: Participant) -> None:
    """Sends the participant's address a link that confirms it (after this transaction
    commits)."""
    email = participant.email
    if email is None:
        raise EmailRefused("There is no address to confirm.")
    token = account_tokens.issue(
        work.session, tenant.id, participant.id, TokenPurpose.CONFIRM_EMAIL, email
    )
    lifetime = account_tokens.LIFETIMES[TokenPurpose.CONFIRM_EMAIL].days
    text = "\n".join(
        [
            _greeting(participant),
            "",
            f"Open this link to confirm that {email} is the address of your account "
            f"{participant.handle} of {tenant.name}:",
            "",
            _link(tenant, f"confirm-email/{token}"),
            "",
            f"The link works once, within {lifetime} days. If you did not sign up or add this "
            "address, ignore this message: nothing changes without the link.",
        ]
    )
    subject = f"Confirm your email address for {tenant.name}"
    mail.queue(work, tenant.id, CONFIRMATION, Mail(email, subject, text))


def confirmation_pending(session: Session, tenant: Tenant, token: str) -> Participant | None:
    """The account a confirmation link is for, if the link is still good (not used up)."""
    used = account_tokens.live(session, tenant.id, TokenPurpose.CONFIRM_EMAIL, token)
    if used is None:
        return None
    participant = ParticipantRepository(session, tenant.id).get(used.participant_id)
    if participant is None or (participant.email or "").lower() != used.email.lower():
        return None
    return participant


def confirm_email(session: Session, tenant: Tenant, token: str) -> Participant | None:
    """Confirms the address the link was sent to, using the link up; the account, or None
    when the link is unknown, used, expired, or for an address the account no longer has."""
    used = account_tokens.take(session, tenant.id, TokenPurpose.CONFIRM_EMAIL, token)
    if used is None:
        return None
    participant = ParticipantRepository(session, tenant.id).get(used.participant_id)
    if participant is None or (participant.email or "").lower() != used.email.lower():
        return None
    if participant.email_confirmed_at is None:
        participant.email_confirmed_at = utcnow()
    account_tokens.revoke(session, tenant.id, participant.id, TokenPurpose.CONFIRM_EMAIL)
    session.flush()
    return participant


def change_email(
    work: UnitOfWork, tenant: Tenant, participant: Participant, email: str | None
) -> bool:
    """Gives the account this address (None: none), unconfirmed, and sends it a confirmation
    link; the old address, if it was confirmed, is told. Links sent before (confirmation,
    reset) stop working. False when the address is the one the account has."""
    if (email or "").lower() == (participant.email or "").lower():
        return False
    if email is None and tenant.email_policy != EmailPolicy.OPTIONAL:
        raise EmailRefused(f"{tenant.name} asks every account for an email address.")
    previous = participant.confirmed_email
    participant.email = email
    participant.email_confirmed_at = None
    for purpose in TokenPurpose:
        account_tokens.revoke(work.session, tenant.id, participant.id, purpose)
    work.session.flush()
    if email is not None:
        send_confirmation(work, tenant, participant)
    if previous is not None:
        text = "\n".join(
            [
                _greeting(participant),
                "",
                f"The email address of your account {participant.handle} of {tenant.name} "
                f"was changed: it is no longer {previous}.",
                "",
                "If you did not change it, sign in and change your password, or ask for a "
                "password reset:",
                "",
                _link(tenant, "forgot-password"),
            ]
        )
        subject = f"Your email address for {tenant.name} was changed"
        mail.queue(work, tenant.id, ADDRESS_CHANGED, Mail(previous, subject, text))
    return True


# Password reset ---------------------------------------------------------------------------------


def reset_accounts(session: Session, tenant: Tenant, handle_or_email: str) -> list[Participant]:
    """The accounts a reset request names, by handle or by address, that can get a link: web
    accounts with a confirmed address. (The asker is never told which, or whether any.)"""
    named = handle_or_email.strip()
    participants = ParticipantRepository(session, tenant.id)
    if not named or len(named) > MAX_EMAIL_CHARS:
        return []
    if "@" in named:
        return participants.accounts_with_confirmed_email(named, RESET_ACCOUNTS_PER_ADDRESS)
    account = participants.get_by_handle(named)
    if account is None or account.password_hash is None or account.confirmed_email is None:
        return []
    return [account]


def send_password_reset(work: UnitOfWork, tenant: Tenant, participant: Participant) -> None:
    """Sends the account's confirmed address a link to choose a new password."""
    email = participant.confirmed_email
    if email is None:
        raise EmailRefused("A reset link goes only to a confirmed address.")
    token = account_tokens.issue(
        work.session, tenant.id, participant.id, TokenPurpose.RESET_PASSWORD, email
    )
    minutes = int(account_tokens.LIFETIMES[TokenPurpose.RESET_PASSWORD].total_seconds() // 60)
    text = "\n".join(
        [
            _greeting(participant),
            "",
            f"Someone, you we hope, asked to reset the password of your account "
            f"{participant.handle} of {tenant.name}. Open this link to choose a new one:",
            "",
            _link(tenant, f"reset-password/{token}"),
            "",
            f"The link works once, within {minutes} minutes. A new password signs the account "
            "out everywhere. If you did not ask, ignore this message: your password stays as "
            "it is.",
        ]
    )
    subject = f"Reset your password for {tenant.name}"
    mail.queue(work, tenant.id, PASSWORD_RESET, Mail(email, subject, text))


def reset_pending(session: Session, tenant: Tenant, token: str) -> Participant | None:
    """The account a reset link is for, if the link is still good (not used up)."""
    used = account_tokens.live(session, tenant.id, TokenPurpose.RESET_PASSWORD, token)
    if used is None:
        return None
    return ParticipantRepository(session, tenant.id).get(used.participant_id)


def reset_password(
    session: Session, tenant: Tenant, token: str, password_hash: str
) -> Participant | None:
    """Sets the account's new password (hashed by the caller) with the reset link, using the
    link up, and ends every session of the account; None when the link is unknown, used or
    expired. Every other reset link of the account stops working."""
    used = account_tokens.take(session, tenant.id, TokenPurpose.RESET_PASSWORD, token)
    if used is None:
        return None
    participant = ParticipantRepository(session, tenant.id).get(used.participant_id)
    if participant is None or participant.password_hash is None:
        return None
    participant.password_hash = password_hash
    account_tokens.revoke(session, tenant.id, participant.id, TokenPurpose.RESET_PASSWORD)
    session.flush()
    end_participant_sessions(session, tenant.id, participant.id)
    return participant


# Notifications ----------------------------------------------------------------------------------


def _unsubscribe_signer() -> URLSafeSerializer:
    return URLSafeSerializer(get_settings().resolved_secret_key, salt="gauntlet.mail.unsubscribe")


def unsubscribe_url(tenant: Tenant, participant: Participant) -> str:
    token = _unsubscribe_signer().dumps([participant.tenant_id.hex, participant.id.hex])
    return _link(tenant, f"unsubscribe/{token}")


def unsubscribing(session: Session, tenant: Tenant, token: str) -> Participant | None:
    """The account an unsubscribe link of this tenant is for; None for a link that is not
    one of this service's, or whose account is gone."""
    if len(token) > 200:
        return None
    try:
        ids = _unsubscribe_signer().loads(token)
        tenant_id, participant_id = (uuid.UUID(hex=value) for value in ids)
    except (BadData, AttributeError, TypeError, ValueError):
        return None
    if tenant_id != tenant.id:
        return None
    return ParticipantRepository(session, tenant.id).get(participant_id)


def set_notifications(session: Session, participant: Participant, on: bool) -> None:
    participant.notify_by_mail = on
    session.flush()


def notify(
    work: UnitOfWork,
    tenant: Tenant,
    participant_ids: Iterable[uuid.UUID],
    subject: str,
    text: str,
) -> int:
    """Sends the message to each of the participants who gets notification emails (a
    confirmed address, not turned off), with the link that turns them off, in the text and
    as the one-click unsubscribe of mail programs; returns how many messages were queued."""
    reached = ParticipantRepository(work.session, tenant.id).notified(list(set(participant_ids)))
    for participant in reached:
        email = participant.confirmed_email
        if email is None:
            continue
        link = unsubscribe_url(tenant, participant)
        footer = (
            f"You get this as {participant.handle} of {tenant.name}. "
            f"No more notification emails: {link}"
        )
        body = f"{text.rstrip()}\n\n-- \n{footer}\n"
        mail.queue(work, tenant.id, NOTIFICATION, Mail(email, subject, body, link))
    return len(reached)


# Play -----------------------------------------------------------------------------------------


def play_problem(tenant: Tenant, participant: Participant) -> str | None:
    """What the tenant's address policy still asks of the account before it plays; None
    when nothing."""
    if tenant.email_policy == EmailPolicy.OPTIONAL:
        return None
    if participant.email is None:
        return (
            f"{tenant.name} asks for an email address before you play: add one on your "
            "account page."
        )
    if tenant.email_policy == EmailPolicy.CONFIRMED and participant.email_confirmed_at is None:
        return (
            f"{tenant.name} asks for a confirmed email address before you play: open the link "
            f"we sent to {participant.email}. Your account page sends it again."
        )
    return None
