"""The form of practice and test runs, shared by the practice page and the admin's test-run
page: made, as every form of the console is (`app.web.schema_form`), from the model
of the kind's unscored runs (`AttemptKind.unscored_model`, or a submission's), and read back
as the body an API client would send."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.attempt.attempt_kind import unscored_fields
from app.challenge.registry import find_kind
from app.web.schema_form import FormField, body_from_form, each_field, model_items


def run_fields(kind_name: str) -> list[FormField]:
    """The inputs of a challenge kind's practice and test runs (none for a kind without)."""
    model = unscored_fields(find_kind(kind_name))
    return [] if model is None else list(each_field(model_items(model, sections=False)))


def run_body(kind_name: str, sent: Mapping[str, str]) -> dict[str, Any]:
    """The form's values as a body: an empty input is a field not given; a number that does
    not read is passed on as typed, for the service to name."""
    body, _ = body_from_form(run_fields(kind_name), sent)
    return body
