"""Participant accounts of the web UI: signing up with a handle, a password and an email
address, signing in (with the sign-in limits and lockouts of `app.auth.rate_limits`),
changing the password or the address, confirming the address, resetting a forgotten password,
notification emails on or off, and the browser sessions they start and end. The mail itself
is `app.tenant.account_mail`'s."""

from __future__ import annotations

import uuid

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from app.auth import sessions
from app.auth.rate_limits import Refusal
from app.kit.errors import Conflict
from app.kit.schemas import Handle
from app.kit.unit_of_work import UnitOfWork
from app.tenant import account_mail
from app.tenant import service as tenants
from app.tenant.account_mail import EmailRefused
from app.tenant.models import EmailPolicy, Participant, Tenant
from app.tenant.quotas import QuotaReached
from app.web import auth
from app.web.forms import FormError

_HANDLE: TypeAdapter[str] = TypeAdapter(Handle)
HANDLE_RULES = "1 to 64 characters: letters, digits, '.', '_' or '-'"


def clean_handle(raw: str) -> str:
    try:
        return _HANDLE.validate_python(raw)
    except ValidationError as exc:
        raise FormError(f"Your handle must be {HANDLE_RULES}.", field="handle") from exc


def email_asked(tenant: Tenant) -> bool:
    """Whether the tenant's sign-up form requires an address."""
    return tenant.email_policy != EmailPolicy.OPTIONAL


def clean_email(tenant: Tenant, raw: str, field: str = "email") -> str | None:
    """The address typed (None: none, where the tenant allows it), normalised."""
    if not raw.strip():
        if email_asked(tenant):
            raise FormError(f"{tenant.name} asks for an email address.", field=field)
        return None
    try:
        return account_mail.normalized_email(raw)
    except EmailRefused as exc:
        raise FormError(str(exc), field=field) from None


def sign_up(
    work: UnitOfWork, tenant: Tenant, handle: str, password: str, email: str = ""
) -> Participant:
    """Creates a participant with a password, and an address if one is given (sent a link
    that confirms it).

    A handle already in use is refused, even one an API key created without a password:
    claiming it would take over that player's results. So is one differing only in case from a
    handle in use ('Alice' next to 'alice'), which would pass for the same player on a
    leaderboard.
    """
    handle = clean_handle(handle)
    address = clean_email(tenant, email)
    problem = auth.password_problem(password, handle)
    if problem:
        raise FormError(problem, field="password")
    try:
        participant = tenants.register_participant(
            work.session, tenant.id, handle, auth.hash_password(password)
        )
    except Conflict as exc:
        raise FormError(exc.message, field="handle", status_code=409) from exc
    except QuotaReached as exc:
        raise FormError(
            f"{tenant.name} takes no new accounts: it has as many participants as the "
            "platform allows it.",
            status_code=409,
        ) from exc
    if address is not None:
        account_mail.change_email(work, tenant, participant, address)
        auth.limits.confirmation_mailed(tenant.id, participant.id)
    return participant


def _refuse_if_limited(refusal: Refusal | None) -> None:
    if refusal is not None:
        raise FormError(
            refusal.message,
            status_code=429,
            headers={"Retry-After": str(refusal.retry_after_seconds)},
        )


def check_sign_up_allowed(address: str) -> None:
    _refuse_if_limited(auth.limits.check_sign_up(address))


def sign_in(
    session: Session, tenant_id: uuid.UUID, handle: str, password: str, address: str
) -> Participant:
    handle = handle.strip()
    _refuse_if_limited(auth.limits.check_sign_in(tenant_id, handle, address))
    participant = tenants.participant_by_handle(session, tenant_id, handle) if handle else None
    password_hash = participant.password_hash if participant is not None else None
    # One verification whatever the handle (a missing hash verifies a dummy one), so the time
    # an answer takes does not tell which handles exist.
    verified = auth.verify_password(password_hash, password)
    if participant is None or not verified:
        auth.limits.sign_in_failed(tenant_id, handle, address)
        raise FormError("Wrong handle or password.", status_code=401)
    auth.limits.sign_in_succeeded(tenant_id, handle, address)
    if password_hash is not None and auth.needs_rehash(password_hash):
        participant.password_hash = auth.hash_password(password)
        session.flush()
    return participant


def change_password(
    session: Session,
    tenant_id: uuid.UUID,
    participant: Participant,
    current_password: str,
    new_password: str,
    address: str,
) -> None:
    """Sets a new password after checking the current one (a stolen session alone must not
    change it) and ends every session of the participant; the caller starts a new one for
    this browser. Wrong current passwords count as failed sign-ins (lockout included)."""
    _refuse_if_limited(auth.limits.check_sign_in(tenant_id, participant.handle, address))
    if not auth.verify_password(participant.password_hash, current_password):
        auth.limits.sign_in_failed(tenant_id, participant.handle, address)
        raise FormError(
            "Your current password is not right.", field="current_password", status_code=401
        )
    problem = auth.password_problem(new_password, participant.handle)
    if problem:
        raise FormError(problem, field="new_password")
    if new_password == current_password:
        raise FormError("Your new password must differ from the current one.", field="new_password")
    participant.password_hash = auth.hash_password(new_password)
    session.flush()
    sessions.end_participant_sessions(session, tenant_id, participant.id)


def change_email(
    work: UnitOfWork,
    tenant: Tenant,
    participant: Participant,
    email: str,
    current_password: str,
    address: str,
) -> bool:
    """Gives the account another address (or none, where the tenant allows it) after checking
    the current password: a stolen session alone must not move the account's recovery to
    another mailbox. A wrong password counts as a failed sign-in. False when unchanged."""
    _refuse_if_limited(auth.limits.check_sign_in(tenant.id, participant.handle, address))
    new_address = clean_email(tenant, email)
    if not auth.verify_password(participant.password_hash, current_password):
        auth.limits.sign_in_failed(tenant.id, participant.handle, address)
        raise FormError(
            "Your current password is not right.", field="email_password", status_code=401
        )
    if new_address is not None:
        _refuse_if_limited(auth.limits.check_confirmation_mail(tenant.id, participant.id))
    try:
        changed = account_mail.change_email(work, tenant, participant, new_address)
    except EmailRefused as exc:
        raise FormError(str(exc), field="email") from None
    if changed and new_address is not None:
        auth.limits.confirmation_mailed(tenant.id, participant.id)
    return changed


def resend_confirmation(work: UnitOfWork, tenant: Tenant, participant: Participant) -> None:
    """Sends the account's unconfirmed address a new confirmation link (a few an hour)."""
    if participant.email is None:
        raise FormError("Add an email address first.", field="email")
    if participant.email_confirmed_at is not None:
        raise FormError("Your address is confirmed already.", status_code=409)
    _refuse_if_limited(auth.limits.check_confirmation_mail(tenant.id, participant.id))
    account_mail.send_confirmation(work, tenant, participant)
    auth.limits.confirmation_mailed(tenant.id, participant.id)


def request_password_reset(
    work: UnitOfWork, tenant: Tenant, handle_or_email: str, address: str
) -> None:
    """Sends a reset link to the confirmed address of each account the request names (by
    handle or address). The asker learns nothing: the answer is the same whether an account
    matched, had a confirmed address, or was sent a link (a few an hour per account, so a
    mailbox cannot be flooded with links)."""
    _refuse_if_limited(auth.limits.check_reset_request(address))
    auth.limits.reset_requested(address)
    for account in account_mail.reset_accounts(work.session, tenant, handle_or_email):
        if auth.limits.reset_mail_allowed(tenant.id, account.id):
            account_mail.send_password_reset(work, tenant, account)
            auth.limits.reset_mailed(tenant.id, account.id)


def reset_password(
    session: Session, tenant: Tenant, token: str, new_password: str, address: str
) -> Participant:
    """Sets a new password with a reset link (used up by it) and ends every session of the
    account; the caller starts one for this browser. An unknown, used or expired link counts
    as a failed sign-in of the address."""
    _refuse_if_limited(auth.limits.check_address(address))
    participant = account_mail.reset_pending(session, tenant, token)
    if participant is None:
        auth.limits.sign_in_failed(None, None, address)
        raise link_spent()
    problem = auth.password_problem(new_password, participant.handle)
    if problem:
        raise FormError(problem, field="new_password")
    reset = account_mail.reset_password(session, tenant, token, auth.hash_password(new_password))
    if reset is None:
        raise link_spent()
    auth.limits.sign_in_succeeded(tenant.id, reset.handle, address)
    return reset


def link_spent() -> FormError:
    return FormError(
        "This link does not work any more: it was used already, it expired, or it is not "
        "complete. Ask for a new one.",
        status_code=410,
    )


def confirmation_pending(session: Session, tenant: Tenant, token: str) -> Participant | None:
    return account_mail.confirmation_pending(session, tenant, token)


def confirm_email(session: Session, tenant: Tenant, token: str) -> Participant | None:
    return account_mail.confirm_email(session, tenant, token)


def reset_pending(session: Session, tenant: Tenant, token: str) -> Participant | None:
    return account_mail.reset_pending(session, tenant, token)


def unsubscribing(session: Session, tenant: Tenant, token: str) -> Participant | None:
    return account_mail.unsubscribing(session, tenant, token)


def set_notifications(session: Session, participant: Participant, on: bool) -> None:
    account_mail.set_notifications(session, participant, on)


def start_session(
    session: Session, web: auth.WebSession, tenant_id: uuid.UUID, participant_id: uuid.UUID
) -> str:
    """A new server-side session for the participant, ending the browser's previous one;
    returns its token. The caller commits, then signs the cookie in with it."""
    return sessions.start_participant_session(session, tenant_id, participant_id, web.server_token)


def end_session(session: Session, web: auth.WebSession) -> None:
    token = web.server_token
    if token is not None:
        sessions.end_session(session, token)
