"""A challenge's baselines from the console: an admin's reference entries, submitted under a
handle of their own with the fields of the challenge kind's entries (an attempt's; red_blue's
defense or attack: `WebKind.baseline_forms`), as `"baseline": true` bodies of the REST API
are, through the same service functions. A baseline is shown on the boards with a mark,
ranked where it would place; it takes no participant's rank and earns no team-standings
points."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.challenge import service as challenges
from app.challenge.config import ChallengeState, Visibility
from app.challenge.models import Challenge
from app.challenge.registry import kind_as
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import AppError, detail_text, error_details
from app.kit.observability import metrics as telemetry
from app.tenant import service as tenants
from app.web.admin.console import console_tabs
from app.web.admin.visits import AdminVisit, admin_form, admin_page_visit
from app.web.challenges.router import form_fields
from app.web.forms import error_field
from app.web.rendering import HtmlRoute, not_found
from app.web.schema_form import FormField, Widget, body_from_form, each_field, model_items
from app.web.visitors import challenge_url
from app.web.web_kind import BaselineForm, WebKind

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

# The input of the baseline's handle, beside the entry's own fields (`participant` in a body).
HANDLE = FormField(
    path="participant",
    label="Handle",
    widget=Widget.TEXT,
    required=True,
    help="The baseline's own handle (created on first use): its row on the boards. A row "
    "shows its handle's best entry, so give each baseline a handle of its own, never a "
    "participant's.",
    placeholder="baseline-gpt",
)
# Of an entry's body, what the page sets itself rather than an input.
_SET_BY_PAGE = ("participant", "baseline")


@dataclass(frozen=True)
class ShownForm:
    """One baseline form as the page shows it: its inputs, what was typed, and its error."""

    form: BaselineForm
    fields: list[FormField]
    action: str
    values: Mapping[str, str]
    error: str | None = None
    error_in: str | None = None


def form_inputs(form: BaselineForm) -> list[FormField]:
    """The handle, then the entry's own fields (those of the API's body)."""
    own = each_field(model_items(form.model, sections=False, skip=_SET_BY_PAGE))
    return [HANDLE, *own]


def _challenge(session: Session, visit: AdminVisit, challenge_id: uuid.UUID) -> Challenge:
    challenge = challenges.find_challenge(session, visit.tenant.id, challenge_id)
    if challenge is None:
        raise not_found()
    return challenge


def _forms(challenge: Challenge) -> list[BaselineForm]:
    return list(kind_as(challenge.kind, WebKind).baseline_forms())


def _board_url(visit: AdminVisit, challenge: Challenge) -> str | None:
    """The challenge's leaderboard page, where the web shows one (never for a private
    challenge or a draft)."""
    if challenge.visibility is Visibility.PRIVATE or challenge.state is ChallengeState.DRAFT:
        return None
    return challenge_url(visit.tenant, challenge, "/leaderboard")


def _page(
    visit: AdminVisit,
    challenge: Challenge,
    *,
    refused: ShownForm | None = None,
    submitted: str | None = None,
    status_code: int = 200,
) -> Response:
    base = f"admin/challenges/{challenge.id}/baselines"
    shown = [
        refused
        if refused is not None and refused.form.name == form.name
        else ShownForm(form, form_inputs(form), visit.url(f"{base}/{form.name}"), {})
        for form in _forms(challenge)
    ]
    return visit.page(
        "admin_baselines.html",
        status_code=status_code,
        title=f"Baselines · {challenge.title}",
        challenge=challenge,
        tabs=console_tabs(visit.tenant, challenge.id, "baselines"),
        forms=shown,
        submission_id=uuid.uuid4().hex,
        submitted=submitted,
        submitted_url=(
            visit.url(f"admin/participants/{quote(submitted)}") if submitted is not None else None
        ),
        board_url=_board_url(visit, challenge),
    )


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/baselines")
def baselines(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    submitted: str | None = None,
) -> Response:
    """The forms that submit a baseline of the challenge's kind (after one is submitted,
    `submitted` is its handle: the page links its entries and the board)."""
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit, challenge_id)
    # Only a handle of the tenant's: an address cannot make the page claim a submission.
    if submitted is not None:
        found = tenants.participant_by_handle(session, visit.tenant.id, submitted)
        submitted = found.handle if found is not None else None
    return _page(visit, challenge, submitted=submitted)


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/baselines/{entry}")
def submit_baseline(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    entry: str,
    request: Request,
    work: UnitOfWorkDep,
    sent: dict[str, str] = Depends(form_fields),
) -> Response:
    """Submits the form's baseline (`entry`: one of the kind's baseline forms) as the API
    submits a `"baseline": true` body; back to the page, which links it, or the form again
    with the service's refusal beside its field."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, sent.get("csrf_token", ""))
    challenge = _challenge(session, visit, challenge_id)
    form = next((one for one in _forms(challenge) if one.name == entry), None)
    if form is None:
        raise not_found()
    inputs = form_inputs(form)

    def again(message: str, field: str | None, status_code: int) -> Response:
        work.rollback()
        action = visit.url(f"admin/challenges/{challenge.id}/baselines/{form.name}")
        refused = ShownForm(form, inputs, action, sent, message, field)
        return _page(visit, challenge, refused=refused, status_code=status_code)

    body, problems = body_from_form(inputs, sent)
    if problems:
        (path, message), *_ = problems
        return again(message, str(path[-1]), 422)
    body["baseline"] = True
    # The form's one-time id makes a double submit (double click, resent form) one entry.
    idempotency_key = None
    with contextlib.suppress(ValueError):
        idempotency_key = f"console:{uuid.UUID(hex=sent.get('submission_id', '')).hex}"
    try:
        stored = form.submit(work, visit.subject, challenge.id, body, idempotency_key)
    except ValidationError as exc:
        first = error_details(exc.errors(), ["body"])[0]
        field = str(first["loc"][-1]) if len(first["loc"]) > 1 else None
        return again(detail_text(first), field, 422)
    except AppError as exc:
        if exc.status_code == 404:
            raise not_found() from None
        field = error_field(exc, [one.path for one in inputs])
        return again(exc.message, field, exc.status_code)
    work.commit()
    if stored.attempt_kind is not None:
        telemetry.attempt_reached(stored.attempt_kind, "queued")
    back = f"admin/challenges/{challenge.id}/baselines?submitted={quote(stored.handle)}"
    return visit.redirect(back)
