"""Host a challenge: an organizer's sign-up (`/host`), which makes a tenant as the operator's
policy says and signs the organizer in; under `open` the answer is the new tenant's console,
with its first admin key shown this once; under `approval`, the request's page
(`/host/{tenant}`), which says it waits for a platform admin and lets the organizer send the
link that confirms the address again."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.auth.subjects import TenantAdmin
from app.auth.tenant_access import TenantStatus
from app.hosting import service as hosting
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.web import auth
from app.web.accounts import service as accounts
from app.web.admin.router import dashboard
from app.web.admin.visits import AdminAccess, AdminVisit
from app.web.forms import FormError
from app.web.hosting import service
from app.web.rendering import HtmlRoute, form_page, not_found, redirect
from app.web.visitors import CsrfField, host_request_url, require_csrf, signed_in_participant
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


def _host_page(
    request: Request,
    web: auth.WebSession,
    *,
    error: FormError | None = None,
    typed: dict[str, str] | None = None,
) -> Response:
    return form_page(
        request,
        web,
        "host.html",
        error,
        title="Host a challenge · Gauntlet",
        policy=hosting.signup_policy(),
        typed=typed or {},
        handle_rules=accounts.HANDLE_RULES,
        slug_rules=hosting.SLUG_RULES,
        min_password=auth.MIN_PASSWORD_LENGTH,
    )


@router.get("/host")
def host_form(request: Request) -> Response:
    return _host_page(request, auth.load_session(request))


@router.post("/host")
def host(
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    name: Annotated[str, Form()] = "",
    slug: Annotated[str, Form()] = "",
    handle: Annotated[str, Form()] = "",
    email: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
) -> Response:
    """Makes the tenant and signs its organizer in: the console (with the first admin key)
    when it is open at once, the request's page when it waits for approval."""
    web = auth.load_session(request)
    require_csrf(web, csrf_token)
    typed = {"name": name, "slug": slug, "handle": handle, "email": email}
    address = auth.client_address(request)
    refusal = auth.limits.check_tenant_sign_up(address)
    if refusal is not None:
        error = FormError(
            refusal.message,
            status_code=429,
            headers={"Retry-After": str(refusal.retry_after_seconds)},
        )
        return _host_page(request, web, error=error, typed=typed)
    try:
        hosted = service.sign_up_organizer(
            work, name=name, slug=slug, handle=handle, email=email, password=password
        )
    except FormError as exc:
        work.rollback()
        return _host_page(request, web, error=exc, typed=typed)
    auth.limits.tenant_signed_up(address)
    tenant, organizer = hosted.tenant, hosted.organizer
    token = accounts.start_session(work.session, web, tenant.id, organizer.id)
    work.commit()
    web.sign_in(token)
    if hosted.api_key is None:
        return redirect(request, web, f"{host_request_url(tenant)}?notice=host-requested")
    # The console, answered here: its first admin key is shown this once and kept nowhere.
    access = AdminAccess(TenantAdmin(tenant.id, None), account=organizer)
    visit = AdminVisit(request, web, tenant, organizer, access)
    return dashboard(
        visit,
        work.session,
        notice=notice_text("host-ready"),
        first_key=hosted.api_key,
        status_code=201,
    )


def _request_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    organizer: Participant | None,
    *,
    notice: str | None = None,
    error: FormError | None = None,
) -> Response:
    return form_page(
        request,
        web,
        "host_request.html",
        error,
        title=f"{tenant.name} · Host a challenge",
        request_tenant=tenant,
        organizer=organizer,
        notice=notice,
    )


def _requested(
    request: Request, session: SessionDep, tenant_slug: str
) -> tuple[auth.WebSession, Tenant, Participant | None]:
    """The tenant asked for, and the visitor if they are one of its organizers (signed in
    with an account that has its admin role)."""
    tenant = tenants.tenant_by_slug(session, tenant_slug)
    if tenant is None:
        raise not_found()
    web = auth.load_session(request)
    visitor = signed_in_participant(session, web, tenant)
    organizer = visitor if visitor is not None and visitor.is_admin else None
    return web, tenant, organizer


@router.get("/host/{tenant_slug}")
def host_request(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    """Where a request stands: waiting for approval, approved (the console's address) or
    suspended; to its signed-in organizer, also their address and whether it is confirmed."""
    web, tenant, organizer = _requested(request, session, tenant_slug)
    return _request_page(request, web, tenant, organizer, notice=notice_text(notice))


@router.post("/host/{tenant_slug}/confirmation")
def host_request_confirmation(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    """Sends the signed-in organizer of a pending tenant a new confirmation link (a few an
    hour); an active tenant's organizers have their account page, a suspended one's nothing."""
    web, tenant, organizer = _requested(request, work.session, tenant_slug)
    require_csrf(web, csrf_token)
    if organizer is None or tenant.status is not TenantStatus.PENDING:
        raise not_found()
    try:
        accounts.resend_confirmation(work, tenant, organizer)
    except FormError as exc:
        work.rollback()
        return _request_page(request, web, tenant, organizer, error=exc)
    work.commit()
    return redirect(request, web, f"{host_request_url(tenant)}?notice=confirmation-sent")
