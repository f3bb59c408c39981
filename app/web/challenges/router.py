"""Challenge pages: the home page, a tenant's challenges, a challenge (goal, facts, attempt
form, the participant's attempts updating live, the leaderboard beside them), submitting an
attempt from its form. What differs between kinds is the kind's (`app.web.web_kind`).

Visibility: public challenges are readable by anyone (playing needs an account of the
tenant); unlisted ones by the tenant's signed-in participants; private ones never appear here.
Whatever a visitor may not see answers 404, as the API does.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Query, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.attempt import service as attempt_service
from app.attempt import unscored
from app.attempt.schemas import PracticeCreate, UnscoredRunRead
from app.challenge.config import ChallengeStatus
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.challenge.service import challenge_status, config_of, to_public_view
from app.competition import service as competition_service
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import AppError
from app.kit.observability import metrics as telemetry
from app.team import service as team_service
from app.tenant import service as tenants
from app.web import auth
from app.web.attempts.service import ATTEMPTS_PAGE_SIZE, AttemptCard, attempt_cards
from app.web.challenges import service
from app.web.challenges.competition import competition_parts
from app.web.forms import FormError, error_field
from app.web.leaderboards.service import (
    LEADERBOARD_PANEL_SIZE,
    leaderboard_chart,
    leaderboard_view,
    strategy_text,
)
from app.web.rendering import (
    HtmlRoute,
    PageError,
    json_response,
    not_found,
    page,
    redirect,
    render_macro,
)
from app.web.run_forms import RunListing, run_body, run_fields, run_list_response
from app.web.visitors import (
    CsrfField,
    ListPage,
    PageNumber,
    Visitor,
    challenge_url,
    form_visit,
    pages_of,
    play_post,
    tenant_named,
    tenant_url,
    visible_challenge,
    visitor,
)
from app.web.visitors import notice as notice_text
from app.web.web_kind import WebKind

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

MAX_LIVE_IDS = 50
HOME_PAGE_SIZE = 20


@router.get("/")
def home(request: Request, session: SessionDep, page_number: ListPage = 1) -> Response:
    rows, total = service.home_rows(
        session, limit=HOME_PAGE_SIZE, offset=(page_number - 1) * HOME_PAGE_SIZE
    )
    return page(
        request,
        auth.load_session(request),
        "home.html",
        rows=rows,
        page_number=page_number,
        pages=pages_of(total, HOME_PAGE_SIZE),
    )


@router.get("/t/{tenant_slug}")
def tenant_root(tenant_slug: str, request: Request, session: SessionDep) -> Response:
    tenant = tenant_named(session, tenant_slug)
    return redirect(request, None, tenant_url(tenant))


@router.get("/t/{tenant_slug}/")
def challenge_list(
    tenant_slug: str, request: Request, session: SessionDep, notice: str | None = None
) -> Response:
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    groups = service.challenge_cards(session, tenant.id, participant, visit.visibilities)
    return page(
        request,
        web,
        "challenges.html",
        title=f"Challenges · {tenant.name}",
        tenant=tenant,
        participant=participant,
        groups=groups,
        notice=notice_text(notice),
    )


def challenge_page_response(
    request: Request,
    session: Session,
    visit: Visitor,
    challenge: Challenge,
    *,
    attempts_page: int = 1,
    status_code: int = 200,
    fields: Mapping[str, str] | None = None,
    error: str | None = None,
    error_in: str | None = None,
    notice: str | None = None,
    play_error: FormError | None = None,
    team_code: str | None = None,
    team_error: str | None = None,
    tab: str | None = None,
) -> Response:
    """The challenge page; a kind's own form routes show it again with a refused form's
    `fields` and `play_error` (see `WebKind.play`), the team forms with `team_error`, or a
    team's invite code just made (`team_code`: shown this once, never kept)."""
    web, tenant, participant = visit
    team = None
    if participant is not None:
        team = team_service.team_of(session, tenant.id, challenge.id, participant.id)
    parts = service.kind_parts(
        session,
        challenge,
        participant,
        fields or {},
        error_in,
        params=dict(request.query_params),
        play_error=play_error,
    )
    cards: list[AttemptCard] = []
    attempts_total = 0
    left = None
    board = None
    chart = None
    if participant is not None and parts.play is None:
        # A member's attempts are their team's: every member sees them all.
        player = participant.id if team is None else team.id
        attempts, attempts_total = attempt_service.participant_attempts(
            session,
            tenant.id,
            challenge.id,
            player,
            limit=ATTEMPTS_PAGE_SIZE,
            offset=(attempts_page - 1) * ATTEMPTS_PAGE_SIZE,
        )
        shown = participant.handle if team is None else team.name
        cards = attempt_cards(session, tenant.id, challenge, attempts, shown)
        if challenge_status(challenge) is ChallengeStatus.OPEN:
            # What is left to play only means something while the challenge is open.
            left = attempt_service.participant_attempts_left(
                session, tenant.id, challenge.limits, challenge.id, participant.id
            )
    if parts.play is None:
        board = leaderboard_view(
            session, challenge, participant, limit=LEADERBOARD_PANEL_SIZE, offset=0
        )
        chart = leaderboard_chart(session, challenge, participant, board, first_page=True)
    public = to_public_view(challenge)
    if error is not None and public.status is ChallengeStatus.CLOSED:
        # A late submission: one message, above the form that keeps what was written.
        error = (
            f"Not submitted: {error}, so it takes no more attempts and its leaderboard is "
            "final. What you wrote is kept below."
        )
    base_url = challenge_url(tenant, challenge)
    submission_id = uuid.uuid4().hex
    competition = competition_parts(session, challenge, participant, tab)
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
        strategy=strategy_text(challenge),
        kind=parts,
        cards=cards,
        attempts_total=attempts_total,
        attempts_left=left,
        attempts_page=attempts_page,
        attempts_pages=pages_of(attempts_total, ATTEMPTS_PAGE_SIZE),
        board=board,
        chart=chart,
        error=error,
        form_page={
            "csrf_token": web.csrf_token,
            "submission_id": submission_id,
            "base_url": base_url,
            "tenant_slug": tenant.slug,
            "error": error,
        },
        notice=notice,
        base_url=base_url,
        team=team,
        teams_allowed=challenge.limits.max_team_size is not None,
        team_code=team_code,
        team_error=team_error,
        competition=competition,
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}")
def challenge_page(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    notice: str | None = None,
    attempts_page: PageNumber = 1,
    tab: Annotated[str | None, Query(max_length=32)] = None,
) -> Response:
    visit = visitor(request, session, tenant_slug)
    challenge = visible_challenge(session, visit, challenge_slug)
    return challenge_page_response(
        request,
        session,
        visit,
        challenge,
        attempts_page=attempts_page,
        notice=notice_text(notice),
        tab=tab,
    )


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/rules")
def accept_rules(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    accept: Annotated[str, Form()] = "",
) -> Response:
    """The signed-in participant accepts the challenge's rules as they are now (the form's
    box ticked); back to the challenge page."""
    visit = form_visit(request, work.session, tenant_slug, csrf_token)
    challenge = visible_challenge(work.session, visit, challenge_slug)
    if visit.participant is None:
        raise PageError(
            401, "Sign in to accept the rules", f"Sign in with an account of {visit.tenant.name}."
        )
    if accept != "yes":
        return redirect(request, visit.web, challenge_url(visit.tenant, challenge, "?tab=rules"))
    try:
        competition_service.accept_rules(
            work.session, tenants.as_subject(visit.participant), challenge.id, None
        )
    except AppError as exc:
        work.rollback()
        raise PageError(exc.status_code, "Rules", exc.message) from None
    work.commit()
    return redirect(
        request, visit.web, challenge_url(visit.tenant, challenge, "?notice=rules-accepted")
    )


async def form_fields(request: Request) -> dict[str, str]:
    """The attempt form's text fields as sent (each kind's form sends its own). Browsers send
    a textarea's line breaks as CRLF: the fields hold what the person typed."""
    form = await request.form()
    return {
        name: value.replace("\r\n", "\n") for name, value in form.items() if isinstance(value, str)
    }


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/attempts")
def submit(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    session = work.session
    visit, challenge, participant = play_post(
        request,
        session,
        tenant_slug,
        challenge_slug,
        fields.get("csrf_token", ""),
        "Sign in to play",
        "Sign in or create an account of {tenant} to submit attempts.",
    )
    web, tenant = visit.web, visit.tenant
    submitter = tenants.as_subject(participant)
    kind = kind_as(challenge.kind, WebKind)

    def again(status_code: int, message: str, field: str | None = None) -> Response:
        work.rollback()
        return challenge_page_response(
            request,
            session,
            visit,
            challenge,
            status_code=status_code,
            fields=fields,
            error=message,
            error_in=field,
        )

    try:
        body = kind.form_submission(config_of(challenge), fields, participant.handle)
    except FormError as exc:
        return again(exc.status_code, exc.message, exc.field)
    # The form's one-time id makes a double submit (double click, resent form) one attempt.
    idempotency_key = None
    with contextlib.suppress(ValueError):
        submission_id = uuid.UUID(hex=fields.get("submission_id", ""))
        idempotency_key = f"web:{participant.id}:{submission_id.hex}"
    try:
        submission = attempt_service.submit_attempt(
            work, submitter, challenge.id, body, idempotency_key
        )
    except AppError as exc:
        return again(exc.status_code, exc.message, error_field(exc, kind.form_fields))
    work.commit()
    if submission.created:
        telemetry.attempt_reached(submission.kind, "queued")
    return redirect(
        request,
        web,
        challenge_url(tenant, challenge, f"?notice=submitted#attempt-{submission.attempt.id}"),
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
    leaderboard panel's HTML (and the kind's chart) when one of them has finished (the page
    swaps them in)."""
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    challenge = visible_challenge(session, visit, challenge_slug)
    if participant is None:
        raise not_found()
    attempt_ids = []
    for raw in ids.split(",")[:MAX_LIVE_IDS]:
        try:
            attempt_ids.append(uuid.UUID(raw.strip()))
        except ValueError:
            continue
    team = team_service.team_of(session, tenant.id, challenge.id, participant.id)
    attempts = attempt_service.participant_attempts_by_ids(
        session, tenant.id, challenge.id, participant.id if team is None else team.id, attempt_ids
    )
    shown = participant.handle if team is None else team.name
    cards = attempt_cards(session, tenant.id, challenge, attempts, shown)
    leaderboard_html = None
    chart_html = None
    if any(card.finished for card in cards):
        board = leaderboard_view(
            session, challenge, participant, limit=LEADERBOARD_PANEL_SIZE, offset=0
        )
        leaderboard_html = render_macro(
            "macros.html",
            "leaderboard_panel",
            board,
            challenge_url(tenant, challenge, "/leaderboard"),
        )
        chart = leaderboard_chart(session, challenge, participant, board, first_page=True)
        if chart is not None:
            chart_html = render_macro("macros.html", "curve_chart", chart)
    base = tenant_url(tenant)
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


# Practice: unscored runs of the participant's own ------------------------------------------

PRACTICE_RUNS_SHOWN = 10


def _practice_listing(session: Session, visit: Visitor, challenge: Challenge) -> RunListing:
    """The participant's practice runs (none for a visitor not signed in)."""
    tenant, participant = visit.tenant, visit.participant
    runs: list[UnscoredRunRead] = []
    total = 0
    if participant is not None:
        listed = unscored.list_practice(
            session,
            tenants.as_subject(participant),
            challenge.id,
            None,
            limit=PRACTICE_RUNS_SHOWN,
            offset=0,
        )
        runs, total = listed.items, listed.total
    return RunListing(
        title="Your practice runs",
        runs=runs,
        total=total,
        empty_text="No practice runs yet.",
        page_url=challenge_url(tenant, challenge, "/practice"),
        kind=challenge.kind,
    )


def _practice_page(
    request: Request,
    session: Session,
    visit: Visitor,
    challenge: Challenge,
    *,
    values: Mapping[str, str] | None = None,
    error: str | None = None,
    error_in: str | None = None,
    status_code: int = 200,
) -> Response:
    web, tenant, participant = visit
    fields = run_fields(challenge.kind)
    status = challenge_status(challenge)
    quota = None
    closed_reason = None
    if participant is None:
        closed_reason = f"Sign in with an account of {tenant.name} to practise."
    else:
        subject = tenants.as_subject(participant)
        quota = unscored.practice_left(session, subject, challenge.id, None)
        if not fields:
            closed_reason = "This kind of challenge has no practice runs."
        elif status is not ChallengeStatus.OPEN:
            closed_reason = "Practice is open while the challenge is."
        elif quota.max_practice_per_day == 0:
            closed_reason = "This challenge has no practice runs."
    base = challenge_url(tenant, challenge)
    return page(
        request,
        web,
        "runs.html",
        status_code=status_code,
        title=f"Practice · {challenge.title} · {tenant.name}",
        tenant=tenant,
        participant=participant,
        crumbs=[(tenant.name, tenant_url(tenant)), (challenge.title, base)],
        heading="Practice",
        intro="Try an idea before you submit it: a practice run is run as an attempt is and "
        "shows you the model's exact reply, but it is on no leaderboard and counts against "
        "none of your attempts. Only you see it.",
        form_title="Practise",
        quota=quota,
        closed_reason=closed_reason,
        action=f"{base}/practice",
        fields=fields,
        values=values or {},
        error=error,
        error_in=error_in,
        button="Run it (unscored)",
        listing=_practice_listing(session, visit, challenge),
        back_url=base,
        back_text="Back to the challenge",
    )


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/practice")
def practice_page(
    tenant_slug: str, challenge_slug: str, request: Request, session: SessionDep
) -> Response:
    """The participant's practice runs with the form that starts one; while one is
    unfinished, the page's script refreshes the list alone."""
    visit = visitor(request, session, tenant_slug)
    challenge = visible_challenge(session, visit, challenge_slug)
    return _practice_page(request, session, visit, challenge)


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/practice/live")
def practice_live(
    tenant_slug: str, challenge_slug: str, request: Request, session: SessionDep
) -> Response:
    """The participant's practice-run list alone, for the page's script while a run is
    pending."""
    visit = visitor(request, session, tenant_slug)
    challenge = visible_challenge(session, visit, challenge_slug)
    if visit.participant is None:
        raise not_found()
    return run_list_response(request, visit.web, _practice_listing(session, visit, challenge))


@router.post("/t/{tenant_slug}/challenges/{challenge_slug}/practice")
def practise(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    session = work.session
    visit, challenge, participant = play_post(
        request,
        session,
        tenant_slug,
        challenge_slug,
        fields.get("csrf_token", ""),
        "Sign in to practise",
        "Sign in with an account of {tenant}.",
    )
    web, tenant = visit.web, visit.tenant
    body = PracticeCreate(**run_body(challenge.kind, fields))
    try:
        started = unscored.start_practice(work, tenants.as_subject(participant), challenge.id, body)
    except AppError as exc:
        work.rollback()
        return _practice_page(
            request,
            session,
            visit,
            challenge,
            values=fields,
            error=exc.message,
            error_in=error_field(exc, [f.path for f in run_fields(challenge.kind)]),
            status_code=exc.status_code,
        )
    work.commit()
    telemetry.attempt_reached(started.kind, "queued")
    return redirect(request, web, challenge_url(tenant, challenge, "/practice"))
