"""The console's accounts and mail page (`/t/{tenant}/admin/mail`): what the tenant asks of
its participants' email addresses, and the messages sent to its participants, newest first,
with where each went or why it has not (yet). Without an SMTP server the messages are files
in the data folder and each one's text is shown here: on such a deployment the console is the
mailbox (docs/mail.md)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.kit.config import get_settings
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.mail import service as mail
from app.tenant import service as tenants
from app.tenant.models import EmailPolicy
from app.web.admin.visits import admin_form, admin_page_visit
from app.web.rendering import HtmlRoute, not_found
from app.web.visitors import CsrfField, ListPage, pages_of
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

PAGE_SIZE = 50
POLICIES = (
    (EmailPolicy.OPTIONAL, "Optional: asked at sign-up, may be left out"),
    (EmailPolicy.REQUIRED, "Required: an address to sign up and to play"),
    (EmailPolicy.CONFIRMED, "Required and confirmed: its link opened before playing"),
)


@router.get("/t/{tenant_slug}/admin/mail")
def mail_page(
    tenant_slug: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
    notice: str | None = None,
) -> Response:
    visit = admin_page_visit(request, session, tenant_slug)
    rows, total = mail.page_of_mail(
        session, visit.tenant.id, limit=PAGE_SIZE, offset=(page_number - 1) * PAGE_SIZE
    )
    settings = get_settings()
    server = settings.smtp_server
    return visit.page(
        "admin_mail.html",
        title="Accounts and mail",
        rows=rows,
        total=total,
        page_number=page_number,
        pages=pages_of(total, PAGE_SIZE),
        policies=POLICIES,
        smtp=f"{server.host}:{server.port}" if server is not None else None,
        mail_folder=str(settings.mail_folder),
        notice=notice_text(notice),
    )


@router.get("/t/{tenant_slug}/admin/mail/{mail_id}")
def mail_message(
    tenant_slug: str, mail_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    visit = admin_page_visit(request, session, tenant_slug)
    copy = mail.mail_copy(session, visit.tenant.id, mail_id)
    if copy is None:
        raise not_found()
    return visit.page("admin_mail_message.html", title="Message", copy=copy)


@router.post("/t/{tenant_slug}/admin/mail/policy")
def set_policy(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    email_policy: Annotated[str, Form()] = "",
) -> Response:
    visit = admin_form(request, work.session, tenant_slug, csrf_token)
    try:
        policy = EmailPolicy(email_policy)
    except ValueError:
        return visit.redirect("admin/mail?notice=policy-unknown")
    tenants.set_email_policy(work.session, visit.tenant.id, policy)
    work.commit()
    return visit.redirect("admin/mail?notice=policy-saved")
