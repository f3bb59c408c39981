"""Authoring challenges in the admin pages: each kind's form, made from the models the API
validates a challenge body with (the fields every challenge has, the kind's own sections
from its `config_model` and its own limits from its `limits_model`), and what the form sends,
created, changed or deleted by the same service functions as `POST`, `PATCH` and `DELETE
/v1/challenges`. A new kind brings its form with its models; nothing here names a kind.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from app.challenge import service as challenges
from app.challenge.config import ChallengeState
from app.challenge.models import Challenge
from app.challenge.registry import find_kind, registered
from app.challenge.schemas import ChallengeCreate, ChallengeUpdate
from app.errors import AppError, detail_text
from app.input_guard import refuse_unstorable_value
from app.unit_of_work import UnitOfWork
from app.web.schema_form import (
    FieldGroup,
    FormField,
    FormItem,
    Problem,
    body_from_form,
    form_item,
    model_items,
    shown_values,
    with_choices,
)
from app.web.schema_form import default_values as form_defaults

# Chosen before the form (the kind), or by the console's buttons (the state: a challenge made
# here starts as a draft, published when its admin says so).
_NOT_IN_FORM = ("kind", "state")
COPY_TITLE = " (copy)"


@dataclass(frozen=True)
class KindChoice:
    name: str
    description: str


def kind_choices() -> list[KindChoice]:
    return [KindChoice(kind.name, kind.description) for kind in registered().values()]


@dataclass(frozen=True)
class ChallengeForm:
    kind: str
    description: str
    items: tuple[FormItem, ...]


def challenge_form(kind_name: str, *, editing: bool = False) -> ChallengeForm:
    """The form of a challenge of this kind (`KindNotFound` for another name): the fields every
    challenge has, with the kind's sections where the body names its kind, and its own
    limits beside the core's. An edit has no slug (a challenge keeps it)."""
    kind = find_kind(kind_name)
    skip = (*_NOT_IN_FORM, "slug") if editing else _NOT_IN_FORM
    items: list[FormItem] = []
    for name, info in ChallengeCreate.model_fields.items():
        if name == "kind":
            items.extend(model_items(kind.config_model))
        if info.exclude or name in skip:
            continue
        item = form_item(name, info)
        if name == "limits" and isinstance(item, FieldGroup):
            own = model_items(kind.limits_model, "limits.", sections=False)
            item = replace(item, fields=(*item.fields, *_fields(own)))
        if name == "scoring":
            # Only the strategies the kind allows are offered.
            item = with_choices(item, "scoring.strategy", [str(s) for s in kind.strategies])
        items.append(item)
    return ChallengeForm(kind.name, kind.description, tuple(items))


def _fields(items: Sequence[FormItem]) -> list[FormField]:
    return [item for item in items if isinstance(item, FormField)]


def new_values(form: ChallengeForm) -> dict[str, str]:
    return form_defaults(form.items)


def stored_values(form: ChallengeForm, challenge: Challenge) -> dict[str, str]:
    """The form filled with the challenge as its admins read it over the API."""
    return shown_values(form.items, _admin_body(challenge))


def copy_values(
    form: ChallengeForm, session: Session, tenant_id: uuid.UUID, challenge: Challenge
) -> dict[str, str]:
    """The form filled with a copy of the challenge: a slug no challenge of the tenant has,
    its title marked as a copy."""
    body = _admin_body(challenge)
    title = challenge.title
    body["title"] = title[: 200 - len(COPY_TITLE)] + COPY_TITLE
    body["slug"] = free_copy_slug(session, tenant_id, challenge.slug)
    return shown_values(form.items, body)


def _admin_body(challenge: Challenge) -> dict[str, Any]:
    return challenges.to_admin_view(challenge).model_dump(mode="json")


def free_copy_slug(session: Session, tenant_id: uuid.UUID, slug: str) -> str:
    """`<slug>-copy`, or `-copy-2`, `-copy-3`...: the first the tenant has no challenge at."""
    base = slug[:52].rstrip("-")
    for number in range(1, 1000):
        candidate = f"{base}-copy" if number == 1 else f"{base}-copy-{number}"
        if challenges.challenge_by_slug(session, tenant_id, candidate) is None:
            return candidate
    return f"{base}-copy-{uuid.uuid4().hex[:8]}"


# Saving ------------------------------------------------------------------------------------------


def _placed(details: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """A 422's problems (or a refusal's), each at its field, in the API's plain words."""
    return [
        (tuple(part for part in detail.get("loc", ()) if part != "body"), detail_text(detail))
        for detail in details
    ]


def _refused(error: AppError) -> list[Problem]:
    """A service's refusal: each problem its details name (a 422's), else its message (the
    API's) about the body as a whole."""
    details = error.details
    if isinstance(details, list) and details and all(isinstance(d, Mapping) for d in details):
        return _placed([dict(d) for d in details])
    return [((), error.message)]


def _with_unreadable(problems: list[Problem], unreadable: list[Problem]) -> list[Problem]:
    """The body's problems and the form's JSON texts that do not parse: a field whose text
    does not parse is not "required" too."""
    broken = {path for path, _ in unreadable}
    kept = [
        (path, text)
        for path, text in problems
        if not any(path[: len(field)] == field for field in broken)
    ]
    return [*unreadable, *kept]


def create_from_form(
    work: UnitOfWork, tenant_id: uuid.UUID, form: ChallengeForm, values: Mapping[str, str]
) -> tuple[Challenge | None, list[Problem]]:
    """A draft challenge made from the form's values, or everything wrong with them: the
    body's problems as the API lists them (`body_problems`), and each JSON text that does not
    parse."""
    body, unreadable = body_from_form(form.items, values)
    body = {**body, "kind": form.kind, "state": ChallengeState.DRAFT.value}
    try:
        refuse_unstorable_value(body, ("body",))
        created = ChallengeCreate.model_validate(body)
    except ValidationError:
        return None, _with_unreadable(_placed(challenges.body_problems(body)), unreadable)
    except AppError as error:
        return None, _with_unreadable(_refused(error), unreadable)
    if unreadable:
        return None, _with_unreadable(_placed(challenges.body_problems(body)), unreadable)
    try:
        return challenges.create_challenge(work.session, tenant_id, created), []
    except AppError as error:
        if error.status_code == 404:
            raise
        return None, _refused(error)


def update_from_form(
    work: UnitOfWork,
    tenant_id: uuid.UUID,
    challenge_id: uuid.UUID,
    slug: str,
    form: ChallengeForm,
    values: Mapping[str, str],
) -> tuple[Challenge | None, list[Problem]]:
    """The challenge changed to the form's values, or everything wrong with them. The form
    holds the whole challenge: a field left empty is set back to its default (a PATCH naming
    every field the form has)."""
    body, unreadable = body_from_form(form.items, values)
    for item in form.items:
        if item.path not in body:
            body[item.path] = {} if isinstance(item, FieldGroup) else item.default

    def every_problem() -> list[Problem]:
        # The form holds the whole challenge: checked as that challenge's creation would be.
        whole = {**body, "slug": slug, "kind": form.kind}
        return _with_unreadable(_placed(challenges.body_problems(whole)), unreadable)

    try:
        refuse_unstorable_value(body, ("body",))
        changes = ChallengeUpdate.model_validate(body)
    except ValidationError:
        return None, every_problem()
    except AppError as error:
        return None, _with_unreadable(_refused(error), unreadable)
    if unreadable:
        return None, every_problem()
    try:
        saved, _ = challenges.update_challenge(work, tenant_id, challenge_id, changes)
        return saved, []
    except AppError as error:
        if error.status_code == 404:
            raise
        return None, _refused(error)
