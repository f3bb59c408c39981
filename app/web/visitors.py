"""What every page of a tenant starts from: who is visiting (their browser session, the
tenant, the signed-in participant, as the authorization gate's subject), the tenant's
addresses, the CSRF check and the notices a redirect carries."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, NamedTuple

from fastapi import Form, Query, Request
from sqlalchemy.orm import Session

from app.auth.subjects import Audience
from app.auth.tenant_access import TenantStatus, closed_message
from app.challenge import service as challenges
from app.challenge.config import Visibility
from app.challenge.models import Challenge
from app.tenant import account_mail
from app.tenant import service as tenants
from app.tenant.models import Participant, Tenant
from app.web import auth
from app.web.rendering import PageError, csrf_failed, not_found

MAX_PAGE = 1_000_000

NOTICES = {
    "signed-up": "Welcome! Your account is ready: pick a challenge and play.",
    "signed-in": "You are signed in.",
    "signed-out": "You are signed out.",
    "submitted": "Attempt submitted. Its status below updates as it runs.",
    "requeued": "The attempt is queued again.",
    "not-rerunnable": "That attempt cannot be re-run: only attempts that ended in error can.",
    "defense-submitted": (
        "Defense submitted. Its self-test runs now; its status below updates when it ends."
    ),
    "attack-submitted": (
        "Attack submitted. It is matched against the active defenses; your matches below "
        "update as they are judged."
    ),
    "match-requeued": "The match is queued again.",
    "team-joined": "You are in the team: your entries here are the team's from now on.",
    "team-left": "You left the team: you play this challenge on your own again.",
    "rules-accepted": "You accepted the rules: you may submit now.",
    "challenge-opened": "The challenge is open now.",
    "key-revoked": "The API key is revoked: it stops working at once.",
    "key-in-use": "This admin session signed in with that key: sign in with another to revoke it.",
    "failed-requeued": "The challenge's failed attempts are queued again.",
    "challenge-closed": "The challenge is closed now: new attempts and entries are refused.",
    "challenge-published": (
        "The challenge is published: its schedule now decides when participants see and play it."
    ),
    "challenge-archived": (
        "The challenge is archived: hidden from lists and read-only; its pages, boards and "
        "exports stay."
    ),
    "challenge-unarchived": "The challenge is live again: listed, and playable when open.",
    "challenge-created": (
        "The challenge is saved as a draft: only its admins see it until you open or publish "
        "it, once its launch checklist's required items are done."
    ),
    "challenge-saved": "The challenge's changes are saved.",
    "challenge-deleted": (
        "The challenge is deleted: gone for everyone, its slug free, its data kept until you "
        "purge it (Deleted challenges restores or purges it)."
    ),
    "challenge-restored": "The challenge is restored, with its data, as it was.",
    "challenge-purged": "The challenge is purged, with everything played in it.",
    "restore-slug-taken": (
        "Another challenge has that slug now: restore this one under another slug."
    ),
    "restore-slug-invalid": (
        "That slug cannot be used: lowercase letters, digits and hyphens, at most 64 characters."
    ),
    "purge-not-confirmed": "Not purged: type the challenge's slug to confirm.",
    "role-given": (
        "The account has the admin role: signed in with its handle and password, it uses the "
        "admin pages."
    ),
    "role-taken": "The account no longer has the admin role: its admin pages are closed at once.",
    "role-in-use": "You are signed in with this account: another admin takes its role back.",
    "role-needs-account": (
        "Only a participant who signed up on the web (with a password) can have the admin role."
    ),
    "match-not-rerunnable": "That match cannot be re-run: only matches that ended in error can.",
    "admin-signed-in": "You are signed in as a tenant admin.",
    "admin-signed-out": "You are signed out of the admin view.",
    "key-invalid": (
        "Your admin session has ended (signed out, expired, or its key revoked). Sign in again."
    ),
    "password-changed": (
        "Your password is changed. Every other session of your account is signed out."
    ),
    "signed-up-confirm": (
        "Welcome! Your account is ready. We sent a link to your email address: open it to "
        "confirm the address."
    ),
    "email-changed": "Your address is saved. We sent it a link: open it to confirm the address.",
    "email-removed": "Your account has no email address any more.",
    "email-unchanged": "That is the address your account has already.",
    "email-confirmed": "Your email address is confirmed. Thank you!",
    "confirmation-sent": "We sent a new link to your email address: open it to confirm it.",
    "notifications-on": "Notification emails are on.",
    "notifications-off": "Notification emails are off.",
    "reset-asked": (
        "If an account of this site has that handle or confirmed email address, a link to "
        "reset its password is on its way to that address. It works once, within an hour."
    ),
    "policy-saved": "Saved: participants are asked for their address as it says now.",
    "policy-unknown": "Choose one of the listed policies.",
    "password-reset": (
        "Your new password is set. Every other session of your account is signed out."
    ),
    "email-confirmed-request": (
        "Your email address is confirmed: the platform admin can approve your request now."
    ),
    "host-requested": (
        "Your request is sent. We sent a link to your email address: open it to confirm the "
        "address, which the approval is mailed to."
    ),
    "host-ready": "Your event is ready, and this is its console. You are signed in as its admin.",
}

CsrfField = Annotated[str, Form(alias="csrf_token")]
PageNumber = Annotated[int, Query(ge=1, le=MAX_PAGE)]
# `?page=N` of the pages that list something (home, leaderboard).
ListPage = Annotated[int, Query(alias="page", ge=1, le=MAX_PAGE)]


def pages_of(total: int, page_size: int) -> int:
    """How many pages `total` rows fill (one, empty, when there are none)."""
    return max(1, math.ceil(total / page_size))


def notice(code: str | None) -> str | None:
    return NOTICES.get(code or "")


class Visitor(NamedTuple):
    web: auth.WebSession
    tenant: Tenant
    # The signed-in participant of this tenant, if any (a web account).
    participant: Participant | None

    @property
    def visibilities(self) -> tuple[Visibility, ...]:
        return visible_visibilities(self.participant)


def board_audience(participant: Participant | None) -> Audience:
    """Whose view of the boards a visitor gets: the live boards for an account with the
    admin role, in a freeze too; the participant's (frozen in a freeze) for everyone else."""
    if participant is not None and participant.is_admin:
        return Audience.ADMIN
    return Audience.PARTICIPANT


def tenant_named(session: Session, slug: str, *, while_pending: bool = False) -> Tenant:
    """The tenant with this slug (404 without one), if its pages are open: a suspended
    tenant's, and a pending one's (but for the pages that say `while_pending`: its
    organizer's address confirmation), answer 403 saying why."""
    tenant = tenants.tenant_by_slug(session, slug)
    if tenant is None:
        raise not_found()
    if tenant.status is TenantStatus.ACTIVE:
        return tenant
    if tenant.status is TenantStatus.PENDING:
        if while_pending:
            return tenant
        raise PageError(
            403,
            "Waiting for approval",
            closed_message(tenant.status, tenant.name),
            (host_request_url(tenant), "The request's page"),
        )
    raise PageError(403, f"{tenant.name} is suspended", closed_message(tenant.status, tenant.name))


def host_request_url(tenant: Tenant) -> str:
    """The page of an organizer's request for a tenant (its status; the organizer's address)."""
    return f"/host/{tenant.slug}"


def signed_in_participant(
    session: Session, web: auth.WebSession, tenant: Tenant
) -> Participant | None:
    """The participant this browser's live session of this tenant is for, if still a web
    account."""
    token = web.server_token
    if token is None:
        return None
    return tenants.signed_in_participant(session, tenant.id, token)


def visitor(
    request: Request, session: Session, tenant_slug: str, *, while_pending: bool = False
) -> Visitor:
    """Who visits the tenant's pages (403 for a tenant whose pages are closed: `tenant_named`)."""
    web = auth.load_session(request)
    tenant = tenant_named(session, tenant_slug, while_pending=while_pending)
    return Visitor(web, tenant, signed_in_participant(session, web, tenant))


def form_visit(
    request: Request,
    session: Session,
    tenant_slug: str,
    csrf_token: str,
    *,
    while_pending: bool = False,
) -> Visitor:
    """The opening of every form post: the visitor, once the form's CSRF token is checked."""
    visit = visitor(request, session, tenant_slug, while_pending=while_pending)
    require_csrf(visit.web, csrf_token)
    return visit


def visible_visibilities(participant: Participant | None) -> tuple[Visibility, ...]:
    """Public challenges are for everyone; unlisted ones for the tenant's signed-in participants;
    private ones never appear in the web UI (tenant admins manage them through the API)."""
    if participant is None:
        return (Visibility.PUBLIC,)
    return (Visibility.PUBLIC, Visibility.UNLISTED)


def visible_challenge(session: Session, visitor: Visitor, slug: str) -> Challenge:
    """The tenant's challenge with this slug, if the visitor may see it (404 otherwise)."""
    challenge = challenges.visible_challenge(session, visitor.tenant.id, slug, visitor.visibilities)
    if challenge is None:
        raise not_found()
    return challenge


class Play(NamedTuple):
    """A participant's form post at a challenge: the visit, the challenge, the player."""

    visit: Visitor
    challenge: Challenge
    participant: Participant


def play_post(
    request: Request,
    session: Session,
    tenant_slug: str,
    challenge_slug: str,
    csrf_token: str,
    title: str,
    detail: str,
    *,
    find: Callable[[Session, Visitor, str], Challenge] | None = None,
) -> Play:
    """The opening of a participant's form post: the CSRF check, the challenge the visitor
    may see (`find`, by default `visible_challenge`: 404), then the player (401 with the
    page's `title` and `detail`, in which `{tenant}` is the tenant's name)."""
    visit = form_visit(request, session, tenant_slug, csrf_token)
    challenge = (find or visible_challenge)(session, visit, challenge_slug)
    participant = player_of(visit, title, detail.format(tenant=visit.tenant.name))
    return Play(visit, challenge, participant)


def player_of(visit: Visitor, title: str, detail: str) -> Participant:
    """The signed-in participant who plays from a form post: 401 with the page's `title` and
    `detail` for a visitor without an account of the tenant; 403 with the way to the account
    page for an account the tenant's address policy does not let play yet."""
    if visit.participant is None:
        raise PageError(401, title, detail)
    problem = account_mail.play_problem(visit.tenant, visit.participant)
    if problem is not None:
        raise PageError(
            403,
            "Your email address first",
            problem,
            (tenant_url(visit.tenant, "account#email"), "Go to your account"),
        )
    return visit.participant


def require_csrf(web: auth.WebSession, token: str) -> None:
    if not auth.csrf_valid(web, token):
        raise csrf_failed()


def tenant_url(tenant: Tenant, rest: str = "") -> str:
    return f"/t/{tenant.slug}/{rest}"


def challenge_url(tenant: Tenant, challenge: Challenge, rest: str = "") -> str:
    return tenant_url(tenant, f"challenges/{challenge.slug}{rest}")


def safe_next(tenant: Tenant, target: str | None) -> str:
    """Only a path inside this tenant's pages: never an open redirect elsewhere."""
    prefix = tenant_url(tenant)
    if target and target.startswith(prefix) and "\\" not in target and "//" not in target:
        return target
    return prefix
