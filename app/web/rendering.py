"""Templates, responses and error pages of the web UI.

Pages render with Jinja2 (autoescaped). Every HTML response carries a strict Content Security
Policy (scripts and styles from this app only, no inline code), `Cache-Control: no-store` (pages
show a signed-in person's data) and a `Server-Timing` header with the time spent making it.
The web router's routes turn errors into HTML pages instead of the API's JSON error shape.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Coroutine
from functools import lru_cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from jinja2 import (
    BaseLoader,
    ChoiceLoader,
    Environment,
    FileSystemLoader,
    PrefixLoader,
    StrictUndefined,
    select_autoescape,
)
from sqlalchemy.exc import OperationalError
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from app.auth.rate_limits import LimitsUnavailable
from app.challenge.registry import registered
from app.kit.config import get_settings
from app.kit.errors import AppError
from app.kit.observability.health import workers_missing
from app.kit.routing import ApiRoute
from app.tenant.account_mail import play_problem
from app.web import auth, formatting
from app.web.forms import FormError
from app.web.web_kind import WebKind

log = logging.getLogger(__name__)

WEB_DIR = Path(__file__).resolve().parent
TEMPLATES_DIR = WEB_DIR / "templates"
STATIC_DIR = WEB_DIR / "static"
STATIC_URL = "/static/web"

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "object-src 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class PageError(Exception):
    """Ends a request with an HTML error page; `link` (address, text) is the way on that the
    page offers besides the home page."""

    def __init__(
        self, status_code: int, title: str, message: str, link: tuple[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.title = title
        self.message = message
        self.link = link


class Answer(Exception):
    """Ends a request with this response: what a page's opening decides in place of the page
    (the admin sign-in for a visitor without admin access), so no route repeats the check."""

    def __init__(self, response: Response) -> None:
        super().__init__("answered by the page's opening")
        self.response = response


def not_found() -> PageError:
    return PageError(
        404,
        "Page not found",
        "There is nothing here, or it is not visible to you. If it is yours, sign in first.",
    )


def csrf_failed() -> PageError:
    return PageError(
        403,
        "Form expired",
        "This form was not sent from this site's current page, or your session changed. "
        "Go back, reload the page and try again.",
    )


@lru_cache
def _static_version(name: str) -> str:
    """A content hash for cache busting: `/static/web/app.css?v=<hash>`."""
    path = STATIC_DIR / name
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.exists() else "0"


def static_url(name: str) -> str:
    return f"{STATIC_URL}/{name}?v={_static_version(name)}"


def _kind_templates() -> dict[str, BaseLoader]:
    """Each kind's own templates (its fragments of the pages), under "kinds/<name>/"."""
    loaders: dict[str, BaseLoader] = {}
    for name, kind in registered().items():
        if isinstance(kind, WebKind) and kind.templates_dir is not None:
            loaders[name] = FileSystemLoader(kind.templates_dir)
    return loaders


def environment() -> Environment:
    # One environment per set of kinds (the extra kinds are a setting, read by the registry).
    return _environment(tuple(registered()))


@lru_cache(maxsize=4)
def _environment(kinds: tuple[str, ...]) -> Environment:
    env = Environment(
        loader=ChoiceLoader(
            [
                FileSystemLoader(TEMPLATES_DIR),
                PrefixLoader({"kinds": PrefixLoader(_kind_templates())}),
            ]
        ),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["static_url"] = static_url
    env.globals["workers_missing"] = _workers_missing
    # What the tenant's address policy still asks of a signed-in account before it plays
    # (the banner of every page; the same rule refuses its plays).
    env.globals["play_problem"] = play_problem
    # Whether organizers may sign up ("Host a challenge" in the header and on the home page).
    env.globals["hosting_open"] = _hosting_open
    env.filters["duration"] = formatting.format_duration
    env.filters["when"] = formatting.format_when
    env.filters["until"] = formatting.format_until
    env.filters["number"] = formatting.format_number
    env.filters["cost"] = formatting.format_cost
    env.filters["percent"] = formatting.format_percent
    return env


def _hosting_open() -> bool:
    return get_settings().resolved_tenant_signup != "closed"


def _workers_missing() -> bool:
    """No worker seen lately: queued work is shown as waiting for one, admins get a banner."""
    return workers_missing(get_settings())


def render_template(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)


def render_macro(template: str, macro: str, *args: Any, **kwargs: Any) -> str:
    module = environment().get_template(template).make_module()
    return str(getattr(module, macro)(*args, **kwargs))


def _finish(request: Request, response: Response, web: auth.WebSession | None) -> Response:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if web is not None:
        auth.store_session(request, response, web)
    return response


def page(
    request: Request,
    web: auth.WebSession | None,
    template: str,
    *,
    status_code: int = 200,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    context.setdefault("tenant", None)
    context.setdefault("participant", None)
    context.setdefault("notice", None)
    context.setdefault("title", "Gauntlet")
    context.setdefault("admin_page", False)
    context.setdefault("platform_page", False)
    html = render_template(
        template,
        request=request,
        csrf_token=web.csrf_token if web is not None else "",
        **context,
    )
    response = HTMLResponse(html, status_code=status_code, headers=headers)
    _finish(request, response, web)
    return response


def form_page(
    request: Request,
    web: auth.WebSession | None,
    template: str,
    error: FormError | None,
    **context: Any,
) -> HTMLResponse:
    """A page with a form, shown again after `error` when there is one: its status and
    headers, its message and the field at fault (`error`, `error_field` in the template)."""
    return page(
        request,
        web,
        template,
        status_code=error.status_code if error else 200,
        headers=error.headers if error else None,
        error=error.message if error else None,
        error_field=error.field if error else None,
        **context,
    )


def redirect(request: Request, web: auth.WebSession | None, url: str) -> RedirectResponse:
    response = RedirectResponse(url, status_code=303)
    _finish(request, response, web)
    return response


def json_response(
    request: Request, web: auth.WebSession | None, body: Any, status_code: int = 200
) -> JSONResponse:
    response = JSONResponse(body, status_code=status_code)
    _finish(request, response, web)
    return response


def error_page(
    request: Request,
    status_code: int,
    title: str,
    message: str,
    link: tuple[str, str] | None = None,
) -> Response:
    if request.url.path.endswith(".json") or "application/json" in request.headers.get(
        "accept", ""
    ):
        return json_response(
            request,
            None,
            {"error": {"code": title.lower().replace(" ", "_"), "message": message}},
            status_code,
        )
    return page(
        request,
        None,
        "error.html",
        status_code=status_code,
        title=title,
        heading=title,
        message=message,
        link=link,
    )


class HtmlRoute(ApiRoute):
    """Web routes answer errors with HTML pages (the API's handlers answer JSON) and report
    their server time."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def html_handler(request: Request) -> Response:
            started = time.perf_counter()
            try:
                response = await handler(request)
            except Answer as exc:
                response = exc.response
            except PageError as exc:
                response = error_page(request, exc.status_code, exc.title, exc.message, exc.link)
            except AppError as exc:
                # Rules the pages did not turn into a friendlier message themselves.
                response = error_page(request, exc.status_code, "Request refused", exc.message)
            except RequestValidationError:
                response = error_page(request, 404, *_not_found_text())
            except LimitsUnavailable:
                log.warning("rate-limit store unavailable while serving %s", request.url.path)
                response = error_page(
                    request,
                    503,
                    "Temporarily unavailable",
                    "Signing in is unavailable for a moment. Try again shortly.",
                )
            except OperationalError:
                log.warning("database unavailable while rendering %s", request.url.path)
                response = error_page(
                    request,
                    503,
                    "Temporarily unavailable",
                    "The service cannot reach its database right now. Try again in a moment.",
                )
            except Exception:
                log.exception("web page %s failed", request.url.path)
                response = error_page(
                    request,
                    500,
                    "Something went wrong",
                    "This page could not be shown because of an error on our side.",
                )
            elapsed_ms = (time.perf_counter() - started) * 1000
            response.headers["Server-Timing"] = f"app;dur={elapsed_ms:.1f}"
            return response

        return html_handler


def _not_found_text() -> tuple[str, str]:
    error = not_found()
    return error.title, error.message
