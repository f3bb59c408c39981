"""The platform admin's pages (`/admin`), signed in with the platform admin token: the tenants
(status, organizers, what each holds and does today, quotas), filtered by status; a tenant's
page, with its approval, suspension or resumption and its quotas. They call the services the
REST API's `/v1/tenants` calls."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.auth import platform_sessions
from app.auth.tenant_access import TenantStatus
from app.hosting import service as hosting
from app.hosting.schemas import TenantAdminUpdate
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import Conflict
from app.tenant import service as tenants
from app.web import auth
from app.web.forms import FormError
from app.web.platform import service
from app.web.platform.service import PlatformVisit, platform_form, platform_visit
from app.web.rendering import HtmlRoute, form_page, page, redirect
from app.web.visitors import CsrfField, ListPage, pages_of, require_csrf
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

NOTICES = {
    "signed-in": "You are signed in as the platform admin.",
    "signed-out": "You are signed out of the platform admin page.",
    "approved": "Approved: the tenant is open, and its organizers are mailed.",
    "suspended": "Suspended: its keys, pages and play are closed and nothing runs for it.",
    "resumed": "Resumed: the tenant is open again, as it was.",
    "quotas-saved": "The quotas are saved; they apply from the next request.",
}


def _notice(code: str | None) -> str | None:
    return NOTICES.get(code or "") or notice_text(code)


@router.get("/admin")
def platform_tenants(
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
    status: TenantStatus | None = None,
    notice: str | None = None,
) -> Response:
    visit = platform_visit(request, session)
    size = service.TENANTS_PAGE_SIZE
    rows, total = hosting.list_overviews(
        session,
        visit.admin,
        limit=size,
        offset=(page_number - 1) * size,
        status=status,
        newest_first=True,
    )
    return page(
        request,
        visit.web,
        "platform.html",
        title="Tenants · platform admin",
        platform_page=True,
        rows=rows,
        total=total,
        status=status.value if status else "",
        statuses=[s.value for s in TenantStatus],
        page_number=page_number,
        pages=pages_of(total, size),
        notice=_notice(notice),
    )


def _tenant_page(
    visit: PlatformVisit,
    session: SessionDep,
    tenant_id: uuid.UUID,
    *,
    notice: str | None = None,
    error: FormError | None = None,
    typed: dict[str, str] | None = None,
) -> Response:
    shown = hosting.overview(session, visit.admin, tenant_id)
    return form_page(
        visit.request,
        visit.web,
        "platform_tenant.html",
        error,
        title=f"{shown.name} · platform admin",
        platform_page=True,
        shown=shown,
        typed=typed,
        notice=notice,
    )


@router.get("/admin/tenants/{tenant_id}")
def platform_tenant(
    tenant_id: uuid.UUID, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    visit = platform_visit(request, session)
    return _tenant_page(visit, session, tenant_id, notice=_notice(notice))


@router.post("/admin/tenants/{tenant_id}/status")
def platform_tenant_status(
    tenant_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    status: Annotated[TenantStatus, Form()] = TenantStatus.ACTIVE,
) -> Response:
    """Approves (a pending tenant), suspends or resumes the tenant."""
    visit = platform_form(request, work.session, csrf_token)
    before = tenants.get_tenant(work.session, tenant_id).status
    try:
        hosting.change_tenant(work, tenant_id, TenantAdminUpdate(status=status))
    except Conflict as exc:
        work.rollback()
        error = FormError(exc.message, status_code=409)
        return _tenant_page(visit, work.session, tenant_id, error=error)
    work.commit()
    if status is TenantStatus.SUSPENDED:
        done = "suspended"
    else:
        done = "approved" if before is TenantStatus.PENDING else "resumed"
    return redirect(request, visit.web, f"/admin/tenants/{tenant_id}?notice={done}")


@router.post("/admin/tenants/{tenant_id}/quotas")
def platform_tenant_quotas(
    tenant_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    max_challenges: Annotated[str, Form()] = "",
    max_participants: Annotated[str, Form()] = "",
    max_attempts_per_day: Annotated[str, Form()] = "",
    daily_cost_budget_usd: Annotated[str, Form()] = "",
) -> Response:
    """Sets every quota of the form (a blank one: no quota)."""
    visit = platform_form(request, work.session, csrf_token)
    typed = {
        "max_challenges": max_challenges,
        "max_participants": max_participants,
        "max_attempts_per_day": max_attempts_per_day,
        "daily_cost_budget_usd": daily_cost_budget_usd,
    }
    try:
        quotas = service.quotas_from_form(typed)
    except FormError as exc:
        return _tenant_page(visit, work.session, tenant_id, error=exc, typed=typed)
    hosting.change_tenant(work, tenant_id, TenantAdminUpdate(quotas=quotas))
    work.commit()
    return redirect(request, visit.web, f"/admin/tenants/{tenant_id}?notice=quotas-saved")


def _sign_in_page(
    request: Request, web: auth.WebSession, *, error: FormError | None = None, notice: str | None
) -> Response:
    return form_page(
        request,
        web,
        "platform_sign_in.html",
        error,
        title="Sign in · platform admin",
        platform_page=True,
        notice=notice,
    )


@router.get("/admin/sign-in")
def platform_sign_in_form(request: Request, notice: str | None = None) -> Response:
    return _sign_in_page(request, auth.load_session(request), notice=_notice(notice))


@router.post("/admin/sign-in")
def platform_sign_in(
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    admin_token: Annotated[str, Form()] = "",
) -> Response:
    web = auth.load_session(request)
    require_csrf(web, csrf_token)
    try:
        service.check_token(work.session, admin_token, auth.client_address(request))
    except FormError as exc:
        work.rollback()
        return _sign_in_page(request, web, error=exc, notice=None)
    token = platform_sessions.start(work.session, auth.platform_session_token(request))
    work.commit()
    response = redirect(request, web, "/admin?notice=signed-in")
    auth.set_platform_cookie(request, response, token)
    return response


@router.post("/admin/sign-out")
def platform_sign_out(
    request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    web = auth.load_session(request)
    require_csrf(web, csrf_token)
    token = auth.platform_session_token(request)
    if token is not None:
        platform_sessions.end(work.session, token)
        work.commit()
    response = redirect(request, web, "/admin/sign-in?notice=signed-out")
    auth.clear_platform_cookie(request, response)
    return response
