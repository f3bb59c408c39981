"""Account pages of a tenant: sign up, sign in, sign out, and the signed-in participant's
account (the password change)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.deps import SessionDep, UnitOfWorkDep
from app.tenant.models import Participant, Tenant
from app.unit_of_work import UnitOfWork
from app.web import auth
from app.web.accounts import service
from app.web.forms import FormError
from app.web.rendering import HtmlRoute, form_page, redirect
from app.web.visitors import CsrfField, form_visit, safe_next, tenant_url, visitor
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


# (template, title) of the two pages `_credentials_page` makes.
SIGN_UP = ("sign_up.html", "Create an account")
SIGN_IN = ("sign_in.html", "Sign in")


def _credentials_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    next: str | None,
    which: tuple[str, str],
    *,
    participant: Participant | None = None,
    handle: str = "",
    error: FormError | None = None,
) -> Response:
    """The sign-up or sign-in page (`which`: SIGN_UP or SIGN_IN): a handle and a password, and
    where to go back after."""
    template, title = which
    return form_page(
        request,
        web,
        template,
        error,
        title=f"{title} · {tenant.name}",
        tenant=tenant,
        participant=participant,
        next=safe_next(tenant, next),
        handle=handle,
        handle_rules=service.HANDLE_RULES,
        min_password=auth.MIN_PASSWORD_LENGTH,
    )


def _back_signed_in(
    request: Request,
    work: UnitOfWork,
    web: auth.WebSession,
    tenant: Tenant,
    participant_id: uuid.UUID,
    next: str | None,
    notice: str,
) -> Response:
    """Starts a session for the participant (committing the request's work with it) and sends
    them back where they came from, with a notice."""
    token = service.start_session(work.session, web, tenant.id, participant_id)
    work.commit()
    web.sign_in(token)
    target = safe_next(tenant, next)
    separator = "&" if "?" in target else "?"
    return redirect(request, web, f"{target}{separator}notice={notice}")


@router.get("/t/{tenant_slug}/sign-up")
def sign_up_form(
    tenant_slug: str, request: Request, session: SessionDep, next: str | None = None
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    return _credentials_page(request, web, tenant, next, SIGN_UP, participant=participant)


@router.post("/t/{tenant_slug}/sign-up")
def sign_up(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    handle: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, _ = form_visit(request, session, tenant_slug, csrf_token)
    address = auth.client_address(request)
    try:
        service.check_sign_up_allowed(address)
        participant = service.sign_up(session, tenant.id, handle, password)
    except FormError as exc:
        work.rollback()
        return _credentials_page(request, web, tenant, next, SIGN_UP, handle=handle, error=exc)
    auth.limits.signed_up(address)
    return _back_signed_in(request, work, web, tenant, participant.id, next, "signed-up")


@router.get("/t/{tenant_slug}/sign-in")
def sign_in_form(
    tenant_slug: str, request: Request, session: SessionDep, next: str | None = None
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    return _credentials_page(request, web, tenant, next, SIGN_IN, participant=participant)


@router.post("/t/{tenant_slug}/sign-in")
def sign_in(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    handle: Annotated[str, Form()] = "",
    password: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, _ = form_visit(request, session, tenant_slug, csrf_token)
    try:
        participant = service.sign_in(
            session, tenant.id, handle, password, auth.client_address(request)
        )
    except FormError as exc:
        work.rollback()
        return _credentials_page(request, web, tenant, next, SIGN_IN, handle=handle, error=exc)
    return _back_signed_in(request, work, web, tenant, participant.id, next, "signed-in")


@router.post("/t/{tenant_slug}/sign-out")
def sign_out(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    session = work.session
    web, tenant, _ = form_visit(request, session, tenant_slug, csrf_token)
    # The server forgets the session: a copy of the cookie signs nobody in afterwards.
    service.end_session(session, web)
    work.commit()
    web.sign_out()
    return redirect(request, web, tenant_url(tenant, "?notice=signed-out"))


def _account_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    participant: Participant,
    *,
    error: FormError | None = None,
    notice: str | None = None,
) -> Response:
    return form_page(
        request,
        web,
        "account.html",
        error,
        title=f"Your account · {tenant.name}",
        tenant=tenant,
        participant=participant,
        min_password=auth.MIN_PASSWORD_LENGTH,
        notice=notice,
    )


@router.get("/t/{tenant_slug}/account")
def account(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    if participant is None:
        return redirect(request, web, tenant_url(tenant, f"sign-in?next=/t/{tenant.slug}/account"))
    return _account_page(request, web, tenant, participant, notice=notice_text(notice))


@router.post("/t/{tenant_slug}/account/password")
def change_password(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    current_password: Annotated[str, Form()] = "",
    new_password: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, participant = form_visit(request, session, tenant_slug, csrf_token)
    if participant is None:
        return redirect(request, web, tenant_url(tenant, f"sign-in?next=/t/{tenant.slug}/account"))
    try:
        service.change_password(
            session,
            tenant.id,
            participant,
            current_password,
            new_password,
            auth.client_address(request),
        )
    except FormError as exc:
        work.rollback()
        return _account_page(request, web, tenant, participant, error=exc)
    # Every session of the participant ended with the change, this browser's too: it gets a
    # new one, so the person who changed the password stays signed in here only.
    web.sign_out()
    token = service.start_session(session, web, tenant.id, participant.id)
    work.commit()
    web.sign_in(token)
    return redirect(request, web, tenant_url(tenant, "account?notice=password-changed"))
