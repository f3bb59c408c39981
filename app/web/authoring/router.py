"""The tenant admin's challenge authoring pages, beside the admin page's: a new challenge (its
kind chosen first, then its form; it starts as a draft), a challenge's form to edit it, a copy
of one (a new slug, a draft), its deletion after a confirmation, and the deleted challenges
(kept until purged: restored, or purged after a second confirmation). Each form is its kind's
(`app.web.authoring.service`) and goes to the service functions the REST API calls; a
refused form comes back with each error beside its field, in the API's words."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from pydantic import ValidationError
from sqlalchemy.orm import Session
from starlette.responses import Response

from app.challenge import service as challenges
from app.challenge.challenge_kind import ChallengeTemplate
from app.challenge.config import ChallengeState
from app.challenge.models import Challenge
from app.challenge.registry import KindNotFound
from app.challenge.schemas import ChallengeRestore
from app.kit.deps import SessionDep, UnitOfWorkDep
from app.kit.errors import Conflict, NotFound
from app.tenant.models import Tenant
from app.web.admin.console import console_tabs
from app.web.admin.visits import AdminVisit, admin_form, admin_page_visit
from app.web.authoring import service
from app.web.rendering import HtmlRoute, not_found
from app.web.schema_form import Problem, placed
from app.web.visitors import CsrfField, ListPage, pages_of
from app.web.visitors import notice as notice_text

router = APIRouter(route_class=HtmlRoute, include_in_schema=False)


async def _form_values(request: Request) -> dict[str, str]:
    """Every text field the form sent (their names are its fields' paths)."""
    form = await request.form()
    return {name: value for name, value in form.items() if isinstance(value, str)}


FormValues = Annotated[dict[str, str], Depends(_form_values)]


def _form_of(kind: str, *, editing: bool = False) -> service.ChallengeForm:
    try:
        return service.challenge_form(kind, editing=editing)
    except KindNotFound:
        raise not_found() from None


def _challenge(session: Session, tenant: Tenant, challenge_id: uuid.UUID) -> Challenge:
    try:
        return challenges.get_challenge(session, tenant.id, challenge_id)
    except NotFound:
        raise not_found() from None


def _form_page(
    visit: AdminVisit,
    form: service.ChallengeForm,
    values: Mapping[str, str],
    *,
    heading: str,
    action: str,
    submit: str,
    problems: list[Problem] | None = None,
    challenge: Challenge | None = None,
    template: ChallengeTemplate | None = None,
    copying: bool = False,
) -> Response:
    beside, apart = placed(form.items, problems or [])
    return visit.page(
        "admin_challenge_form.html",
        status_code=422 if problems else 200,
        title=heading,
        form=form,
        values=values,
        errors=beside,
        form_errors=apart,
        heading=heading,
        action=action,
        submit=submit,
        challenge=challenge,
        starting_template=template,
        copying=copying,
        tabs=None if challenge is None else console_tabs(visit.tenant, challenge.id, "settings"),
        models=service.form_models(form),
    )


def _creation_page(
    visit: AdminVisit,
    form: service.ChallengeForm,
    values: Mapping[str, str],
    *,
    heading: str | None = None,
    problems: list[Problem] | None = None,
    template: ChallengeTemplate | None = None,
) -> Response:
    """The form that creates a challenge of the form's kind (new, or a copy), as a draft."""
    return _form_page(
        visit,
        form,
        values,
        heading=heading or f"New {form.title.lower()} challenge",
        action=visit.url(f"admin/challenges/new?kind={form.kind}"),
        submit="Create draft",
        problems=problems,
        template=template,
        copying=heading is not None,
    )


def _edit_page(
    visit: AdminVisit,
    form: service.ChallengeForm,
    values: Mapping[str, str],
    challenge: Challenge,
    problems: list[Problem] | None = None,
) -> Response:
    """The form that saves the challenge's configuration."""
    return _form_page(
        visit,
        form,
        values,
        heading=f"Edit {challenge.title}",
        action=visit.url(f"admin/challenges/{challenge.id}/edit"),
        submit="Save changes",
        problems=problems,
        challenge=challenge,
    )


@router.get("/t/{tenant_slug}/admin/challenges/new")
def new_challenge(
    tenant_slug: str,
    request: Request,
    session: SessionDep,
    kind: str | None = None,
    template: str | None = None,
) -> Response:
    """The kinds and their templates to choose from, or (`kind`) the form of a new challenge
    of that kind, filled with its template (`template`, else the kind's default), which works
    as it is."""
    visit = admin_page_visit(request, session, tenant_slug)
    if kind is None and template is None:
        return visit.page(
            "admin_challenge_kinds.html", title="New challenge", kinds=service.kind_choices()
        )
    try:
        chosen = service.chosen_template(kind, template)
    except NotFound:
        raise not_found() from None
    form = _form_of(kind or (chosen.kind if chosen else ""))
    return _creation_page(visit, form, service.new_values(form, chosen), template=chosen)


@router.post("/t/{tenant_slug}/admin/challenges/new")
def create_challenge(
    tenant_slug: str,
    kind: str,
    request: Request,
    work: UnitOfWorkDep,
    values: FormValues,
    csrf_token: CsrfField = "",
) -> Response:
    """Creates the challenge, as a draft, from its kind's form (new or a copy)."""
    visit = admin_form(request, work.session, tenant_slug, csrf_token)
    form = _form_of(kind)
    created, problems = service.create_from_form(work, visit.subject.tenant_id, form, values)
    if created is None:
        work.rollback()
        return _creation_page(visit, form, values, problems=problems)
    work.commit()
    return visit.redirect(f"admin/challenges/{created.id}?notice=challenge-created")


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/duplicate")
def duplicate_challenge(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """A new challenge's form filled with a copy of this one (a new slug); it is created as a
    draft when sent."""
    visit = admin_page_visit(request, session, tenant_slug)
    original = _challenge(session, visit.tenant, challenge_id)
    form = _form_of(original.kind)
    values = service.copy_values(form, session, visit.tenant.id, original)
    return _creation_page(visit, form, values, heading=f"Copy of {original.title}")


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/edit")
def edit_challenge(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit.tenant, challenge_id)
    form = _form_of(challenge.kind, editing=True)
    values = service.stored_values(form, challenge)
    return _edit_page(visit, form, values, challenge)


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/edit")
def save_challenge(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    values: FormValues,
    csrf_token: CsrfField = "",
) -> Response:
    """Saves the form as the challenge's new configuration (a PATCH of every field it has)."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    challenge = _challenge(session, visit.tenant, challenge_id)
    form = _form_of(challenge.kind, editing=True)
    slug = challenge.slug
    # The update reads the challenge again under its row lock: it must not see this copy.
    session.expire(challenge)
    try:
        saved, problems = service.update_from_form(
            work, visit.subject.tenant_id, challenge_id, slug, form, values
        )
    except NotFound:
        raise not_found() from None
    if saved is None:
        work.rollback()
        challenge = _challenge(session, visit.tenant, challenge_id)
        return _edit_page(visit, form, values, challenge, problems)
    work.commit()
    return visit.redirect(f"admin/challenges/{challenge_id}?notice=challenge-saved")


@router.get("/t/{tenant_slug}/admin/challenges/{challenge_id}/delete")
def confirm_delete(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """What deleting the challenge does (hides it, keeps its data until purged), and the
    button that does it."""
    visit = admin_page_visit(request, session, tenant_slug)
    challenge = _challenge(session, visit.tenant, challenge_id)
    return visit.page(
        "admin_challenge_delete.html",
        title=f"Delete {challenge.title}",
        challenge=challenge,
        draft=challenge.state is ChallengeState.DRAFT,
    )


@router.post("/t/{tenant_slug}/admin/challenges/{challenge_id}/delete")
def delete_challenge(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
) -> Response:
    """Deletes the challenge, keeping its data until purged, as the API does."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    try:
        challenges.delete_challenge(session, visit.subject.tenant_id, challenge_id)
    except NotFound:
        raise not_found() from None
    work.commit()
    return visit.redirect("admin?notice=challenge-deleted")


DELETED_PAGE_SIZE = 50


@router.get("/t/{tenant_slug}/admin/deleted-challenges")
def deleted_challenges(
    tenant_slug: str,
    request: Request,
    session: SessionDep,
    page_number: ListPage = 1,
    notice: str | None = None,
) -> Response:
    """The tenant's deleted challenges, the latest deleted first, a page at a time, each
    with a restore form and a purge link."""
    visit = admin_page_visit(request, session, tenant_slug)
    rows, total = challenges.deleted_challenges(
        session,
        visit.tenant.id,
        limit=DELETED_PAGE_SIZE,
        offset=(page_number - 1) * DELETED_PAGE_SIZE,
    )
    return visit.page(
        "admin_deleted_challenges.html",
        title="Deleted challenges",
        deleted=rows,
        total=total,
        page_number=page_number,
        pages=pages_of(total, DELETED_PAGE_SIZE),
        notice=notice_text(notice),
    )


_DELETED = "admin/deleted-challenges"


@router.post("/t/{tenant_slug}/admin/deleted-challenges/{challenge_id}/restore")
def restore_challenge(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    slug: Annotated[str, Form()] = "",
) -> Response:
    """Restores the deleted challenge as the API does: under its slug, or the one typed when
    another challenge took its slug meanwhile."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    try:
        new_slug = ChallengeRestore.model_validate({"slug": slug.strip() or None}).slug
    except ValidationError:
        return visit.redirect(_DELETED + "?notice=restore-slug-invalid")
    try:
        challenges.restore_challenge(session, visit.subject.tenant_id, challenge_id, new_slug)
    except NotFound:
        raise not_found() from None
    except Conflict:
        work.rollback()
        return visit.redirect(_DELETED + "?notice=restore-slug-taken")
    work.commit()
    return visit.redirect("admin?notice=challenge-restored")


@router.get("/t/{tenant_slug}/admin/deleted-challenges/{challenge_id}/purge")
def confirm_purge(
    tenant_slug: str, challenge_id: uuid.UUID, request: Request, session: SessionDep
) -> Response:
    """What purging removes for good, and the form that does it once the slug is typed."""
    visit = admin_page_visit(request, session, tenant_slug)
    try:
        challenge = challenges.deleted_challenge(session, visit.tenant.id, challenge_id)
    except NotFound:
        raise not_found() from None
    return visit.page(
        "admin_challenge_purge.html", title=f"Purge {challenge.title}", challenge=challenge
    )


@router.post("/t/{tenant_slug}/admin/deleted-challenges/{challenge_id}/purge")
def purge_challenge(
    tenant_slug: str,
    challenge_id: uuid.UUID,
    request: Request,
    work: UnitOfWorkDep,
    csrf_token: CsrfField = "",
    confirm_slug: Annotated[str, Form()] = "",
) -> Response:
    """Purges the deleted challenge, as the API does, once its slug is typed to confirm."""
    session = work.session
    visit = admin_form(request, session, tenant_slug, csrf_token)
    tenant_id = visit.subject.tenant_id
    try:
        challenge = challenges.deleted_challenge(session, tenant_id, challenge_id)
    except NotFound:
        raise not_found() from None
    if confirm_slug.strip() != challenge.slug:
        return visit.redirect(_DELETED + "?notice=purge-not-confirmed")
    challenges.purge_challenge(session, tenant_id, challenge_id)
    work.commit()
    return visit.redirect(_DELETED + "?notice=challenge-purged")
