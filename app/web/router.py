"""The web UI's pages: server-rendered HTML on top of the same services the REST API uses, by
page family (each a package of its own: router and service).

- `challenges`: `/` (tenants with public challenges), `/t/{tenant}/` (the challenges a visitor
  may see, with their best result), `/t/{tenant}/challenges/{slug}` (goal, attempt form, the
  participant's attempts updating live from `.../live`, the leaderboard beside them), and
  `.../practice` (the participant's unscored practice runs).
- `teams`: `/t/{tenant}/challenges/{slug}/team` (create), `.../team/join`, `.../team/leave`,
  `.../team/invite-code`: the challenge page's team section (docs/teams.md).
- `leaderboards`: `/t/{tenant}/challenges/{slug}/leaderboard`.
- `attempts`: `/t/{tenant}/attempts/{id}` (one attempt of the participant's own) and
  `.../tasks/{index}`.
- `accounts`: `/t/{tenant}/sign-up`, `/sign-in`, `/sign-out`, `/account` (password, email
  address, notification emails), and what mail links open: `/confirm-email/{token}`,
  `/forgot-password`, `/reset-password/{token}`, `/unsubscribe/{token}`.
- `admin`: `/t/{tenant}/admin`, for tenant admins signed in with an API key, and a
  challenge's test runs (`.../admin/challenges/{id}/test-runs`).
- `authoring`: `/t/{tenant}/admin/challenges/new`, `.../{id}/edit`, `.../{id}/duplicate`,
  `.../{id}/delete`: tenant admins' challenge forms, made from each kind's models.
- `admin.mail`: `/t/{tenant}/admin/mail`: the tenant's email-address policy and the mail sent
  to its participants (with each message's text when it went to the data folder).
- `admin.baselines`: `/t/{tenant}/admin/challenges/{id}/baselines`: an admin's reference
  entries, of the kind's entry fields.
- `admin.competition`: `/t/{tenant}/admin/challenges/{id}/pages`: a challenge's pages
  (Markdown) and its announcements.
- `admin.console`: `/t/{tenant}/admin/challenges/{id}` (a challenge's console: its overview
  and launch checklist), `.../participants` and `.../exports`, and the tabs every page of a
  challenge's console shows.
- `hosting`: `/host` ("Host a challenge": an organizer's sign-up, which makes a tenant as the
  operator's policy says) and `/host/{tenant}` (where the request stands).
- `platform`: `/admin`, the platform admin's pages (signed in with the platform admin token):
  the tenants, their approval, suspension and quotas.

What differs between challenge kinds is the kind's (`app.web.web_kind`).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from app.challenge.registry import registered
from app.web.accounts.router import router as accounts
from app.web.admin.baselines import router as baselines
from app.web.admin.competition import router as competition_pages
from app.web.admin.console import router as console
from app.web.admin.mail import router as admin_mail
from app.web.admin.router import router as admin
from app.web.attempts.router import router as attempts
from app.web.authoring.router import router as authoring
from app.web.challenges.router import router as challenges
from app.web.hosting.router import router as hosting
from app.web.leaderboards.router import router as leaderboards
from app.web.platform.router import router as platform
from app.web.rendering import HtmlRoute, not_found
from app.web.teams.router import router as teams
from app.web.web_kind import WebKind

# `authoring`, `baselines`, `competition_pages` and `console` before `admin`: their challenge
# pages' addresses would match the challenge buttons' (`/admin/challenges/{id}/{action}`).
FAMILIES = (
    challenges,
    teams,
    leaderboards,
    attempts,
    accounts,
    authoring,
    baselines,
    competition_pages,
    console,
    admin_mail,
    admin,
    hosting,
    platform,
)

unknown = APIRouter(route_class=HtmlRoute, include_in_schema=False)


# Anything else under a tenant: an HTML 404 rather than the API's JSON one.
@unknown.get("/t/{tenant_slug}/{rest:path}")
def unknown_page(tenant_slug: str, rest: str) -> Response:
    raise not_found()


def web_router() -> APIRouter:
    """Every page: the families', the registered kinds' own, and the catch-all 404 last."""
    router = APIRouter(include_in_schema=False)
    for family in FAMILIES:
        router.include_router(family)
    for kind in registered().values():
        if isinstance(kind, WebKind):
            for pages in kind.web_routers():
                router.include_router(pages)
    router.include_router(unknown)
    return router
