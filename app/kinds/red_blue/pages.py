"""The red_blue kind's own web routes (mounted with the web UI's; see `web.py`): the defense
and attack forms of the challenge page, the live fragment that page polls, the full boards,
a match's page (as its visitor may see it, and a tenant admin's view of it under the admin
pages, where the admin cookie is sent), and the admin's re-run of a match that ended in
error. They call the kind's services, never its repository."""

from __future__ import annotations

import contextlib
import math
import uuid
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from pydantic import ValidationError
from starlette.responses import Response

from app.kinds.api import AppError, Visibility, telling_first
from app.kinds.api.http import SessionDep, UnitOfWorkDep
from app.kinds.api.pages import (
    CsrfField,
    HtmlRoute,
    ListPage,
    Visitor,
    admin_form,
    admin_page_visit,
    challenge_page_response,
    challenge_url,
    form_fields,
    json_response,
    not_found,
    page,
    play_post,
    redirect,
    render_macro,
    visible_challenge,
    visitor,
)
from app.kinds.api.pages import notice as notice_text
from app.kinds.api.services import as_subject, config_of, get_challenge, to_public_view
from app.kinds.api.storage import Challenge
from app.kinds.api.web import FormError, board_audience, error_field
from app.kinds.red_blue import service
from app.kinds.red_blue.models import Side
from app.kinds.red_blue.schemas import AttackCreate, DefenseCreate
from app.kinds.red_blue.web import (
    BOARD_PAGE_SIZE,
    KIND_TEMPLATE,
    board_panels,
    match_detail,
    play_state,
    version_of,
)

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

FORM_FIELDS = ("system_prompt", "prompt")


def _red_blue(session: SessionDep, visit: Visitor, challenge_slug: str) -> Challenge:
    challenge = visible_challenge(session, visit, challenge_slug)
    if challenge.kind != service.KIND_NAME:
        raise not_found()
    return challenge


def _refusal(error: ValidationError, what: str) -> str:
    first = telling_first(error.errors())[0]
    message = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
    return f"Your {what} {message[0].lower()}{message[1:]}." if message else f"Invalid {what}."


def _submit_entry(
    request: Request,
    work: UnitOfWorkDep,
    tenant_slug: str,
    challenge_slug: str,
    fields: dict[str, str],
    side: str,
) -> Response:
    session = work.session
    visit, challenge, participant = play_post(
        request,
        session,
        tenant_slug,
        challenge_slug,
        fields.get("csrf_token", ""),
        "Sign in to play",
        "Sign in or create an account of {tenant} to submit defenses and attacks.",
        find=_red_blue,
    )
    web, tenant = visit.web, visit.tenant
    fields = {**fields, "side": side}
    field, what = ("system_prompt", "defense") if side == "blue" else ("prompt", "attack")

    def again(exc: FormError) -> Response:
        work.rollback()
        response = challenge_page_response(
            request,
            session,
            visit,
            challenge,
            status_code=exc.status_code,
            fields=fields,
            play_error=exc,
        )
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    text = fields.get(field, "")
    if not text.strip():
        return again(FormError(f"Write your {what} first: it must not be blank.", field=field))
    submitter = as_subject(participant)
    # The form's one-time id makes a double submit (double click, resent form) one entry.
    idempotency_key = None
    with contextlib.suppress(ValueError):
        submission_id = uuid.UUID(hex=fields.get("submission_id", ""))
        idempotency_key = f"web:{participant.id}:{submission_id.hex}"
    try:
        if side == "blue":
            defense = DefenseCreate(system_prompt=text)
            submission = service.submit_defense(
                work, submitter, challenge.id, defense, idempotency_key
            )
        else:
            attack = AttackCreate(prompt=text)
            submission = service.submit_attack(
                work, submitter, challenge.id, attack, idempotency_key
            )
    except ValidationError as exc:
        return again(FormError(_refusal(exc, what), field=field))
    except AppError as exc:
        found = error_field(exc, FORM_FIELDS)
        message = exc.message
        if found is not None:
            message = f"Your {what} {exc.message.split(': ', 1)[-1]}."
        return again(
            FormError(
                message, field=found or field, status_code=exc.status_code, headers=exc.headers
            )
        )
    work.commit()
    anchor = f"{'defense' if side == 'blue' else 'attack'}-{submission.entry.id}"
    notice = "defense-submitted" if side == "blue" else "attack-submitted"
    return redirect(
        request, web, challenge_url(tenant, challenge, f"?side={side}&notice={notice}#{anchor}")
    )


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/defenses")
def submit_defense(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    return _submit_entry(request, work, tenant_slug, challenge_slug, fields, "blue")


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/attacks")
def submit_attack(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    return _submit_entry(request, work, tenant_slug, challenge_slug, fields, "red")


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/red-blue/live")
def live(tenant_slug: str, challenge_slug: str, request: Request, session: SessionDep) -> Response:
    """The page's live regions (the participant's entries and matches, the standings, the two
    boards), each with a version the page compares before swapping it in, and whether
    anything is still running (the page stops polling when nothing is)."""
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    challenge = _red_blue(session, visit, challenge_slug)
    state = play_state(
        session, challenge, config_of(challenge), participant, dict(request.query_params)
    )
    context = {"base_url": challenge_url(tenant, challenge), "tenant_slug": tenant.slug}
    regions = {}
    for region, macro in (
        ("rb-entries", "entries_region"),
        ("rb-matches", "matches_region"),
        ("rb-standings", "standings_region"),
        ("rb-board-red", "board_red_region"),
        ("rb-board-blue", "board_blue_region"),
    ):
        html = render_macro(KIND_TEMPLATE, macro, state, context)
        regions[region] = {"version": version_of(html), "html": html}
    return json_response(
        request, web, {"live": state.live, "summary": state.summary, "regions": regions}
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/boards")
def boards(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    side: str = "red",
    page_number: ListPage = 1,
) -> Response:
    """One side's full board (ratings with intervals, points, matches, wins), paginated;
    readable without signing in for public challenges."""
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    challenge = _red_blue(session, visit, challenge_slug)
    chosen = Side.BLUE if side == "blue" else Side.RED
    panel = board_panels(
        session,
        challenge,
        participant,
        limit=BOARD_PAGE_SIZE,
        offset=(page_number - 1) * BOARD_PAGE_SIZE,
    )[chosen.value]
    return page(
        request,
        web,
        "kinds/red_blue/boards.html",
        title=f"{chosen.value.capitalize()} board · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        board=panel,
        standings=service.challenge_standings(session, challenge, board_audience(participant)),
        page_number=page_number,
        pages=max(1, math.ceil(panel.total / BOARD_PAGE_SIZE)),
        base_url=challenge_url(tenant, challenge),
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}")
def match_page(
    tenant_slug: str,
    challenge_slug: str,
    match_id: uuid.UUID,
    request: Request,
    session: SessionDep,
) -> Response:
    """One match of the challenge: status, both sides, each category's verdict and points,
    timing; the texts (system prompt, attack, output) only as the service lets the visitor
    see them (a signed-in participant of the match: their own side's and the output; anyone
    else: none). 404 for an unknown match, a match of another challenge, or a challenge the
    visitor may not see (an unlisted one signed out, a private one always)."""
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    challenge = _red_blue(session, visit, challenge_slug)
    viewer = as_subject(participant) if participant is not None else None
    try:
        match = service.read_challenge_match(
            session, challenge, match_id, viewer, board_audience(participant)
        )
    except AppError:
        raise not_found() from None
    # A member's side of the match is their team's.
    handle = None if viewer is None else service.player_at(session, viewer, challenge.id)[1]
    return page(
        request,
        web,
        "kinds/red_blue/match.html",
        title=f"Match · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        detail=match_detail(challenge, match, handle),
        base_url=challenge_url(tenant, challenge),
        challenge_link=True,
        admin_url=None,
    )


@router.get("/t/{tenant_slug}/admin/red-blue/matches/{match_id}")
def admin_match_page(
    tenant_slug: str,
    match_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    notice: str | None = None,
) -> Response:
    """A match as a tenant admin sees it (every text, the full reason of an error, a re-run
    button for a match in error), of any challenge of the tenant. Under the admin pages
    because the admin cookie is sent there only; signed out, the admin signs in first."""
    visit = admin_page_visit(request, session, tenant_slug)
    tenant = visit.tenant
    try:
        match = service.read_match(session, visit.subject, match_id)
        challenge = get_challenge(session, tenant.id, match.challenge_id)
    except AppError:
        raise not_found() from None
    return visit.page(
        "kinds/red_blue/match.html",
        title=f"Match · {challenge.title} · admin",
        challenge=to_public_view(challenge),
        detail=match_detail(challenge, match, None, admin=True),
        base_url=challenge_url(tenant, challenge),
        # The web UI never shows a private challenge's page.
        challenge_link=challenge.visibility != Visibility.PRIVATE,
        admin_url=visit.url("admin"),
        notice=notice_text(notice),
    )


@router.post("/t/{tenant_slug}/admin/red-blue/matches/{match_id}/rerun")
def admin_rerun_match(
    tenant_slug: str,
    match_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    back: Annotated[str, Form()] = "",
) -> Response:
    """Queues a match in error again; back on the admin page, or on the match's admin page
    when the button was there (`back=match`)."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    where = f"admin/red-blue/matches/{match_id}" if back == "match" else "admin"
    try:
        service.rerun_match(work, visit.subject, match_id)
    except AppError:
        work.rollback()
        return visit.redirect(f"{where}?notice=match-not-rerunnable")
    work.commit()
    return visit.redirect(f"{where}?notice=match-requeued")
