"""A challenge's console: one page per challenge, in tabs under
`/t/{tenant}/admin/challenges/{id}`: *Overview* (its state, figures, model spend, dates with
countdowns, the launch checklist and the buttons that change its state), *Settings* (the
authoring form, `.../edit`), *Test runs*, *Participants & teams*, *Baselines* and *Exports*.
The tabs other pages show (`console_tabs`) are listed here once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from fastapi import APIRouter, Request
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.challenge import service as challenges
from app.challenge.models import Challenge
from app.export import service as exports
from app.export.formats import ExportFormat
from app.kit.deps import SessionDep
from app.kit.errors import NotFound
from app.tenant.models import Tenant
from app.web.admin import service
from app.web.admin.visits import AdminVisit, admin_page_visit
from app.web.rendering import HtmlRoute, not_found
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


@dataclass(frozen=True)
class Tab:
    name: str
    label: str
    url: str
    current: bool


# (name, label, address under the challenge's console), in the order shown.
_TABS = (
    ("overview", "Overview", ""),
    ("settings", "Settings", "/edit"),
    ("test-runs", "Test runs", "/test-runs"),
    ("participants", "Participants & teams", "/participants"),
    ("baselines", "Baselines", "/baselines"),
    ("pages", "Pages", "/pages"),
    ("exports", "Exports", "/exports"),
)


def console_url(tenant: Tenant, challenge_id: uuid.UUID, tab: str = "overview") -> str:
    """The address of a tab of the challenge's console."""
    rest = dict((name, path) for name, _, path in _TABS)[tab]
    return f"/t/{tenant.slug}/admin/challenges/{challenge_id}{rest}"


def console_tabs(tenant: Tenant, challenge_id: uuid.UUID, current: str) -> list[Tab]:
    """The tabs of the challenge's console, `current` marked."""
    return [
        Tab(name, label, console_url(tenant, challenge_id, name), name == current)
        for name, label, _ in _TABS
    ]


def _challenge(session: Session, visit: AdminVisit, challenge_id: uuid.UUID) -> Challenge:
    try:
        return challenges.get_challenge(session, visit.tenant.id, challenge_id)
    except NotFound:
        raise not_found() from None


def overview_page(
    session: Session,
    visit: AdminVisit,
    challenge: Challenge,
    *,
    notice: str | None = None,
    refusal: str | None = None,
    status_code: int = 200,
) -> Response:
    """The Overview tab; `refusal` says why the action just asked for was not done."""
    return visit.page(
        "admin_challenge.html",
        status_code=status_code,
        title=challenge.title,
        challenge=challenge,
        tabs=console_tabs(visit.tenant, challenge.id, "overview"),
        overview=service.challenge_overview(session, visit.subject, challenge),
        notice=notice,
        refusal=refusal,
    )


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}")
def challenge_console(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    notice: str | None = None,
) -> Response:
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit, challenge_id)
    return overview_page(session, visit, challenge, notice=notice_text(notice))


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/participants")
def challenge_participants(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """Who plays: the figures of the challenge's entries, its participants with entries (the
    most recently active first, each linking to their page), its teams (or individual play),
    and the link to its boards."""
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit, challenge_id)
    overview = service.challenge_overview(session, visit.subject, challenge)
    return visit.page(
        "admin_challenge_participants.html",
        title=f"Participants & teams · {challenge.title}",
        challenge=challenge,
        tabs=console_tabs(visit.tenant, challenge.id, "participants"),
        row=overview.row,
        entrants=service.challenge_entrants(session, visit.tenant.id, challenge),
        teams=service.challenge_teams(session, visit.tenant.id, challenge),
    )


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/exports")
def challenge_exports(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """The challenge's exports to download, each as CSV and as JSON Lines."""
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit, challenge_id)
    return visit.page(
        "admin_challenge_exports.html",
        title=f"Exports · {challenge.title}",
        challenge=challenge,
        tabs=console_tabs(visit.tenant, challenge.id, "exports"),
        datasets=exports.datasets_of(challenge.kind),
        export_formats=list(ExportFormat),
    )
