"""Web-UI accounts: password hashing, the session cookie, CSRF tokens and sign-in rate limits.

- Passwords are hashed with argon2id (OWASP's minimum parameters: 19 MiB, 2 passes, 1 lane,
  about 40-70 ms on a small machine, so a sign-in stays fast and a leaked hash stays costly).
- Every visitor holds one session cookie (`gauntlet_session`, HttpOnly, SameSite=Lax, Secure on
  HTTPS), signed with the settings' secret key. It carries a random session id and, once signed
  in, the tenant and participant ids. A cookie whose signature does not verify is ignored, so
  a tampered cookie leaves the visitor signed out. The participant is read again from the
  database on each request.
- A CSRF token is an HMAC of the session id: it is valid only with the cookie it was made for,
  and it changes on sign-in and sign-out (the session id is rotated then).
- Tenant admins sign in with an API key; a second signed cookie (`gauntlet_admin`, scoped to
  the tenant's admin pages) holds the key's id, and the key is checked again on each request,
  so revoking it ends the admin session at once.
- Failed sign-ins are counted in memory per (tenant, handle) and per client IP; over the limit,
  sign-in is refused with a message saying when to try again. Counters live in one process:
  with several server processes each counts on its own (the limits are per process).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import threading
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from fastapi import Request
from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.responses import Response

from app.config import get_settings

SESSION_COOKIE = "gauntlet_session"
ADMIN_COOKIE = "gauntlet_admin"
SESSION_MAX_AGE_SECONDS = 14 * 24 * 3600
ADMIN_MAX_AGE_SECONDS = 12 * 3600
MIN_PASSWORD_LENGTH = 8
# Hashing cost grows with the input; a sign-in form is no place for megabyte passwords.
MAX_PASSWORD_LENGTH = 256

_hasher = PasswordHasher(time_cost=2, memory_cost=19_456, parallelism=1)
# Verified when the handle does not exist, so a sign-in takes as long either way and the
# response time does not tell which handles exist.
_DUMMY_HASH = _hasher.hash(secrets.token_urlsafe(16))


# Passwords ----------------------------------------------------------------------------------


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def verify_password(password_hash: str | None, password: str) -> bool:
    """True when the password matches; a missing or unreadable hash never matches."""
    try:
        if password_hash is None:
            _hasher.verify(_DUMMY_HASH, password)
            return False
        return _hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str) -> bool:
    return _hasher.check_needs_rehash(password_hash)


def password_problem(password: str) -> str | None:
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"Your password must be at least {MIN_PASSWORD_LENGTH} characters long."
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"Your password must be at most {MAX_PASSWORD_LENGTH} characters long."
    return None


# Session cookie -----------------------------------------------------------------------------


@dataclass
class WebSession:
    """The visitor's session. `changed` means the cookie must be sent (again)."""

    session_id: str
    tenant_id: uuid.UUID | None = None
    participant_id: uuid.UUID | None = None
    changed: bool = False

    @property
    def csrf_token(self) -> str:
        return csrf_token_for(self.session_id)

    def sign_in(self, tenant_id: uuid.UUID, participant_id: uuid.UUID) -> None:
        # A new session id on sign-in: a session id planted before cannot be ridden after.
        self.session_id = _new_session_id()
        self.tenant_id = tenant_id
        self.participant_id = participant_id
        self.changed = True

    def sign_out(self) -> None:
        self.session_id = _new_session_id()
        self.tenant_id = None
        self.participant_id = None
        self.changed = True


def _new_session_id() -> str:
    return secrets.token_hex(16)


def _secret() -> str:
    return get_settings().resolved_secret_key


def _serializer(purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_secret(), salt=f"gauntlet.web.{purpose}")


def _uuid_or_none(value: Any) -> uuid.UUID | None:
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def load_session(request: Request) -> WebSession:
    """The session from the cookie, or a new anonymous one when it is missing or not genuine."""
    raw = request.cookies.get(SESSION_COOKIE)
    if raw:
        try:
            data = _serializer("session").loads(raw, max_age=SESSION_MAX_AGE_SECONDS)
        except BadData:
            data = None
        if isinstance(data, dict):
            session_id = data.get("sid")
            if isinstance(session_id, str) and len(session_id) == 32:
                tenant_id = _uuid_or_none(data.get("tenant"))
                participant_id = _uuid_or_none(data.get("participant"))
                if tenant_id is None or participant_id is None:
                    tenant_id = participant_id = None
                return WebSession(session_id, tenant_id, participant_id)
    return WebSession(_new_session_id(), changed=True)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def store_session(request: Request, response: Response, session: WebSession) -> None:
    if not session.changed:
        return
    payload = {
        "sid": session.session_id,
        "tenant": str(session.tenant_id) if session.tenant_id else None,
        "participant": str(session.participant_id) if session.participant_id else None,
    }
    response.set_cookie(
        SESSION_COOKIE,
        _serializer("session").dumps(payload),
        max_age=SESSION_MAX_AGE_SECONDS,
        path="/",
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


# CSRF -----------------------------------------------------------------------------------------


def csrf_token_for(session_id: str) -> str:
    key = hashlib.sha256(f"gauntlet.web.csrf|{_secret()}".encode()).digest()
    return hmac.new(key, session_id.encode(), hashlib.sha256).hexdigest()


def csrf_valid(session: WebSession, token: str) -> bool:
    # Bytes, not str: compare_digest refuses non-ASCII strings, and a forged token may hold any.
    return bool(token) and hmac.compare_digest(
        session.csrf_token.encode(), token.encode("utf-8", "surrogateescape")
    )


# Admin cookie ---------------------------------------------------------------------------------


def admin_cookie_path(tenant_slug: str) -> str:
    return f"/t/{tenant_slug}/admin"


def admin_key_id(request: Request, tenant_id: uuid.UUID) -> uuid.UUID | None:
    """The API key id the admin cookie names for this tenant (not yet checked against the
    database: the caller must, on every request)."""
    raw = request.cookies.get(ADMIN_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer("admin").loads(raw, max_age=ADMIN_MAX_AGE_SECONDS)
    except BadData:
        return None
    if not isinstance(data, dict) or _uuid_or_none(data.get("tenant")) != tenant_id:
        return None
    return _uuid_or_none(data.get("key"))


def set_admin_cookie(
    request: Request,
    response: Response,
    tenant_slug: str,
    tenant_id: uuid.UUID,
    key_id: uuid.UUID,
) -> None:
    response.set_cookie(
        ADMIN_COOKIE,
        _serializer("admin").dumps({"tenant": str(tenant_id), "key": str(key_id)}),
        max_age=ADMIN_MAX_AGE_SECONDS,
        path=admin_cookie_path(tenant_slug),
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


def clear_admin_cookie(response: Response, tenant_slug: str) -> None:
    response.delete_cookie(
        ADMIN_COOKIE, path=admin_cookie_path(tenant_slug), httponly=True, samesite="lax"
    )


# Rate limiting --------------------------------------------------------------------------------


class SlidingWindowCounter:
    """Counts events per key over the last `window_seconds`. Thread-safe, bounded in memory:
    past `max_keys` keys, the least recently used ones are forgotten."""

    def __init__(self, limit: int, window_seconds: float, max_keys: int = 100_000) -> None:
        self.limit = limit
        self.window_seconds = window_seconds
        self.max_keys = max_keys
        self._events: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _prune(self, key: str, now: float) -> deque[float] | None:
        events = self._events.get(key)
        if events is None:
            return None
        while events and events[0] <= now - self.window_seconds:
            events.popleft()
        if not events:
            del self._events[key]
            return None
        return events

    def retry_after(self, key: str, now: float | None = None) -> float | None:
        """Seconds until the key is allowed again, or None when it is allowed now."""
        now = time.monotonic() if now is None else now
        with self._lock:
            events = self._prune(key, now)
            if events is None or len(events) < self.limit:
                return None
            return max(events[-self.limit] + self.window_seconds - now, 0.0)

    def add(self, key: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            events = self._prune(key, now)
            if events is None:
                events = self._events[key] = deque(maxlen=self.limit)
            events.append(now)
            self._events.move_to_end(key)
            while len(self._events) > self.max_keys:
                self._events.popitem(last=False)

    def clear(self, key: str | None = None) -> None:
        with self._lock:
            if key is None:
                self._events.clear()
            else:
                self._events.pop(key, None)


def _minutes(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    return "1 minute" if minutes == 1 else f"{minutes} minutes"


@dataclass(frozen=True)
class Refusal:
    message: str
    retry_after_seconds: int


class SignInLimits:
    """Failed sign-ins per (tenant, handle) stop guessing one account's password; failed
    sign-ins per client IP stop one client trying many handles; sign-ups per client IP stop
    one client creating accounts (and hashing passwords) in bulk."""

    def __init__(
        self,
        *,
        failures_per_account: int = 5,
        failures_per_client: int = 30,
        sign_ups_per_client: int = 30,
        window_seconds: float = 15 * 60,
    ) -> None:
        self.per_account = SlidingWindowCounter(failures_per_account, window_seconds)
        self.per_client = SlidingWindowCounter(failures_per_client, window_seconds)
        self.sign_ups = SlidingWindowCounter(sign_ups_per_client, window_seconds)

    @staticmethod
    def _account(tenant_id: uuid.UUID, handle: str) -> str:
        # Case-folded, so 'Alice' and 'alice' share one budget of guesses.
        return f"{tenant_id}:{handle.casefold()}"

    def check_sign_in(self, tenant_id: uuid.UUID, handle: str, client: str) -> Refusal | None:
        wait = self.per_client.retry_after(client)
        if wait is not None:
            return Refusal(
                "Too many failed sign-in attempts from your network. "
                f"Try again in {_minutes(wait)}.",
                math.ceil(wait),
            )
        wait = self.per_account.retry_after(self._account(tenant_id, handle))
        if wait is not None:
            return Refusal(
                f"Too many failed sign-in attempts for this handle. Try again in {_minutes(wait)}.",
                math.ceil(wait),
            )
        return None

    def sign_in_failed(self, tenant_id: uuid.UUID | None, handle: str | None, client: str) -> None:
        self.per_client.add(client)
        if tenant_id is not None and handle is not None:
            self.per_account.add(self._account(tenant_id, handle))

    def sign_in_succeeded(self, tenant_id: uuid.UUID, handle: str) -> None:
        self.per_account.clear(self._account(tenant_id, handle))

    def check_client(self, client: str) -> Refusal | None:
        """For the admin sign-in: only the per-client budget applies (keys have no handle)."""
        wait = self.per_client.retry_after(client)
        if wait is None:
            return None
        return Refusal(
            f"Too many failed sign-in attempts from your network. Try again in {_minutes(wait)}.",
            math.ceil(wait),
        )

    def check_sign_up(self, client: str) -> Refusal | None:
        wait = self.sign_ups.retry_after(client)
        if wait is None:
            return None
        return Refusal(
            f"Too many new accounts from your network. Try again in {_minutes(wait)}.",
            math.ceil(wait),
        )

    def signed_up(self, client: str) -> None:
        self.sign_ups.add(client)

    def reset(self) -> None:
        for counter in (self.per_account, self.per_client, self.sign_ups):
            counter.clear()


limits = SignInLimits()


def client_address(request: Request) -> str:
    """The client's IP as the server sees it. Behind a reverse proxy, run uvicorn with
    `--proxy-headers --forwarded-allow-ips=<proxy>` so this is the real client, not the proxy."""
    return request.client.host if request.client else "unknown"
