"""Attempt pages: one attempt of the signed-in participant with what its kind shows of it
(its trials; a benchmark attempt's curve and tasks, paged), and one task with its trials (a
page, or the fragment the attempt page unfolds, as JSON)."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Request
from starlette.responses import Response

from app.challenge.registry import kind_as
from app.challenge.service import config_of, to_public_view
from app.kit.deps import SessionDep
from app.web.attempts import service
from app.web.leaderboards.service import strategy_text
from app.web.rendering import HtmlRoute, json_response, not_found, page, render_macro
from app.web.visitors import PageNumber, challenge_url, tenant_url, visitor
from app.web.web_kind import WebKind

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


@router.get("/t/{tenant_slug}/attempts/{attempt_id}")
def attempt_page(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    tasks_page: PageNumber = 1,
) -> Response:
    web, tenant, participant = visitor(request, session, tenant_slug)
    found = service.own_attempt(session, tenant, participant, attempt_id)
    if found is None or participant is None:
        raise not_found()
    attempt, challenge = found
    card = service.attempt_cards(session, tenant.id, challenge, [attempt], participant.handle)[0]
    details = kind_as(challenge.kind, WebKind).attempt_details(
        session, challenge, config_of(challenge), card, tasks_page
    )
    attempt_url = tenant_url(tenant, f"attempts/{attempt.id}")
    return page(
        request,
        web,
        "attempt.html",
        title=f"Attempt · {challenge.title}",
        tenant=tenant,
        participant=participant,
        challenge=to_public_view(challenge),
        strategy=strategy_text(challenge),
        card=card,
        details=details,
        detail_page={"attempt_url": attempt_url, "csrf_token": web.csrf_token},
        attempt_url=attempt_url,
        base_url=challenge_url(tenant, challenge),
    )


@router.get("/t/{tenant_slug}/attempts/{attempt_id}/tasks/{task_index}")
def attempt_task(
    tenant_slug: str,
    attempt_id: uuid.UUID,
    task_index: Annotated[int, Path(ge=1, le=10_000_000)],
    request: Request,
    session: SessionDep,
) -> Response:
    """One task of an attempt with its trials (the participant's redacted view). As JSON
    (`Accept: application/json`) it is the HTML fragment the attempt page unfolds inline."""
    web, tenant, participant = visitor(request, session, tenant_slug)
    found = service.own_attempt(session, tenant, participant, attempt_id)
    if found is None or participant is None:
        raise not_found()
    attempt, challenge = found
    task_found = service.task_trials(session, challenge, attempt.id, task_index)
    if task_found is None:
        raise not_found()
    task, trials = task_found
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
        attempt_url=tenant_url(tenant, f"attempts/{attempt.id}"),
        base_url=challenge_url(tenant, challenge),
    )
