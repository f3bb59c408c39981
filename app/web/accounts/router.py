"""Account pages of a tenant: sign up, sign in, sign out, the signed-in participant's account
(the password, the email address and its confirmation, notification emails), and the pages
mail links open: an address's confirmation, a forgotten password's reset, an unsubscribe."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.auth.tenant_access import TenantStatus
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.unit_of_work import UnitOfWork
from app.tenant.models import Participant, Tenant
from app.web import auth
from app.web.accounts import service
from app.web.forms import FormError
from app.web.rendering import (
    Answer,
    HtmlRoute,
    PageError,
    form_page,
    not_found,
    page,
    redirect,
)
from app.web.visitors import (
    CsrfField,
    form_visit,
    host_request_url,
    safe_next,
    tenant_url,
    visitor,
)
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
    email: str = "",
    error: FormError | None = None,
) -> Response:
    """The sign-up or sign-in page (`which`: SIGN_UP or SIGN_IN): a handle and a password (and
    on sign-up an email address), and where to go back after."""
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
        email=email,
        email_required=service.email_asked(tenant),
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
    email: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, _ = form_visit(request, session, tenant_slug, csrf_token)
    address = auth.client_address(request)
    try:
        service.check_sign_up_allowed(address)
        participant = service.sign_up(work, tenant, handle, password, email)
    except FormError as exc:
        work.rollback()
        return _credentials_page(
            request, web, tenant, next, SIGN_UP, handle=handle, email=email, error=exc
        )
    auth.limits.signed_up(address)
    notice = "signed-up-confirm" if participant.email else "signed-up"
    return _back_signed_in(request, work, web, tenant, participant.id, next, notice)


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
    email: str | None = None,
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
        email_required=service.email_asked(tenant),
        email=email if email is not None else participant.email or "",
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


def _signed_in_account(
    request: Request, work: UnitOfWork, tenant_slug: str, csrf_token: str
) -> tuple[auth.WebSession, Tenant, Participant]:
    """The opening of the account page's forms: the CSRF check, then the signed-in account
    (a visitor signed out is sent to sign in, `Answer`)."""
    web, tenant, participant = form_visit(request, work.session, tenant_slug, csrf_token)
    if participant is None:
        raise Answer(
            redirect(request, web, tenant_url(tenant, f"sign-in?next=/t/{tenant.slug}/account"))
        )
    return web, tenant, participant


@router.post("/t/{tenant_slug}/account/email")
def change_email(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    email: Annotated[str, Form()] = "",
    email_password: Annotated[str, Form()] = "",
) -> Response:
    web, tenant, participant = _signed_in_account(request, work, tenant_slug, csrf_token)
    address = auth.client_address(request)
    try:
        changed = service.change_email(work, tenant, participant, email, email_password, address)
    except FormError as exc:
        work.rollback()
        return _account_page(request, web, tenant, participant, error=exc, email=email)
    work.commit()
    notice = (
        "email-unchanged" if not changed else "email-changed" if email.strip() else "email-removed"
    )
    return redirect(request, web, tenant_url(tenant, f"account?notice={notice}#email"))


@router.post("/t/{tenant_slug}/account/confirmation")
def resend_confirmation(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    web, tenant, participant = _signed_in_account(request, work, tenant_slug, csrf_token)
    try:
        service.resend_confirmation(work, tenant, participant)
    except FormError as exc:
        work.rollback()
        return _account_page(request, web, tenant, participant, error=exc)
    work.commit()
    return redirect(request, web, tenant_url(tenant, "account?notice=confirmation-sent#email"))


@router.post("/t/{tenant_slug}/account/notifications")
def set_notifications(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    notify: Annotated[str, Form()] = "",
) -> Response:
    web, tenant, participant = _signed_in_account(request, work, tenant_slug, csrf_token)
    on = notify == "on"
    service.set_notifications(work.session, participant, on)
    work.commit()
    notice = "notifications-on" if on else "notifications-off"
    return redirect(request, web, tenant_url(tenant, f"account?notice={notice}#notifications"))


# Links in mail ----------------------------------------------------------------------------------


def _spent_link(tenant: Tenant, way_on: tuple[str, str]) -> PageError:
    error = service.link_spent()
    return PageError(error.status_code, "This link does not work any more", error.message, way_on)


@router.get("/t/{tenant_slug}/confirm-email/{token}")
def confirm_email_page(
    tenant_slug: str, token: str, request: Request, session: SessionDep
) -> Response:
    """What a confirmation link opens: the address and the button that confirms it (mail
    scanners that open links do not press buttons). Open while the tenant waits for its
    approval: its organizer confirms the address the approval is mailed to."""
    web, tenant, participant = visitor(request, session, tenant_slug, while_pending=True)
    account = service.confirmation_pending(session, tenant, token)
    if account is None:
        raise _spent_link(tenant, (tenant_url(tenant, "account#email"), "Your account page"))
    return page(
        request,
        web,
        "confirm_email.html",
        title=f"Confirm your email address · {tenant.name}",
        tenant=tenant,
        participant=participant,
        account=account,
        token=token,
    )


@router.post("/t/{tenant_slug}/confirm-email/{token}")
def confirm_email(
    tenant_slug: str,
    token: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    web, tenant, participant = form_visit(
        request, work.session, tenant_slug, csrf_token, while_pending=True
    )
    account = service.confirm_email(work.session, tenant, token)
    if account is None:
        work.rollback()
        raise _spent_link(tenant, (tenant_url(tenant, "account#email"), "Your account page"))
    work.commit()
    if tenant.status is TenantStatus.PENDING:
        return redirect(request, web, f"{host_request_url(tenant)}?notice=email-confirmed-request")
    if participant is not None and participant.id == account.id:
        return redirect(request, web, tenant_url(tenant, "account?notice=email-confirmed#email"))
    return redirect(request, web, tenant_url(tenant, "?notice=email-confirmed"))


def _forgot_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    participant: Participant | None,
    *,
    named: str = "",
    error: FormError | None = None,
    notice: str | None = None,
) -> Response:
    return form_page(
        request,
        web,
        "forgot_password.html",
        error,
        title=f"Forgotten password · {tenant.name}",
        tenant=tenant,
        participant=participant,
        named=named,
        notice=notice,
    )


@router.get("/t/{tenant_slug}/forgot-password")
def forgot_password_form(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    return _forgot_page(request, web, tenant, participant, notice=notice_text(notice))


@router.post("/t/{tenant_slug}/forgot-password")
def forgot_password(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    handle_or_email: Annotated[str, Form()] = "",
) -> Response:
    """Sends reset links where the handle or address leads; the answer is the same either
    way (it never tells whether an account exists, nor its address)."""
    web, tenant, participant = form_visit(request, work.session, tenant_slug, csrf_token)
    try:
        service.request_password_reset(work, tenant, handle_or_email, auth.client_address(request))
    except FormError as exc:
        work.rollback()
        return _forgot_page(request, web, tenant, participant, named=handle_or_email, error=exc)
    work.commit()
    return redirect(request, web, tenant_url(tenant, "forgot-password?notice=reset-asked"))


def _reset_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    participant: Participant | None,
    account: Participant,
    token: str,
    error: FormError | None = None,
) -> Response:
    return form_page(
        request,
        web,
        "reset_password.html",
        error,
        title=f"Choose a new password · {tenant.name}",
        tenant=tenant,
        participant=participant,
        account=account,
        token=token,
        min_password=auth.MIN_PASSWORD_LENGTH,
    )


_ASK_AGAIN = ("forgot-password", "Ask for a new link")


@router.get("/t/{tenant_slug}/reset-password/{token}")
def reset_password_form(
    tenant_slug: str, token: str, request: Request, session: SessionDep
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    account = service.reset_pending(session, tenant, token)
    if account is None:
        raise _spent_link(tenant, (tenant_url(tenant, _ASK_AGAIN[0]), _ASK_AGAIN[1]))
    return _reset_page(request, web, tenant, participant, account, token)


@router.post("/t/{tenant_slug}/reset-password/{token}")
def reset_password(
    tenant_slug: str,
    token: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    new_password: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, participant = form_visit(request, session, tenant_slug, csrf_token)
    try:
        account = service.reset_password(
            session, tenant, token, new_password, auth.client_address(request)
        )
    except FormError as exc:
        work.rollback()
        pending = service.reset_pending(session, tenant, token)
        if pending is None:
            raise _spent_link(tenant, (tenant_url(tenant, _ASK_AGAIN[0]), _ASK_AGAIN[1])) from None
        return _reset_page(request, web, tenant, participant, pending, token, exc)
    # Every session of the account ended with the reset; this browser starts a new one.
    web.sign_out()
    return _back_signed_in(
        request, work, web, tenant, account.id, tenant_url(tenant, "account"), "password-reset"
    )


@router.get("/t/{tenant_slug}/unsubscribe/{token}")
def unsubscribe_page(
    tenant_slug: str, token: str, request: Request, session: SessionDep
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    account = service.unsubscribing(session, tenant, token)
    if account is None:
        raise not_found()
    return page(
        request,
        web,
        "unsubscribe.html",
        title=f"Notification emails · {tenant.name}",
        tenant=tenant,
        participant=participant,
        account=account,
        token=token,
        done=False,
    )


@router.post("/t/{tenant_slug}/unsubscribe/{token}")
def unsubscribe(tenant_slug: str, token: str, request: Request, work: UnitOfWorkDep) -> Response:
    """Turns the account's notification emails off. No CSRF token and no cookie: mail
    programs send this (RFC 8058 one-click, `List-Unsubscribe=One-Click`) on the person's
    behalf, and the signed link is the authority; it can do nothing but this."""
    web, tenant, participant = visitor(request, work.session, tenant_slug)
    account = service.unsubscribing(work.session, tenant, token)
    if account is None:
        raise not_found()
    service.set_notifications(work.session, account, False)
    work.commit()
    return page(
        request,
        web,
        "unsubscribe.html",
        title=f"Notification emails · {tenant.name}",
        tenant=tenant,
        participant=participant,
        account=account,
        token=token,
        done=True,
    )
