"""For a kind's own web pages (its `web_routers()`): the HTML route class and responses, the
visitor of a page and what it may see, forms with their CSRF field, the challenge page a
kind's form answers with, and the admin console's page visits. Imported by a kind's pages
module alone, when the web UI mounts it."""

from __future__ import annotations

from app.web.admin.visits import admin_form, admin_page_visit
from app.web.attempts.service import own_attempt
from app.web.challenges.router import challenge_page_response, form_fields
from app.web.rendering import (
    HtmlRoute,
    PageError,
    json_response,
    not_found,
    page,
    redirect,
    render_macro,
)
from app.web.visitors import (
    CsrfField,
    ListPage,
    Visitor,
    challenge_url,
    form_visit,
    notice,
    pages_of,
    play_post,
    player_of,
    tenant_url,
    visible_challenge,
    visitor,
)

__all__ = [
    "CsrfField",
    "HtmlRoute",
    "ListPage",
    "PageError",
    "Visitor",
    "admin_form",
    "admin_page_visit",
    "challenge_page_response",
    "challenge_url",
    "form_fields",
    "form_visit",
    "json_response",
    "not_found",
    "notice",
    "own_attempt",
    "page",
    "pages_of",
    "play_post",
    "player_of",
    "redirect",
    "render_macro",
    "tenant_url",
    "visible_challenge",
    "visitor",
]
