"""The tenant admin's pages: signed in with an admin API key (a server-side admin session
behind its own cookie) or with a participant account given the admin role, either checked on
every request; the day's model spend against the budget, each challenge's status (published,
opened, closed or archived from here), its activity and its exports to download, recent errors
with a button to re-run a failed attempt (or all of a challenge's), the tenant's API keys
(created, shown once, revoked), the scorer registry; the participants, one participant's
standings and attempts, and their admin role."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from functools import partial
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Query, Request
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.attempt import service as attempt_service
from app.attempt import unscored
from app.attempt.schemas import TestRunCreate
from app.auth import sessions
from app.auth.models import ApiKey
from app.auth.service import authenticate, create_api_key, list_api_keys, revoke_api_key
from app.auth.subjects import ApiKeyRole, TenantAdmin
from app.auth.tenant_access import TenantClosed
from app.challenge import service as challenges
from app.challenge.config import ChallengeState
from app.challenge.registry import kind_as, kind_names
from app.export import service as exports
from app.export.formats import ExportFormat
from app.export.responses import export_response
from app.hosting import launch
from app.hosting import service as hosting
from app.kit.config import get_settings
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import AppError, Conflict, NotFound, Unauthorized, telling_first
from app.kit.observability import metrics as telemetry
from app.kit.unit_of_work import UnitOfWork
from app.scoring import registry
from app.tenant import service as tenants
from app.tenant.models import Tenant
from app.tenant.schemas import ApiKeyCreate
from app.web import auth
from app.web.admin import service
from app.web.admin.console import console_tabs, overview_page
from app.web.admin.visits import AdminVisit, admin_form, admin_page_visit
from app.web.challenges.router import form_fields
from app.web.forms import error_field
from app.web.rendering import Answer, HtmlRoute, not_found, page, redirect
from app.web.run_forms import RunListing, run_body, run_fields, run_list_response
from app.web.visitors import CsrfField, ListPage, pages_of, require_csrf, tenant_url, visitor
from app.web.visitors import notice as notice_text
from app.web.web_kind import WebKind

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


def _admin_sign_in_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    *,
    status_code: int = 200,
    error: str | None = None,
    notice: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    return page(
        request,
        web,
        "admin_sign_in.html",
        status_code=status_code,
        headers=headers,
        admin_page=True,
        title=f"Admin sign-in · {tenant.name}",
        tenant=tenant,
        error=error,
        notice=notice,
    )


@router.get("/t/{tenant_slug}/admin")
def admin(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    visit = admin_page_visit(request, session, tenant_slug)
    return dashboard(visit, session, notice=notice_text(notice))


def dashboard(
    visit: AdminVisit,
    session: Session,
    *,
    notice: str | None = None,
    created_key: tuple[ApiKey, str] | None = None,
    key_error: str | None = None,
    first_key: str | None = None,
    status_code: int = 200,
) -> Response:
    """The console's main page; `first_key` is a new tenant's first admin key, shown at the
    top this once (an organizer's landing, "Host a challenge")."""
    tenant = visit.tenant
    rows = service.dashboard_rows(session, tenant.id, limit=200)
    subject = visit.subject
    panels = []
    for name in kind_names():
        kind = kind_as(name, WebKind)
        panel = kind.admin_panel(session, subject)
        if panel is not None:
            panels.append((kind.macros, panel))
    return visit.page(
        "admin.html",
        status_code=status_code,
        title="Admin",
        access=visit.access,
        api_keys=list_api_keys(session, tenant.id),
        created_key=created_key,
        key_error=key_error,
        key_roles=[role.value for role in ApiKeyRole],
        rows=rows,
        errors=attempt_service.recent_errors(session, tenant.id, limit=20),
        usage=tenants.tenant_usage(session, tenant.id, get_settings()),
        quotas=hosting.quota_usage(session, tenant.id),
        first_key=first_key,
        plugins=registry.list_registered(session),
        kind_panels=panels,
        notice=notice,
    )


@router.get("/t/{tenant_slug}/admin/participants")
def admin_participants(
    tenant_slug: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
    q: Annotated[str, Query(max_length=64)] = "",
) -> Response:
    """The tenant's participants by handle (those starting with `q`), with their activity."""
    visit = admin_page_visit(request, session, tenant_slug)
    prefix = q.strip()
    rows, total = service.participant_rows(
        session, visit.tenant.id, page=page_number, handle_prefix=prefix or None
    )
    return visit.page(
        "admin_participants.html",
        title="Participants",
        rows=rows,
        total=total,
        query=prefix,
        page_number=page_number,
        pages=pages_of(total, service.PARTICIPANTS_PAGE_SIZE),
    )


@router.get("/t/{tenant_slug}/admin/participants/{handle}")
def admin_participant(
    tenant_slug: str,
    handle: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
    notice: str | None = None,
) -> Response:
    """One participant: where they stand in each challenge (every kind's entries), and their
    attempts in every challenge, newest first."""
    visit = admin_page_visit(request, session, tenant_slug)
    tenant_id = visit.tenant.id
    shown = tenants.participant_by_handle(session, tenant_id, handle)
    if shown is None:
        raise not_found()
    rows, total = service.participant_attempts(session, tenant_id, shown, page=page_number)
    standings = service.participant_standings(session, tenant_id, shown)
    return visit.page(
        "admin_participant.html",
        title=f"{shown.handle} · participants",
        shown=shown,
        access=visit.access,
        notice=notice_text(notice),
        standings=standings,
        rows=rows,
        total=total,
        page_number=page_number,
        pages=pages_of(total, service.ATTEMPTS_PAGE_SIZE),
    )


@router.post("/t/{tenant_slug}/admin/participants/{handle}/role")
def admin_participant_role(
    tenant_slug: str,
    handle: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    admin: Annotated[str, Form()] = "",
) -> Response:
    """Gives a participant account the admin role (`admin=yes`) or takes it back. Not from
    the account this admin is signed in with: another admin takes it back."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    shown = tenants.participant_by_handle(session, visit.tenant.id, handle)
    if shown is None:
        raise not_found()
    back = f"admin/participants/{quote(shown.handle)}"
    account = visit.access.account
    if account is not None and account.id == shown.id:
        return visit.redirect(f"{back}?notice=role-in-use")
    try:
        tenants.set_admin_role(session, visit.tenant.id, shown, admin == "yes")
    except Conflict:
        work.rollback()
        return visit.redirect(f"{back}?notice=role-needs-account")
    work.commit()
    notice = "role-given" if admin == "yes" else "role-taken"
    return visit.redirect(f"{back}?notice={notice}")


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/exports/{name}")
def admin_export(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    name: str,
    request: Request,
    session: SessionDep,
    format: ExportFormat = ExportFormat.CSV,
) -> Response:
    """One export of a challenge, streamed as the API streams it to an admin key."""
    visit = admin_page_visit(request, session, tenant_slug)
    return export_response(exports.open_export(session, visit.subject, challenge_id, name, format))


@router.get("/t/{tenant_slug}/admin/sign-in")
def admin_sign_in_form(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, _ = visitor(request, session, tenant_slug)
    return _admin_sign_in_page(request, web, tenant, notice=notice_text(notice))


@router.post("/t/{tenant_slug}/admin/sign-in")
def admin_sign_in(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    api_key: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, _ = visitor(request, session, tenant_slug)
    require_csrf(web, csrf_token)
    address = auth.client_address(request)
    refusal = auth.limits.check_address(address)
    if refusal is not None:
        return _admin_sign_in_page(
            request,
            web,
            tenant,
            status_code=429,
            error=refusal.message,
            headers={"Retry-After": str(refusal.retry_after_seconds)},
        )
    try:
        caller = authenticate(session, api_key.strip())
    except (Unauthorized, TenantClosed):
        caller = None
    if (
        not isinstance(caller, TenantAdmin)
        or caller.tenant_id != tenant.id
        or caller.api_key_id is None
    ):
        auth.limits.sign_in_failed(None, None, address)
        return _admin_sign_in_page(
            request,
            web,
            tenant,
            status_code=401,
            error=service.wrong_console_credential(caller, tenant),
        )
    token = sessions.start_admin_session(
        session, tenant.id, caller.api_key_id, auth.admin_session_token(request)
    )
    work.commit()
    response = redirect(request, web, tenant_url(tenant, "admin?notice=admin-signed-in"))
    auth.set_admin_cookie(request, response, tenant.slug, token)
    return response


@router.post("/t/{tenant_slug}/admin/sign-out")
def admin_sign_out(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    session = work.session
    web, tenant, _ = visitor(request, session, tenant_slug)
    require_csrf(web, csrf_token)
    token = auth.admin_session_token(request)
    if token is not None:
        sessions.end_session(session, token)
        work.commit()
    response = redirect(request, web, tenant_url(tenant, "admin/sign-in?notice=admin-signed-out"))
    auth.clear_admin_cookie(request, response, tenant.slug)
    return response


@router.post("/t/{tenant_slug}/admin/api-keys")
def admin_create_key(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    name: Annotated[str, Form()] = "",
    role: Annotated[str, Form()] = "member",
) -> Response:
    """A new API key of the tenant, shown on the page once (it is never retrievable again)."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    try:
        body = ApiKeyCreate.model_validate({"name": name.strip(), "role": role})
    except ValidationError as error:
        problem = telling_first(error.errors())[0]
        message = f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
        return dashboard(visit, session, key_error=message, status_code=422)
    created = create_api_key(session, visit.tenant.id, body.name, body.role)
    work.commit()
    return dashboard(visit, session, created_key=created)


@router.post("/t/{tenant_slug}/admin/api-keys/{key_id}/revoke")
def admin_revoke_key(
    tenant_slug: str,
    key_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    """Revokes a key: it stops working at once. Not the key this admin session stands on."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    key = visit.access.key
    if key is not None and key_id == key.id:
        return visit.redirect("admin?notice=key-in-use")
    try:
        revoke_api_key(session, visit.tenant.id, key_id)
    except NotFound:
        raise not_found() from None
    work.commit()
    return visit.redirect("admin?notice=key-revoked")


# What the buttons of a challenge's console do: (change, notice). Opening and publishing
# are its launch, which waits for the launch checklist's required items.
ChallengeChange = Callable[[UnitOfWork, TenantAdmin, uuid.UUID], object]


def _tenant_change(
    change: Callable[[UnitOfWork, uuid.UUID, uuid.UUID], object],
) -> ChallengeChange:
    return lambda work, admin, challenge_id: change(work, admin.tenant_id, challenge_id)


_CHALLENGE_ACTIONS: dict[str, tuple[ChallengeChange, str]] = {
    "open": (launch.open_challenge, "challenge-opened"),
    "close": (_tenant_change(challenges.close_now), "challenge-closed"),
    "publish": (launch.publish_challenge, "challenge-published"),
    "archive": (
        _tenant_change(partial(challenges.set_state, state=ChallengeState.ARCHIVED)),
        "challenge-archived",
    ),
    "unarchive": (
        _tenant_change(partial(challenges.set_state, state=ChallengeState.LIVE)),
        "challenge-unarchived",
    ),
    "rerun-failed": (_tenant_change(attempt_service.rerun_failed), "failed-requeued"),
}


# Test runs: the challenge's configuration once on a sample input -----------------------------

TEST_RUNS_SHOWN = 10


def _test_run_listing(session: Session, visit: AdminVisit, challenge_id: uuid.UUID) -> RunListing:
    try:
        challenge = challenges.get_challenge(session, visit.tenant.id, challenge_id)
        runs = unscored.list_test_runs(
            session, visit.subject, challenge_id, limit=TEST_RUNS_SHOWN, offset=0
        )
    except NotFound:
        raise not_found() from None
    return RunListing(
        title="Latest test runs",
        runs=runs.items,
        total=runs.total,
        empty_text="No test run yet.",
        page_url=visit.url(f"admin/challenges/{challenge_id}/test-runs"),
        kind=challenge.kind,
    )


def _test_runs_page(
    session: Session,
    visit: AdminVisit,
    challenge_id: uuid.UUID,
    *,
    values: Mapping[str, str] | None = None,
    error: str | None = None,
    error_in: str | None = None,
    status_code: int = 200,
) -> Response:
    try:
        challenge = challenges.get_challenge(session, visit.tenant.id, challenge_id)
    except NotFound:
        raise not_found() from None
    fields = run_fields(challenge.kind)
    return visit.page(
        "runs.html",
        status_code=status_code,
        title=f"Test runs · {challenge.title}",
        crumbs=[
            ("Admin", visit.url("admin")),
            (challenge.title, visit.url(f"admin/challenges/{challenge_id}")),
        ],
        heading=f"Test runs of {challenge.title}",
        tabs=console_tabs(visit.tenant, challenge_id, "test-runs"),
        intro="Runs the challenge's configuration once, through a worker, on the sample you "
        "give, in any state (a draft's too). It touches no leaderboard, standings, rating or "
        "limit.",
        form_title="Sample input",
        quota=None,
        closed_reason=None if fields else "This kind of challenge has no test runs.",
        action=visit.url(f"admin/challenges/{challenge_id}/test-runs"),
        fields=fields,
        values=values or {},
        error=error,
        error_in=error_in,
        button="Start a test run",
        listing=_test_run_listing(session, visit, challenge_id),
        back_url=visit.url(f"admin/challenges/{challenge_id}"),
        back_text=f"Back to the console of {challenge.title}",
    )


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/test-runs")
def admin_test_runs(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """A challenge's test runs, newest first, with the form that starts one; while one is
    unfinished, the page's script refreshes the list alone."""
    visit = admin_page_visit(request, session, tenant_slug)
    return _test_runs_page(session, visit, challenge_id)


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/test-runs/live")
def admin_test_runs_live(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """The test-run list alone, for the page's script while a run is pending (404 without
    admin access)."""
    try:
        visit = admin_page_visit(request, session, tenant_slug)
    except Answer:
        raise not_found() from None
    return run_list_response(request, visit.web, _test_run_listing(session, visit, challenge_id))


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/test-runs")
def admin_start_test_run(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    sent: dict[str, str] = Depends(form_fields),
) -> Response:
    """Starts a test run with the form's sample input; back to the page, which shows it."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, sent.get("csrf_token", ""))
    challenge = challenges.find_challenge(session, visit.tenant.id, challenge_id)
    if challenge is None:
        raise not_found()
    body = run_body(challenge.kind, sent)
    try:
        started = unscored.start_test_run(work, visit.subject, challenge_id, TestRunCreate(**body))
    except AppError as exc:
        work.rollback()
        field = error_field(exc, [f.path for f in run_fields(challenge.kind)])
        return _test_runs_page(
            session,
            visit,
            challenge_id,
            values=sent,
            error=exc.message,
            error_in=field,
            status_code=exc.status_code,
        )
    work.commit()
    telemetry.attempt_reached(started.kind, "queued")
    return visit.redirect(f"admin/challenges/{challenge_id}/test-runs")


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/{action}")
def admin_challenge_action(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    action: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    """Opens or closes a challenge now, publishes a draft, archives or unarchives it, or
    re-runs its failed attempts (`action`); then back to the challenge's console. Opening and
    publishing are refused (409, the console saying which items) until the launch
    checklist's required items pass."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    if action not in _CHALLENGE_ACTIONS:
        raise not_found()
    change, notice = _CHALLENGE_ACTIONS[action]
    try:
        change(work, visit.subject, challenge_id)
    except NotFound:
        raise not_found() from None
    except launch.LaunchNotReady as refused:
        work.rollback()
        challenge = challenges.get_challenge(session, visit.tenant.id, challenge_id)
        return overview_page(
            session, visit, challenge, refusal=refused.message, status_code=refused.status_code
        )
    work.commit()
    return visit.redirect(f"admin/challenges/{challenge_id}?notice={notice}")


@router.post("/t/{tenant_slug}/admin/attempts/{attempt_id}/rerun")
def admin_rerun(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    visit = admin_form(request, work.session, tenant_slug, csrf_token)
    try:
        attempt_service.rerun_attempt(work, visit.subject.tenant_id, attempt_id)
    except AppError:
        work.rollback()
        return visit.redirect("admin?notice=not-rerunnable")
    work.commit()
    return visit.redirect("admin?notice=requeued")
