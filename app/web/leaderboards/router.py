"""The full leaderboard of a challenge: rank, medals for the top three, the columns the
strategy ranks by (and the kind's own), the signed-in participant's row highlighted,
pagination; readable without signing in for public challenges."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from starlette.responses import Response

from app.challenge.registry import kind_as
from app.challenge.service import to_public_view
from app.kit.deps import SessionDep
from app.web.leaderboards.service import (
    LEADERBOARD_PAGE_SIZE,
    leaderboard_chart,
    leaderboard_view,
)
from app.web.rendering import HtmlRoute, page, redirect
from app.web.visitors import ListPage, challenge_url, pages_of, visible_challenge, visitor
from app.web.web_kind import WebKind

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


@router.get("/t/{tenant_slug}/challenges/{challenge_slug}/leaderboard")
def leaderboard(
    tenant_slug: str,
    challenge_slug: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
) -> Response:
    visit = visitor(request, session, tenant_slug)
    web, tenant, participant = visit
    challenge = visible_challenge(session, visit, challenge_slug)
    own_page = kind_as(challenge.kind, WebKind).leaderboard_path
    if own_page is not None:
        query = f"?{request.url.query}" if request.url.query else ""
        return redirect(request, web, challenge_url(tenant, challenge, own_page + query))
    board = leaderboard_view(
        session,
        challenge,
        participant,
        limit=LEADERBOARD_PAGE_SIZE,
        offset=(page_number - 1) * LEADERBOARD_PAGE_SIZE,
    )
    pages = pages_of(board.total, LEADERBOARD_PAGE_SIZE)
    your_page = None
    if board.own is not None and board.frozen_at is None:
        your_page = math.ceil(board.own.item.rank / LEADERBOARD_PAGE_SIZE)
    chart = leaderboard_chart(session, challenge, participant, board, first_page=page_number == 1)
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
        base_url=challenge_url(tenant, challenge),
    )
