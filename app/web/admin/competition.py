"""A challenge's competition pages from the console: its pages (Overview, Rules, Data,
Evaluation: Markdown) and its announcements, through the same service functions as `PATCH
/v1/challenges/{id}` (its `pages`) and `POST /v1/challenges/{id}/announcements`."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.challenge import service as challenges
from app.challenge.config import ChallengePagesUpdate
from app.challenge.models import Challenge
from app.challenge.schemas import ChallengeUpdate
from app.competition import service as competition
from app.competition.schemas import AnnouncementCreate
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import AppError, detail_text, error_details
from app.web.admin.console import console_tabs
from app.web.admin.visits import AdminVisit, admin_form, admin_page_visit
from app.web.challenges.competition import TABS
from app.web.challenges.router import form_fields
from app.web.rendering import HtmlRoute, not_found
from app.web.visitors import challenge_url

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)

ANNOUNCEMENTS_LISTED = 50
NOTICES = {
    "pages-saved": "The pages are saved.",
    "announcement-deleted": "The announcement is taken off the challenge's page.",
}


def _challenge(session: Session, visit: AdminVisit, challenge_id: uuid.UUID) -> Challenge:
    challenge = challenges.find_challenge(session, visit.tenant.id, challenge_id)
    if challenge is None:
        raise not_found()
    return challenge


def _page(
    session: Session,
    visit: AdminVisit,
    challenge: Challenge,
    *,
    pages: Mapping[str, str] | None = None,
    pages_error: str | None = None,
    announcement: Mapping[str, str] | None = None,
    announcement_error: str | None = None,
    notice: str | None = None,
    status_code: int = 200,
) -> Response:
    texts = challenge.page_texts.model_dump()
    announcements, total = competition.list_announcements(
        session,
        visit.tenant.id,
        challenge.id,
        visit.subject.audience,
        limit=ANNOUNCEMENTS_LISTED,
        offset=0,
    )
    return visit.page(
        "admin_challenge_pages.html",
        status_code=status_code,
        title=f"Pages and announcements · {challenge.title}",
        challenge=challenge,
        page_names=TABS,
        tabs=console_tabs(visit.tenant, challenge.id, "pages"),
        pages=pages if pages is not None else texts,
        pages_error=pages_error,
        announcement=announcement or {},
        announcement_error=announcement_error,
        announcements=announcements,
        announcements_total=total,
        notice=notice,
        base=visit.url(f"admin/challenges/{challenge.id}"),
        public_url=challenge_url(visit.tenant, challenge),
    )


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/pages")
def pages(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    session: SessionDep,
    notice: str | None = None,
    mailed: int | None = None,
) -> Response:
    """The challenge's pages to edit, its announcements, and the form that posts one."""
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit, challenge_id)
    shown = NOTICES.get(notice or "")
    if notice == "announced" and mailed is not None:
        shown = f"The announcement is posted; it was mailed to {mailed} participant(s)."
    return _page(session, visit, challenge, notice=shown)


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/pages")
def save_pages(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    sent: dict[str, str] = Depends(form_fields),
) -> Response:
    """Saves the four pages as `PATCH /v1/challenges/{id}` with `pages` would."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, sent.get("csrf_token", ""))
    challenge = _challenge(session, visit, challenge_id)
    typed = {name: sent.get(name, "") for name, _ in TABS}
    try:
        body = ChallengeUpdate(pages=ChallengePagesUpdate(**typed))
        challenges.update_challenge(work, visit.tenant.id, challenge.id, body)
    except ValidationError as exc:
        work.rollback()
        message = detail_text(error_details(exc.errors(), ["body"])[0])
        return _page(session, visit, challenge, pages=typed, pages_error=message, status_code=422)
    except AppError as exc:
        work.rollback()
        return _page(
            session, visit, challenge, pages=typed, pages_error=exc.message, status_code=409
        )
    work.commit()
    return visit.redirect(f"admin/challenges/{challenge.id}/pages?notice=pages-saved")


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/announcements")
def announce(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    sent: dict[str, str] = Depends(form_fields),
) -> Response:
    """Posts an announcement as `POST /v1/challenges/{id}/announcements` does (mailed once
    this commits)."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, sent.get("csrf_token", ""))
    challenge = _challenge(session, visit, challenge_id)
    typed = {"title": sent.get("title", ""), "body": sent.get("body", "")}
    try:
        body = AnnouncementCreate(**typed)
        posted = competition.post_announcement(work, visit.tenant.id, challenge.id, body)
    except ValidationError as exc:
        work.rollback()
        message = detail_text(error_details(exc.errors(), ["body"])[0])
        return _page(
            session,
            visit,
            challenge,
            announcement=typed,
            announcement_error=message,
            status_code=422,
        )
    work.commit()
    return visit.redirect(
        f"admin/challenges/{challenge.id}/pages?notice=announced&mailed={posted.mailed}"
    )


@router.post(
    "/t/{tenant_slug}/admin/challenges/{challenge_id}/announcements/{announcement_id}/delete"
)
def delete_announcement(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    announcement_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    sent: dict[str, str] = Depends(form_fields),
) -> Response:
    session = work.session
    visit = admin_form(request, session, tenant_slug, sent.get("csrf_token", ""))
    challenge = _challenge(session, visit, challenge_id)
    try:
        competition.delete_announcement(session, visit.tenant.id, challenge.id, announcement_id)
    except AppError:
        raise not_found() from None
    work.commit()
    return visit.redirect(f"admin/challenges/{challenge.id}/pages?notice=announcement-deleted")
