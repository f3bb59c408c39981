"""The form of practice and test runs, shared by the practice page and the admin's test-run
page: made, as every form of the console is (`app.web.schema_form`), from the model
of the kind's unscored runs (`AttemptKind.unscored_model`, or a submission's), and read back
as the body an API client would send; and the list of runs below it, which the page's script
(static/runs.js) swaps for a fresh one while a run is pending, leaving the form as typed."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from app.attempt.attempt_kind import unscored_fields
from app.attempt.schemas import UnscoredRunRead
from app.challenge.registry import find_kind, kind_as
from app.web import auth
from app.web.rendering import json_response, render_macro
from app.web.schema_form import FormField, body_from_form, each_field, model_items
from app.web.web_kind import RunVerdict, WebKind


@dataclass(frozen=True)
class RunListing:
    """The runs a page lists, with what its script needs: where to ask for a fresh list (the
    page's `/live`), the page itself (the no-script "refresh" link), and a version that changes
    whenever a run's status does."""

    title: str
    runs: Sequence[UnscoredRunRead]
    total: int
    empty_text: str
    page_url: str
    # The challenge's kind, which words the runs' verdicts.
    kind: str = ""

    def verdict(self, run: UnscoredRunRead) -> RunVerdict | None:
        kind = kind_as(self.kind, WebKind) if self.kind else WebKind()
        return kind.run_verdict(run)

    @property
    def live_url(self) -> str:
        return self.page_url + "/live"

    @property
    def pending(self) -> bool:
        return any(not run.status.finished for run in self.runs)

    @property
    def version(self) -> str:
        states = ",".join(f"{run.id}:{run.status}" for run in self.runs)
        return hashlib.sha256(f"{self.total}|{states}".encode()).hexdigest()[:16]


def run_list_response(
    request: Request, web: auth.WebSession | None, listing: RunListing
) -> Response:
    """The list as the page's script reads it: its HTML (the page's own macro), whether a run
    is still pending, and its version."""
    html = render_macro("runs_macros.html", "run_list", listing)
    body = {"pending": listing.pending, "version": listing.version, "html": html}
    return json_response(request, web, body)


def run_fields(kind_name: str) -> list[FormField]:
    """The inputs of a challenge kind's practice and test runs (none for a kind without)."""
    model = unscored_fields(find_kind(kind_name))
    return [] if model is None else list(each_field(model_items(model, sections=False)))


def run_body(kind_name: str, sent: Mapping[str, str]) -> dict[str, Any]:
    """The form's values as a body: an empty input is a field not given; a number that does
    not read is passed on as typed, for the service to name."""
    body, _ = body_from_form(run_fields(kind_name), sent)
    return body
