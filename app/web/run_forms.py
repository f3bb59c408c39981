"""The form of practice and test runs, shared by the practice page and the admin's test-run
page: made from the fields of the kind's unscored runs (`AttemptKind.unscored_model`, or a
submission's), and the body the service takes from what the form sent."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin

from app.attempt.attempt_kind import unscored_fields
from app.challenge.registry import find_kind

# Fields a person writes at length (a prompt, a defense): a text area, not a line.
_LONG_TEXTS = ("prompt", "system_prompt")


@dataclass(frozen=True)
class RunField:
    name: str
    label: str
    help: str
    required: bool
    # "textarea", "text" or "number"
    input: str
    step: str = "any"


def _numeric(annotation: Any) -> type | None:
    options = (
        get_args(annotation)
        if get_origin(annotation) in (Union, types.UnionType)
        else (annotation,)
    )
    for option in options:
        if option in (int, float):
            return option  # type: ignore[no-any-return]
    return None


def run_fields(kind_name: str) -> list[RunField]:
    """The form of a challenge kind's practice and test runs (none for a kind without)."""
    model = unscored_fields(find_kind(kind_name))
    if model is None:
        return []
    found = []
    for name, info in model.model_fields.items():
        number = _numeric(info.annotation)
        shape = "number" if number else "textarea" if name in _LONG_TEXTS else "text"
        found.append(
            RunField(
                name=name,
                label=name.replace("_", " ").capitalize(),
                help=info.description or "",
                required=info.is_required(),
                input=shape,
                step="1" if number is int else "any",
            )
        )
    return found


def run_body(kind_name: str, sent: Mapping[str, str]) -> dict[str, Any]:
    """The form's fields as a body's: empty ones left out, numbers as numbers (a number that
    does not read is passed on as typed, for the service to name)."""
    body: dict[str, Any] = {}
    for field in run_fields(kind_name):
        value = sent.get(field.name, "")
        if not value.strip():
            continue
        if field.input == "number":
            try:
                body[field.name] = int(value) if field.step == "1" else float(value)
            except ValueError:
                body[field.name] = value
        else:
            body[field.name] = value
    return body
