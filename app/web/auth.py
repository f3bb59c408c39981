"""Web-UI accounts: password hashing, the session cookie, CSRF tokens, client addresses.

- Passwords are hashed with argon2id (OWASP's minimum parameters: 19 MiB, 2 passes, 1 lane,
  about 40-70 ms on a small machine, so a sign-in stays fast and a leaked hash stays costly).
  What a password must be is `app.kit.strength`.
- Every visitor holds one session cookie (`gauntlet_session`, HttpOnly, SameSite=Lax, Secure
  in production or over HTTPS), signed with the settings' secret key. It carries a random
  session id and whether it is signed in. A signed-in session id is a server-side session's
  token (`app.auth.sessions`): the server looks it up on every request, so signing out (or a
  password change) ends it even for copies of the cookie. A cookie whose signature does not
  verify is ignored, so a tampered cookie leaves the visitor signed out.
- A CSRF token is an HMAC of the session id: it is valid only with the cookie it was made for,
  and it changes on sign-in and sign-out (the session id is rotated then).
- Tenant admins sign in with an API key; a second cookie (`gauntlet_admin`, scoped to the
  tenant's admin pages) holds the token of a server-side admin session, which names the key.
  The key is checked again on each request, so revoking it ends the admin session at once;
  signing out deletes the session.
- Sign-in limits and lockouts are `app.auth.rate_limits`, counted per client address: the
  connection's peer, or the client a proxy in `GAUNTLET_TRUSTED_PROXIES` names.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from fastapi import Request
from itsdangerous import BadData, URLSafeTimedSerializer
from starlette.responses import Response

from app.auth import sessions
from app.auth.rate_limits import AccountLimits
from app.kit import strength
from app.kit.config import get_settings

SESSION_COOKIE = "gauntlet_session"
ADMIN_COOKIE = "gauntlet_admin"
SESSION_MAX_AGE_SECONDS = sessions.PARTICIPANT_SESSION_SECONDS
ADMIN_MAX_AGE_SECONDS = sessions.ADMIN_SESSION_SECONDS
MIN_PASSWORD_LENGTH = strength.MIN_PASSWORD_LENGTH
# Hashing cost grows with the input; a sign-in form is no place for megabyte passwords.
MAX_PASSWORD_LENGTH = strength.MAX_PASSWORD_LENGTH

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


def password_problem(password: str, handle: str = "") -> str | None:
    return strength.password_problem(password, handle)


# Session cookie -----------------------------------------------------------------------------


@dataclass
class WebSession:
    """The visitor's session. When `signed_in`, `session_id` is a server-side session's token.
    `changed` means the cookie must be sent (again)."""

    session_id: str
    signed_in: bool = False
    changed: bool = False

    @property
    def csrf_token(self) -> str:
        return csrf_token_for(self.session_id)

    @property
    def server_token(self) -> str | None:
        return self.session_id if self.signed_in else None

    def sign_in(self, token: str) -> None:
        # A new session id on sign-in: a session id planted before cannot be ridden after.
        self.session_id = token
        self.signed_in = True
        self.changed = True

    def sign_out(self) -> None:
        self.session_id = _new_session_id()
        self.signed_in = False
        self.changed = True


def _new_session_id() -> str:
    return sessions.new_token()


def _secret() -> str:
    return get_settings().resolved_secret_key


def _serializer(purpose: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(_secret(), salt=f"gauntlet.web.{purpose}")


def _token_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and 20 <= len(value) <= 100 else None


def _session_of_cookie(raw: str) -> WebSession | None:
    try:
        data = _serializer("session").loads(raw, max_age=SESSION_MAX_AGE_SECONDS)
    except BadData:
        return None
    if isinstance(data, dict):
        session_id = _token_or_none(data.get("sid"))
        if session_id is not None:
            return WebSession(session_id, signed_in=data.get("in") is True)
    return None


def load_session(request: Request) -> WebSession:
    """The session from the cookie, or a new anonymous one when it is missing or not genuine.
    (Whether a signed-in session is still live is the server's to say: `sessions`.)"""
    raw = request.cookies.get(SESSION_COOKIE)
    found = _session_of_cookie(raw) if raw else None
    return found if found is not None else WebSession(_new_session_id(), changed=True)


def signed_in_token(raw_cookie: str) -> str | None:
    """The server-side session token a genuine session cookie holds when it is signed in (not
    yet checked against the database)."""
    found = _session_of_cookie(raw_cookie)
    return None if found is None else found.server_token


def _secure(request: Request) -> bool:
    # Decided by the settings (on in production) or a TLS connection; X-Forwarded-Proto counts
    # only from a trusted proxy (uvicorn sets the scheme from it then).
    return get_settings().resolved_secure_cookies or request.url.scheme == "https"


def store_session(request: Request, response: Response, session: WebSession) -> None:
    if not session.changed:
        return
    payload = {"sid": session.session_id, "in": session.signed_in}
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


def admin_session_token(request: Request) -> str | None:
    """The token of the admin session the admin cookie names (not yet checked against the
    database: the caller must, on every request)."""
    raw = request.cookies.get(ADMIN_COOKIE)
    return admin_token_of_cookie(raw) if raw else None


def admin_token_of_cookie(raw: str) -> str | None:
    """The admin session token a genuine admin cookie holds (not yet checked against the
    database)."""
    try:
        data = _serializer("admin").loads(raw, max_age=ADMIN_MAX_AGE_SECONDS)
    except BadData:
        return None
    return _token_or_none(data.get("token")) if isinstance(data, dict) else None


def set_admin_cookie(request: Request, response: Response, tenant_slug: str, token: str) -> None:
    response.set_cookie(
        ADMIN_COOKIE,
        _serializer("admin").dumps({"token": token}),
        max_age=ADMIN_MAX_AGE_SECONDS,
        path=admin_cookie_path(tenant_slug),
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


def clear_admin_cookie(request: Request, response: Response, tenant_slug: str) -> None:
    response.delete_cookie(
        ADMIN_COOKIE,
        path=admin_cookie_path(tenant_slug),
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


# Platform admin cookie --------------------------------------------------------------------------

PLATFORM_COOKIE = "gauntlet_platform"
# The platform admin's pages; the cookie goes nowhere else (a tenant's pages never see it).
PLATFORM_PATH = "/admin"


def platform_session_token(request: Request) -> str | None:
    """The token of the platform admin session the cookie names (not yet checked against the
    database: the caller must, on every request)."""
    raw = request.cookies.get(PLATFORM_COOKIE)
    if not raw:
        return None
    try:
        data = _serializer("platform").loads(raw, max_age=ADMIN_MAX_AGE_SECONDS)
    except BadData:
        return None
    return _token_or_none(data.get("token")) if isinstance(data, dict) else None


def set_platform_cookie(request: Request, response: Response, token: str) -> None:
    response.set_cookie(
        PLATFORM_COOKIE,
        _serializer("platform").dumps({"token": token}),
        max_age=ADMIN_MAX_AGE_SECONDS,
        path=PLATFORM_PATH,
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


def clear_platform_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        PLATFORM_COOKIE,
        path=PLATFORM_PATH,
        httponly=True,
        samesite="lax",
        secure=_secure(request),
    )


# Rate limiting --------------------------------------------------------------------------------

limits = AccountLimits()


def client_address(request: Request) -> str:
    """The client's address for limits: the connection's peer, or, behind a proxy listed in
    `GAUNTLET_TRUSTED_PROXIES`, the client it names (uvicorn has replaced the peer with it).
    An IPv6 address counts as its /64 network, which one client usually holds whole."""
    host = request.client.host if request.client else "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
