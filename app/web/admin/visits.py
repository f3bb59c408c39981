"""What every page of the console (the tenant admin's pages, the authoring pages, a kind's
admin pages) starts from: the visit (the request, the browser session, the tenant, the
signed-in participant if any, and the admin access, checked against the database on every
request), opened in one place for a page (`admin_page_visit`: the sign-in page without access,
answered through `Answer`) and for a form post (`admin_form`: the CSRF check, then 404 without
access); and what a console page ends with (`AdminVisit.page`, `AdminVisit.redirect`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from app.auth import sessions
from app.auth.models import ApiKey
from app.auth.subjects import TenantAdmin
from app.tenant.models import Participant, Tenant
from app.web import auth
from app.web.rendering import Answer, not_found, page, redirect
from app.web.visitors import require_csrf, tenant_url, visitor


@dataclass(frozen=True)
class AdminAccess:
    """Who uses the admin pages: a browser signed in to them with an admin API key (`key`),
    or a participant account with the admin role (`account`)."""

    subject: TenantAdmin
    key: ApiKey | None = None
    account: Participant | None = None


def admin_access(
    request: Request, session: Session, tenant: Tenant, participant: Participant | None
) -> AdminAccess | None:
    """The visitor's admin access, checked against the database on every request (sign-out,
    expiry, a revoked key and a withdrawn role take effect at once): the admin session's key
    first, else the signed-in participant's account if it has the admin role."""
    token = auth.admin_session_token(request)
    key = sessions.admin_key_of(session, tenant.id, token) if token else None
    if key is not None:
        return AdminAccess(sessions.admin_subject(key), key=key)
    if participant is not None and participant.is_admin and participant.password_hash:
        return AdminAccess(TenantAdmin(tenant.id, None), account=participant)
    return None


@dataclass(frozen=True)
class AdminVisit:
    """A console request: the visitor's web session, the tenant, the signed-in participant
    (if any) and the admin access; it renders the console's pages and redirects."""

    request: Request
    web: auth.WebSession
    tenant: Tenant
    participant: Participant | None
    access: AdminAccess

    @property
    def subject(self) -> TenantAdmin:
        return self.access.subject

    def url(self, rest: str = "") -> str:
        """An address under the tenant's pages (`admin/...`)."""
        return tenant_url(self.tenant, rest)

    def page(
        self,
        template: str,
        *,
        title: str,
        status_code: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        """A console page: `title` followed by the tenant's name, with the admin's header."""
        return page(
            self.request,
            self.web,
            template,
            status_code=status_code,
            admin_page=True,
            title=f"{title} · {self.tenant.name}",
            tenant=self.tenant,
            participant=self.participant,
            **context,
        )

    def redirect(self, rest: str) -> RedirectResponse:
        """To a page under the tenant's address (`admin?notice=...`)."""
        return redirect(self.request, self.web, self.url(rest))


def admin_page_visit(request: Request, session: Session, tenant_slug: str) -> AdminVisit:
    """What every admin page starts with: the visit; a visitor without admin access is sent to
    the sign-in page (`Answer`, which the web routes answer with)."""
    web, tenant, participant = visitor(request, session, tenant_slug)
    access = admin_access(request, session, tenant, participant)
    if access is None:
        raise Answer(to_admin_sign_in(request, web, tenant))
    return AdminVisit(request, web, tenant, participant, access)


def admin_form(request: Request, session: Session, tenant_slug: str, csrf_token: str) -> AdminVisit:
    """What every admin form POST starts with: the visit, its CSRF token checked (404 without
    admin access: the form's route is not there for anyone else)."""
    web, tenant, participant = visitor(request, session, tenant_slug)
    require_csrf(web, csrf_token)
    access = admin_access(request, session, tenant, participant)
    if access is None:
        raise not_found()
    return AdminVisit(request, web, tenant, participant, access)


def to_admin_sign_in(request: Request, web: auth.WebSession, tenant: Tenant) -> Response:
    """Where an admin page sends a visitor without a live admin session: the sign-in page,
    saying so (and dropping the cookie) when the session it named is no longer valid."""
    code = "key-invalid" if request.cookies.get(auth.ADMIN_COOKIE) else None
    response = redirect(
        request, web, tenant_url(tenant, "admin/sign-in" + (f"?notice={code}" if code else ""))
    )
    if code:
        auth.clear_admin_cookie(request, response, tenant.slug)
    return response
