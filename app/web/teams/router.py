"""A participant's team at a challenge, from the challenge page's team section (docs/teams.md):
create one (its invite code shown on the page that answers, once), join with a code, leave,
or make a new code. Each post is the API's rule through the same service; a refusal shows
the challenge page again with its message."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from starlette.responses import Response

from app.kit.deps import UnitOfWorkDep
from app.kit.errors import AppError, detail_text, error_details
from app.team import service
from app.team.schemas import TeamCreate, TeamJoin
from app.web.challenges.router import challenge_page_response, form_fields
from app.web.rendering import HtmlRoute, redirect
from app.web.visitors import Play, challenge_url, play_post

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

_PATH = "/t/{tenant_slug}/challenges/{challenge_slug}/team"
_TITLE = "Sign in to play in a team"
_DETAIL = "Sign in or create an account of {tenant} to make or join a team."


def _opened(request: Request, work: UnitOfWorkDep, tenant: str, slug: str, csrf: str) -> Play:
    return play_post(request, work.session, tenant, slug, csrf, _TITLE, _DETAIL)


def _refused(
    request: Request, work: UnitOfWorkDep, play: Play, message: str, status_code: int = 409
) -> Response:
    work.rollback()
    return challenge_page_response(
        request,
        work.session,
        play.visit,
        play.challenge,
        status_code=status_code,
        team_error=message,
    )


def _invalid(request: Request, work: UnitOfWorkDep, play: Play, error: ValidationError) -> Response:
    """The form's value refused as the API words it (its telling error first)."""
    first = error_details(error.errors())[0]
    return _refused(request, work, play, detail_text(first), 422)


def _refusal(request: Request, work: UnitOfWorkDep, play: Play, error: AppError) -> Response:
    return _refused(request, work, play, error.message, error.status_code)


def _code_page(request: Request, work: UnitOfWorkDep, play: Play, code: str) -> Response:
    work.commit()
    return challenge_page_response(
        request, work.session, play.visit, play.challenge, team_code=code
    )


@router.post(_PATH)
def create_team(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    play = _opened(request, work, tenant_slug, challenge_slug, fields.get("csrf_token", ""))
    try:
        body = TeamCreate(participant=play.participant.handle, name=fields.get("name", ""))
        created = service.create_team(work.session, play.visit.tenant.id, play.challenge.id, body)
    except ValidationError as exc:
        return _invalid(request, work, play, exc)
    except AppError as exc:
        return _refusal(request, work, play, exc)
    return _code_page(request, work, play, created.invite_code)


@router.post(_PATH + "/join")
def join_team(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    play = _opened(request, work, tenant_slug, challenge_slug, fields.get("csrf_token", ""))
    try:
        code = fields.get("invite_code", "").strip()
        body = TeamJoin(participant=play.participant.handle, invite_code=code)
        service.join_team(work.session, play.visit.tenant.id, play.challenge.id, body)
    except ValidationError as exc:
        return _invalid(request, work, play, exc)
    except AppError as exc:
        return _refusal(request, work, play, exc)
    work.commit()
    url = challenge_url(play.visit.tenant, play.challenge, "?notice=team-joined#team-title")
    return redirect(request, play.visit.web, url)


def _own_team(work: UnitOfWorkDep, play: Play) -> uuid.UUID | None:
    team = service.team_of(
        work.session, play.visit.tenant.id, play.challenge.id, play.participant.id
    )
    return None if team is None else team.id


@router.post(_PATH + "/leave")
def leave_team(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    play = _opened(request, work, tenant_slug, challenge_slug, fields.get("csrf_token", ""))
    team_id = _own_team(work, play)
    if team_id is not None:
        try:
            service.leave_team(
                work.session,
                play.visit.tenant.id,
                play.challenge.id,
                team_id,
                play.participant.handle,
            )
        except AppError as exc:
            return _refusal(request, work, play, exc)
        work.commit()
    url = challenge_url(play.visit.tenant, play.challenge, "?notice=team-left#team-title")
    return redirect(request, play.visit.web, url)


@router.post(_PATH + "/invite-code")
def new_invite_code(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    work: UnitOfWorkDep,
    fields: dict[str, str] = Depends(form_fields),
) -> Response:
    play = _opened(request, work, tenant_slug, challenge_slug, fields.get("csrf_token", ""))
    team_id = _own_team(work, play)
    if team_id is None:
        return _refused(request, work, play, "You are in no team of this challenge.")
    try:
        code = service.new_invite_code(
            work.session,
            play.visit.tenant.id,
            play.challenge.id,
            team_id,
            play.participant.handle,
        )
    except AppError as exc:
        return _refusal(request, work, play, exc)
    return _code_page(request, work, play, code.invite_code)
