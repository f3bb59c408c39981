"""The web UI's pages: server-rendered HTML on top of the same services the REST API uses.

Routes (all under `/t/{tenant_slug}` but the home page):
- `/`: tenants with public challenges, each challenge one click away.
- `/t/{tenant}/`: the challenges a visitor may see, by status, with their best result.
- `/t/{tenant}/sign-up`, `/sign-in`, `/sign-out`: participant accounts of this tenant;
  `/t/{tenant}/account`: the signed-in participant's account (password change).
- `/t/{tenant}/challenges/{slug}`: goal, attempt form (a prompt, or a model spec for benchmark
  challenges), the participant's attempts (updated live from `.../live`), the leaderboard beside
  them and, for benchmarks, the curves of the top models; `.../leaderboard`: the full
  leaderboard (and the curves).
- `/t/{tenant}/attempts/{id}`: one attempt with its trials (the participant's own only); a
  benchmark attempt with its curve and its tasks, paged, each task's trials at
  `.../tasks/{index}` (a page, or the fragment the attempt page unfolds, as JSON).
- `/t/{tenant}/admin`: tenant admins, signed in with an API key.

Visibility: public challenges are readable by anyone (playing needs an account of the tenant);
unlisted ones by the tenant's signed-in participants; private ones never appear here. Whatever a
visitor may not see answers 404, as the API does.
"""

from __future__ import annotations

import contextlib
import math
import uuid
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Form, Path, Query, Request
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.attempt import service as attempt_service
from app.attempt.models import Attempt
from app.attempt.schemas import AttemptCreate
from app.attempt.service import retry_attempt, submit_attempt
from app.auth import sessions
from app.auth.models import ApiKey
from app.auth.service import authenticate
from app.auth.subjects import TenantAdmin
from app.challenge import service as challenges
from app.challenge.models import Challenge
from app.challenge.service import challenge_status, to_public_view
from app.config import get_settings
from app.deps import SessionDep, UnitOfWorkDep
from app.errors import AppError, Unauthorized
from app.evaluation.offline import OFFLINE_MODELS
from app.observability import metrics as telemetry
from app.scoring import registry
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.unit_of_work import UnitOfWork
from app.web import auth, service
from app.web.rendering import (
    HtmlRoute,
    PageError,
    csrf_failed,
    json_response,
    not_found,
    page,
    redirect,
    render_macro,
)

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

LEADERBOARD_PAGE_SIZE = 50
LEADERBOARD_PANEL_SIZE = 10
ATTEMPTS_PAGE_SIZE = 10
TASKS_PAGE_SIZE = 25
MAX_LIVE_IDS = 50
MAX_PAGE = 1_000_000

NOTICES = {
    "signed-up": "Welcome! Your account is ready: pick a challenge and play.",
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "submitted": "Attempt submitted. Its status below updates as it runs.",
    "requeued": "The attempt is queued again.",
    "not-retryable": "That attempt cannot be re-run: only attempts that ended in error can.",
    "admin-signed-in": "You are signed in as a tenant admin.",
    "admin-signed-out": "You are signed out of the admin view.",
    "key-invalid": (
        "Your admin session has ended (signed out, expired, or its key revoked). Sign in again."
    ),
    "password-changed": (
        "Your password is changed. Every other session of your account is signed out."
    ),
}

CsrfField = Annotated[str, Form(alias="csrf_token")]
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]


def _notice(code: str | None) -> str | None:
    return NOTICES.get(code or "")


def _tenant(session: Session, slug: str) -> Tenant:
    tenant = tenants.tenant_by_slug(session, slug)
    if tenant is None:
        raise not_found()
    return tenant


def _visible_challenge(
    session: Session, tenant: Tenant, slug: str, participant: Participant | None
) -> Challenge:
    challenge = challenges.visible_challenge(
        session, tenant.id, slug, service.visible_visibilities(participant)
    )
    if challenge is None:
        raise not_found()
    return challenge


def _require_csrf(web: auth.WebSession, token: str) -> None:
    if not auth.csrf_valid(web, token):
        raise csrf_failed()


def _tenant_url(tenant: Tenant, rest: str = "") -> str:
    return f"/t/{tenant.slug}/{rest}"


def _challenge_url(tenant: Tenant, challenge: Challenge, rest: str = "") -> str:
    return _tenant_url(tenant, f"challenges/{challenge.slug}{rest}")


def _safe_next(tenant: Tenant, target: str | None) -> str:
    """Only a path inside this tenant's pages: never an open redirect elsewhere."""
    prefix = _tenant_url(tenant)
    if target and target.startswith(prefix) and "\\" not in target and "//" not in target:
        return target
    return prefix


def _visitor(
    request: Request, session: Session, tenant_slug: str
) -> tuple[auth.WebSession, Tenant, Participant | None]:
    web = auth.load_session(request)
    tenant = _tenant(session, tenant_slug)
    return web, tenant, service.signed_in_participant(session, web, tenant.id)


# Home -----------------------------------------------------------------------------------------


@router.get("/")
def home(
    request: Request,
    session: SessionDep,
    page_number: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
) -> Response:
    per_page = 20
    listed, total = challenges.tenants_with_public_challenges(
        session, limit=per_page, offset=(page_number - 1) * per_page, challenges_per_tenant=5
    )
    rows = [
        (tenant, [(c, challenge_status(c)) for c in newest], count)
        for tenant, newest, count in listed
    ]
    return page(
        request,
        auth.load_session(request),
        "home.html",
        rows=rows,
        page_number=page_number,
        pages=max(1, math.ceil(total / per_page)),
    )


# Tenant pages ---------------------------------------------------------------------------------


@router.get("/t/{tenant_slug}")
def tenant_root(tenant_slug: str, request: Request, session: SessionDep) -> Response:
    tenant = _tenant(session, tenant_slug)
    return redirect(request, None, _tenant_url(tenant))


@router.get("/t/{tenant_slug}/")
def challenge_list(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    groups = service.challenge_cards(
        session, tenant.id, participant, service.visible_visibilities(participant)
    )
    return page(
        request,
        web,
        "challenges.html",
        title=f"Challenges · {tenant.name}",
        tenant=tenant,
        participant=participant,
        groups=groups,
        notice=_notice(notice),
    )


# Accounts -------------------------------------------------------------------------------------


def _sign_up_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    next: str | None,
    *,
    participant: Participant | None = None,
    handle: str = "",
    error: service.FormError | None = None,
) -> Response:
    return page(
        request,
        web,
        "sign_up.html",
        status_code=error.status_code if error else 200,
        headers=error.headers if error else None,
        title=f"Create an account · {tenant.name}",
        tenant=tenant,
        participant=participant,
        next=_safe_next(tenant, next),
        handle=handle,
        error=error.message if error else None,
        error_field=error.field if error else None,
        handle_rules=service.HANDLE_RULES,
        min_password=auth.MIN_PASSWORD_LENGTH,
    )


def _sign_in_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    next: str | None,
    *,
    participant: Participant | None = None,
    handle: str = "",
    error: service.FormError | None = None,
) -> Response:
    return page(
        request,
        web,
        "sign_in.html",
        status_code=error.status_code if error else 200,
        headers=error.headers if error else None,
        title=f"Sign in · {tenant.name}",
        tenant=tenant,
        participant=participant,
        next=_safe_next(tenant, next),
        handle=handle,
        error=error.message if error else None,
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
    target = _safe_next(tenant, next)
    separator = "&" if "?" in target else "?"
    return redirect(request, web, f"{target}{separator}notice={notice}")


@router.get("/t/{tenant_slug}/sign-up")
def sign_up_form(
    tenant_slug: str, request: Request, session: SessionDep, next: str | None = None
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    return _sign_up_page(request, web, tenant, next, participant=participant)


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
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    address = auth.client_address(request)
    try:
        service.check_sign_up_allowed(address)
        participant = service.sign_up(session, tenant.id, handle, password)
    except service.FormError as exc:
        work.rollback()
        return _sign_up_page(request, web, tenant, next, handle=handle, error=exc)
    auth.limits.signed_up(address)
    return _back_signed_in(request, work, web, tenant, participant.id, next, "signed-up")


@router.get("/t/{tenant_slug}/sign-in")
def sign_in_form(
    tenant_slug: str, request: Request, session: SessionDep, next: str | None = None
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    return _sign_in_page(request, web, tenant, next, participant=participant)


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
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    try:
        participant = service.sign_in(
            session, tenant.id, handle, password, auth.client_address(request)
        )
    except service.FormError as exc:
        work.rollback()
        return _sign_in_page(request, web, tenant, next, handle=handle, error=exc)
    return _back_signed_in(request, work, web, tenant, participant.id, next, "signed-in")


@router.post("/t/{tenant_slug}/sign-out")
def sign_out(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    session = work.session
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    # The server forgets the session: a copy of the cookie signs nobody in afterwards.
    service.end_session(session, web)
    work.commit()
    web.sign_out()
    return redirect(request, web, _tenant_url(tenant, "?notice=signed-out"))


def _account_page(
    request: Request,
    web: auth.WebSession,
    tenant: Tenant,
    participant: Participant,
    *,
    error: service.FormError | None = None,
    notice: str | None = None,
) -> Response:
    return page(
        request,
        web,
        "account.html",
        status_code=error.status_code if error else 200,
        headers=error.headers if error else None,
        title=f"Your account · {tenant.name}",
        tenant=tenant,
        participant=participant,
        error=error.message if error else None,
        error_field=error.field if error else None,
        min_password=auth.MIN_PASSWORD_LENGTH,
        notice=notice,
    )


@router.get("/t/{tenant_slug}/account")
def account(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    if participant is None:
        return redirect(request, web, _tenant_url(tenant, f"sign-in?next=/t/{tenant.slug}/account"))
    return _account_page(request, web, tenant, participant, notice=_notice(notice))


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
    web, tenant, participant = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    if participant is None:
        return redirect(request, web, _tenant_url(tenant, f"sign-in?next=/t/{tenant.slug}/account"))
    try:
        service.change_password(
            session,
            tenant.id,
            participant,
            current_password,
            new_password,
            auth.client_address(request),
        )
    except service.FormError as exc:
        work.rollback()
        return _account_page(request, web, tenant, participant, error=exc)
    # Every session of the participant ended with the change, this browser's too: it gets a
    # new one, so the person who changed the password stays signed in here only.
    web.sign_out()
    token = service.start_session(session, web, tenant.id, participant.id)
    work.commit()
    web.sign_in(token)
    return redirect(request, web, _tenant_url(tenant, "account?notice=password-changed"))


# Challenge page -------------------------------------------------------------------------------


def _challenge_page(
    request: Request,
    session: Session,
    web: auth.WebSession,
    tenant: Tenant,
    challenge: Challenge,
    participant: Participant | None,
    *,
    attempts_page: int = 1,
    status_code: int = 200,
    prompt: str = "",
    spec_form: service.ModelSpecForm | None = None,
    error: str | None = None,
    notice: str | None = None,
) -> Response:
    cards: list[service.AttemptCard] = []
    attempts_total = 0
    if participant is not None:
        attempts, attempts_total = attempt_service.participant_attempts(
            session,
            tenant.id,
            challenge.id,
            participant.id,
            limit=ATTEMPTS_PAGE_SIZE,
            offset=(attempts_page - 1) * ATTEMPTS_PAGE_SIZE,
        )
        cards = service.attempt_cards(session, tenant.id, challenge, attempts, participant.handle)
    board = service.leaderboard_view(
        session, challenge, participant, limit=LEADERBOARD_PANEL_SIZE, offset=0
    )
    public = to_public_view(challenge)
    benchmark = challenge.kind == "benchmark"
    return page(
        request,
        web,
        "challenge.html",
        status_code=status_code,
        title=f"{challenge.title} · {tenant.name}",
        tenant=tenant,
        participant=participant,
        challenge=public,
        status=public.status,
        strategy=service.strategy_of(challenge),
        prompt_limit=service.prompt_limit(challenge),
        cards=cards,
        attempts_total=attempts_total,
        attempts_page=attempts_page,
        attempts_pages=max(1, math.ceil(attempts_total / ATTEMPTS_PAGE_SIZE)),
        board=board,
        prompt=prompt,
        benchmark=service.benchmark_facts(challenge) if benchmark else None,
        chart=service.leaderboard_chart(challenge, board) if benchmark else None,
        spec_form=spec_form or service.ModelSpecForm(),
        offline_models=OFFLINE_MODELS,
        system_prompt_limit=service.SYSTEM_PROMPT_LIMIT,
        error=error,
        submission_id=uuid.uuid4().hex,
        notice=notice,
        base_url=_challenge_url(tenant, challenge),
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}")
def challenge_page(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    notice: str | None = None,
    attempts_page: PageNumber = 1,
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    challenge = _visible_challenge(session, tenant, challenge_slug, participant)
    return _challenge_page(
        request,
        session,
        web,
        tenant,
        challenge,
        participant,
        attempts_page=attempts_page,
        notice=_notice(notice),
    )


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    return f"Your prompt {message[0].lower()}{message[1:]}." if message else "Invalid prompt."


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/attempts")
def submit(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    prompt: Annotated[str, Form()] = "",
    model: Annotated[str, Form()] = "",
    temperature: Annotated[str, Form()] = "",
    system_prompt: Annotated[str, Form()] = "",
    submission_id: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, participant = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    challenge = _visible_challenge(session, tenant, challenge_slug, participant)
    if participant is None:
        raise PageError(
            401,
            "Sign in to play",
            f"Sign in or create an account of {tenant.name} to submit attempts.",
        )
    # Browsers send a textarea's line breaks as CRLF; count and store what the person typed.
    prompt = prompt.replace("\r\n", "\n")
    spec_form = service.ModelSpecForm(
        model=model, temperature=temperature, system_prompt=system_prompt.replace("\r\n", "\n")
    )

    def again(status_code: int, message: str, field: str | None = None) -> Response:
        work.rollback()
        return _challenge_page(
            request,
            session,
            web,
            tenant,
            challenge,
            participant,
            status_code=status_code,
            prompt=prompt,
            spec_form=replace(spec_form, error_field=field),
            error=message,
        )

    if challenge.kind == "benchmark":
        try:
            body = service.model_spec_attempt(spec_form, participant.handle)
        except service.FormError as exc:
            return again(exc.status_code, exc.message, exc.field)
    elif challenge.kind != "prompt":
        return again(422, "This page cannot submit attempts at this kind of challenge.")
    elif not prompt.strip():
        return again(422, "Write a prompt first: it must not be blank.")
    else:
        try:
            body = AttemptCreate(prompt=prompt, participant=participant.handle)
        except ValidationError as exc:
            return again(422, _validation_message(exc))
    # The form's one-time id makes a double submit (double click, resent form) one attempt.
    idempotency_key = None
    with contextlib.suppress(ValueError):
        idempotency_key = f"web:{participant.id}:{uuid.UUID(hex=submission_id).hex}"
    try:
        submission = submit_attempt(
            work, tenants.as_subject(participant), challenge.id, body, idempotency_key
        )
    except AppError as exc:
        return again(exc.status_code, exc.message, service.error_field(exc))
    work.commit()
    if submission.created:
        telemetry.attempt_reached(submission.kind, "queued")
    return redirect(
        request,
        web,
        _challenge_url(tenant, challenge, f"?notice=submitted#attempt-{submission.attempt.id}"),
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/live")
def live(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    ids: str = "",
) -> Response:
    """The status of the participant's given attempts, each with its card's HTML, and the
    leaderboard panel's HTML when one of them has finished (the page swaps them in)."""
    web, tenant, participant = _visitor(request, session, tenant_slug)
    challenge = _visible_challenge(session, tenant, challenge_slug, participant)
    if participant is None:
        raise not_found()
    attempt_ids = []
    for raw in ids.split(",")[:MAX_LIVE_IDS]:
        try:
            attempt_ids.append(uuid.UUID(raw.strip()))
        except ValueError:
            continue
    attempts = attempt_service.participant_attempts_by_ids(
        session, tenant.id, challenge.id, participant.id, attempt_ids
    )
    cards = service.attempt_cards(session, tenant.id, challenge, attempts, participant.handle)
    finished = any(card.finished for card in cards)
    leaderboard_html = None
    chart_html = None
    if finished:
        board = service.leaderboard_view(
            session, challenge, participant, limit=LEADERBOARD_PANEL_SIZE, offset=0
        )
        leaderboard_html = render_macro(
            "macros.html",
            "leaderboard_panel",
            board,
            _challenge_url(tenant, challenge, "/leaderboard"),
        )
        if challenge.kind == "benchmark":
            chart_html = render_macro(
                "macros.html", "curve_chart", service.leaderboard_chart(challenge, board)
            )
    base = _tenant_url(tenant)
    return json_response(
        request,
        web,
        {
            "attempts": [
                {
                    "id": str(card.view.id),
                    "status": card.view.status,
                    "version": card.version,
                    "finished": card.finished,
                    "html": render_macro("macros.html", "attempt_card", card, base),
                }
                for card in cards
            ],
            "leaderboard_html": leaderboard_html,
            "chart_html": chart_html,
        },
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/leaderboard")
def leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    page_number: Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)] = 1,
) -> Response:
    web, tenant, participant = _visitor(request, session, tenant_slug)
    challenge = _visible_challenge(session, tenant, challenge_slug, participant)
    board = service.leaderboard_view(
        session,
        challenge,
        participant,
        limit=LEADERBOARD_PAGE_SIZE,
        offset=(page_number - 1) * LEADERBOARD_PAGE_SIZE,
    )
    pages = max(1, math.ceil(board.total / LEADERBOARD_PAGE_SIZE))
    your_page = None
    if board.own is not None:
        your_page = math.ceil(board.own.item.rank / LEADERBOARD_PAGE_SIZE)
    chart = None
    if challenge.kind == "benchmark":
        top = board
        if page_number != 1 or len(board.rows) < min(board.total, service.CHART_MODELS):
            top = service.leaderboard_view(
                session, challenge, participant, limit=service.CHART_MODELS, offset=0
            )
        chart = service.leaderboard_chart(challenge, top)
    return page(
        request,
        web,
        "leaderboard.html",
        title=f"Leaderboard · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        board=board,
        page_number=page_number,
        pages=pages,
        your_page=your_page,
        chart=chart,
        base_url=_challenge_url(tenant, challenge),
    )


# Attempt page ---------------------------------------------------------------------------------


def _own_attempt(
    session: Session, tenant: Tenant, participant: Participant | None, attempt_id: uuid.UUID
) -> tuple[Attempt, Challenge, Participant]:
    """The signed-in participant's attempt and its (visible) challenge; 404 for anyone else."""
    if participant is None:
        raise not_found()
    attempt = attempt_service.find_attempt(session, tenant.id, attempt_id)
    if attempt is None or attempt.participant_id != participant.id:
        raise not_found()
    challenge = challenges.find_challenge(session, tenant.id, attempt.challenge_id)
    if challenge is None or challenge.visibility not in service.visible_visibilities(participant):
        raise not_found()
    return attempt, challenge, participant


@router.get("/t/{tenant_slug}/attempts/{attempt_id}")
def attempt_page(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    tasks_page: PageNumber = 1,
) -> Response:
    web, tenant, visitor = _visitor(request, session, tenant_slug)
    attempt, challenge, participant = _own_attempt(session, tenant, visitor, attempt_id)
    card = service.attempt_cards(session, tenant.id, challenge, [attempt], participant.handle)[0]
    tasks: list[service.TaskRow] = []
    tasks_total = 0
    if card.benchmark is not None:
        tasks, tasks_total = service.task_rows(
            session,
            tenant.id,
            attempt.id,
            limit=TASKS_PAGE_SIZE,
            offset=(tasks_page - 1) * TASKS_PAGE_SIZE,
        )
    return page(
        request,
        web,
        "attempt.html",
        title=f"Attempt · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        strategy=service.strategy_of(challenge),
        card=card,
        chart=service.attempt_chart(challenge, card),
        tasks=tasks,
        tasks_total=tasks_total,
        tasks_page=tasks_page,
        tasks_pages=max(1, math.ceil(tasks_total / TASKS_PAGE_SIZE)),
        attempt_url=_tenant_url(tenant, f"attempts/{attempt.id}"),
        base_url=_challenge_url(tenant, challenge),
    )


@router.get("/t/{tenant_slug}/attempts/{attempt_id}/tasks/{task_index}")
def attempt_task(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    task_index: Annotated[int, Path(ge=1, le=10_000_000)],
    request: Request,
    session: SessionDep,
) -> Response:
    """One task of a benchmark attempt with its trials (the participant's redacted view). As
    JSON (`Accept: application/json`) it is the HTML fragment the attempt page unfolds inline."""
    web, tenant, visitor = _visitor(request, session, tenant_slug)
    attempt, challenge, participant = _own_attempt(session, tenant, visitor, attempt_id)
    found = service.task_trials(session, tenant.id, attempt.id, task_index)
    if found is None:
        raise not_found()
    task, trials = found
    if "application/json" in request.headers.get("accept", ""):
        html = render_macro("macros.html", "task_trials", task, trials)
        return json_response(request, web, {"task_index": task_index, "html": html})
    return page(
        request,
        web,
        "task.html",
        title=f"Task {task.task_id} · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        task=task,
        trials=trials,
        attempt_url=_tenant_url(tenant, f"attempts/{attempt.id}"),
        base_url=_challenge_url(tenant, challenge),
    )


# Admin view -----------------------------------------------------------------------------------


def _admin_key(request: Request, session: Session, tenant: Tenant) -> ApiKey | None:
    """The admin's key, through its live admin session, checked against the database on
    every request (sign-out, expiry and revocation are immediate)."""
    token = auth.admin_session_token(request)
    return sessions.admin_key_of(session, tenant.id, token) if token else None


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
    web, tenant, participant = _visitor(request, session, tenant_slug)
    key = _admin_key(request, session, tenant)
    if key is None:
        code = "key-invalid" if request.cookies.get(auth.ADMIN_COOKIE) else None
        response = redirect(
            request,
            web,
            _tenant_url(tenant, "admin/sign-in" + (f"?notice={code}" if code else "")),
        )
        if code:
            auth.clear_admin_cookie(request, response, tenant.slug)
        return response
    newest = challenges.newest_challenges(session, tenant.id, limit=200)
    counts = attempt_service.status_counts(session, tenant.id, [c.id for c in newest])
    rows = [(c, challenge_status(c), service.strategy_of(c), counts[c.id]) for c in newest]
    return page(
        request,
        web,
        "admin.html",
        admin_page=True,
        title=f"Admin · {tenant.name}",
        tenant=tenant,
        participant=participant,
        admin_key=key,
        rows=rows,
        errors=attempt_service.recent_errors(session, tenant.id, limit=20),
        usage=tenants.tenant_usage(session, tenant.id, get_settings()),
        plugins=registry.list_registered(session),
        notice=_notice(notice),
    )


@router.get("/t/{tenant_slug}/admin/sign-in")
def admin_sign_in_form(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    web, tenant, _ = _visitor(request, session, tenant_slug)
    return _admin_sign_in_page(request, web, tenant, notice=_notice(notice))


@router.post("/t/{tenant_slug}/admin/sign-in")
def admin_sign_in(
    tenant_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    api_key: Annotated[str, Form()] = "",
) -> Response:
    session = work.session
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
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
    except Unauthorized:
        caller = None
    if not isinstance(caller, TenantAdmin) or caller.tenant_id != tenant.id:
        auth.limits.sign_in_failed(None, None, address)
        return _admin_sign_in_page(
            request,
            web,
            tenant,
            status_code=401,
            error=f"This is not a valid admin API key of {tenant.name}.",
        )
    token = sessions.start_admin_session(
        session, tenant.id, caller.api_key_id, auth.admin_session_token(request)
    )
    work.commit()
    response = redirect(request, web, _tenant_url(tenant, "admin?notice=admin-signed-in"))
    auth.set_admin_cookie(request, response, tenant.slug, token)
    return response


@router.post("/t/{tenant_slug}/admin/sign-out")
def admin_sign_out(
    tenant_slug: str, request: Request, work: UnitOfWorkDep, csrf_token: CsrfField = ""
) -> Response:
    session = work.session
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    token = auth.admin_session_token(request)
    if token is not None:
        sessions.end_session(session, token)
        work.commit()
    response = redirect(request, web, _tenant_url(tenant, "admin/sign-in?notice=admin-signed-out"))
    auth.clear_admin_cookie(request, response, tenant.slug)
    return response


@router.post("/t/{tenant_slug}/admin/attempts/{attempt_id}/retry")
def admin_retry(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    session = work.session
    web, tenant, _ = _visitor(request, session, tenant_slug)
    _require_csrf(web, csrf_token)
    if _admin_key(request, session, tenant) is None:
        raise not_found()
    try:
        retry_attempt(work, tenant.id, attempt_id)
    except AppError:
        work.rollback()
        return redirect(request, web, _tenant_url(tenant, "admin?notice=not-retryable"))
    work.commit()
    return redirect(request, web, _tenant_url(tenant, "admin?notice=requeued"))


# Anything else under a tenant: an HTML 404 rather than the API's JSON one.
@router.get("/t/{tenant_slug}/{rest:path}")
def unknown_page(tenant_slug: str, rest: str) -> Response:
    raise not_found()
