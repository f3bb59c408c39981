"""The platform admin's pages: who may see them (a browser signed in with the platform admin
token, checked against the database on every request), and what their forms send."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.requests import Request

from app.auth import platform_sessions
from app.auth.service import authenticate
from app.auth.subjects import PlatformAdmin
from app.auth.tenant_access import TenantClosed
from app.hosting.schemas import QuotasUpdate
from app.kit.errors import Unauthorized
from app.tenant import service as tenants
from app.web import auth
from app.web.forms import FormError
from app.web.rendering import Answer, not_found, redirect
from app.web.visitors import require_csrf

SIGN_IN = "/admin/sign-in"
TENANTS_PAGE_SIZE = 50
QUOTA_FIELDS = ("max_challenges", "max_participants", "max_attempts_per_day")
BUDGET_FIELD = "daily_cost_budget_usd"


@dataclass(frozen=True)
class PlatformVisit:
    """A visit of a browser signed in as the platform admin, who reads across tenants as
    `admin`."""

    request: Request
    web: auth.WebSession
    admin: PlatformAdmin


def signed_in(request: Request, session: Session) -> bool:
    token = auth.platform_session_token(request)
    return token is not None and platform_sessions.is_live(session, token)


def platform_visit(request: Request, session: Session) -> PlatformVisit:
    """What every platform admin page starts with: a browser without a live platform admin
    session is sent to the sign-in page (`Answer`)."""
    web = auth.load_session(request)
    if not signed_in(request, session):
        response = redirect(request, web, SIGN_IN)
        if request.cookies.get(auth.PLATFORM_COOKIE):
            auth.clear_platform_cookie(request, response)
        raise Answer(response)
    return PlatformVisit(request, web, PlatformAdmin())


def platform_form(request: Request, session: Session, csrf_token: str) -> PlatformVisit:
    """What every platform admin form starts with: the CSRF check, then 404 without a live
    platform admin session (the form is not there for anyone else)."""
    web = auth.load_session(request)
    require_csrf(web, csrf_token)
    if not signed_in(request, session):
        raise not_found()
    return PlatformVisit(request, web, PlatformAdmin())


def check_token(session: Session, typed: str, address: str) -> None:
    """The sign-in's check: the platform admin token, or `FormError` saying what was typed
    and which credential opens these pages (failures count against the address, as a tenant
    admin's do)."""
    refusal = auth.limits.check_address(address)
    if refusal is not None:
        raise FormError(
            refusal.message,
            status_code=429,
            headers={"Retry-After": str(refusal.retry_after_seconds)},
        )
    typed = typed.strip()
    if platform_sessions.is_admin_token(typed):
        return
    auth.limits.sign_in_failed(None, None, address)
    opens = (
        "This page opens with the platform admin token (GAUNTLET_ADMIN_TOKEN; `make run` "
        "prints it as the “Admin token”)."
    )
    try:
        caller = authenticate(session, typed)
    except (Unauthorized, TenantClosed):
        caller = None
    if caller is not None and not isinstance(caller, PlatformAdmin):
        slug = tenants.get_tenant(session, caller.tenant_id).slug
        raise FormError(
            f"That is an API key of the tenant {slug}: it opens that tenant's console, "
            f"/t/{slug}/admin, not the platform admin page. " + opens,
            status_code=401,
        )
    raise FormError("That is not the platform admin token. " + opens, status_code=401)


def _number(raw: str, field: str, *, whole: bool) -> int | float | None:
    text = raw.strip()
    if not text:
        return None
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        kind = "a whole number" if whole else "a number of dollars"
        raise FormError(f"Write {kind}, or leave it blank for no quota.", field=field) from None
    if not math.isfinite(value) or value < 0:
        raise FormError("A quota is 0 or more; blank for no quota.", field=field)
    return value


def quotas_from_form(form: dict[str, str]) -> QuotasUpdate:
    """The quota form as the API's body: every quota given (blank: none)."""
    values: dict[str, int | float | None] = {
        name: _number(form.get(name, ""), name, whole=True) for name in QUOTA_FIELDS
    }
    values[BUDGET_FIELD] = _number(form.get(BUDGET_FIELD, ""), BUDGET_FIELD, whole=False)
    try:
        return QuotasUpdate.model_validate(values)
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise FormError(f"{problem['msg']}.", field=str(problem["loc"][0])) from None
