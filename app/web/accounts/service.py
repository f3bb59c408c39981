"""Participant accounts of the web UI: signing up with a handle and a password, signing in
(with the sign-in limits and lockouts of `app.auth.rate_limits`), changing the password, and
the browser sessions they start and end."""

from __future__ import annotations

import uuid

from pydantic import TypeAdapter, ValidationError
from sqlalchemy.orm import Session

from app.auth import sessions
from app.auth.rate_limits import Refusal
from app.errors import Conflict
from app.schemas import Handle
from app.tenant import service as tenants
from app.tenant.models import Participant
from app.web import auth
from app.web.forms import FormError

_HANDLE: TypeAdapter[str] = TypeAdapter(Handle)
HANDLE_RULES = "1 to 64 characters: letters, digits, '.', '_' or '-'"


def clean_handle(raw: str) -> str:
    try:
        return _HANDLE.validate_python(raw)
    except ValidationError as exc:
        raise FormError(f"Your handle must be {HANDLE_RULES}.", field="handle") from exc


def sign_up(session: Session, tenant_id: uuid.UUID, handle: str, password: str) -> Participant:
    """Creates a participant with a password.

    A handle already in use is refused, even one an API key created without a password:
    claiming it would take over that player's results. So is one differing only in case from a
    handle in use ('Alice' next to 'alice'), which would pass for the same player on a
    leaderboard.
    """
    handle = clean_handle(handle)
    problem = auth.password_problem(password, handle)
    if problem:
        raise FormError(problem, field="password")
    try:
        return tenants.register_participant(
            session, tenant_id, handle, auth.hash_password(password)
        )
    except Conflict as exc:
        raise FormError(exc.message, field="handle", status_code=409) from exc


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
