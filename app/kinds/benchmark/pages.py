"""The benchmark kind's own pages: marking a submission final on a split challenge, and the
challenge's private board once revealed (docs/boards.md, "Private parts")."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Form, Request
from starlette.responses import Response

from app.kinds.api import AppError, NotFound
from app.kinds.api.http import SessionDep, UnitOfWorkDep
from app.kinds.api.pages import (
    CsrfField,
    HtmlRoute,
    ListPage,
    PageError,
    challenge_url,
    form_visit,
    not_found,
    own_attempt,
    page,
    pages_of,
    player_of,
    redirect,
    tenant_url,
    visible_challenge,
    visitor,
)
from app.kinds.api.services import as_subject, to_public_view
from app.kinds.api.web import board_audience
from app.kinds.benchmark import finals

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

PRIVATE_BOARD_PAGE_SIZE = 50


@router.post("/t/{tenant_slug}/attempts/{attempt_id}/final")
def mark_final(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    final: Annotated[str, Form()] = "true",
) -> Response:
    """Marks the signed-in participant's attempt final (`final=true`) or takes the mark back;
    back to the attempt's page, which shows the mark."""
    visit = form_visit(request, work.session, tenant_slug, csrf_token)
    participant = player_of(
        visit, "Sign in to mark", f"Sign in with an account of {visit.tenant.name}."
    )
    if own_attempt(work.session, visit.tenant, participant, attempt_id) is None:
        raise not_found()
    try:
        finals.mark_final(work, as_subject(participant), attempt_id, final=final == "true")
    except NotFound:
        raise not_found() from None
    except AppError as exc:
        work.rollback()
        raise PageError(exc.status_code, "Final submissions", exc.message) from None
    work.commit()
    return redirect(request, visit.web, tenant_url(visit.tenant, f"attempts/{attempt_id}#final"))


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/private-leaderboard")
def private_board(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
) -> Response:
    """The private board of a split challenge: to everyone once it has closed, to accounts
    with the admin role before."""
    visit = visitor(request, session, tenant_slug)
    challenge = visible_challenge(session, visit, challenge_slug)
    try:
        board = finals.private_board(
            session,
            challenge,
            board_audience(visit.participant),
            limit=PRIVATE_BOARD_PAGE_SIZE,
            offset=(page_number - 1) * PRIVATE_BOARD_PAGE_SIZE,
        )
    except NotFound:
        raise not_found() from None
    except AppError as exc:
        raise PageError(exc.status_code, "Private board", exc.message) from None
    return page(
        request,
        visit.web,
        "kinds/benchmark/private_board.html",
        title=f"Private board · {challenge.title}",
        tenant=visit.tenant,
        participant=visit.participant,
        challenge=to_public_view(challenge),
        board=board,
        page_number=page_number,
        pages=pages_of(board.total, PRIVATE_BOARD_PAGE_SIZE),
        base_url=challenge_url(visit.tenant, challenge),
    )
