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
from app.challenge.challenge_kind import ChallengeTemplate
from app.challenge.config import ChallengeState, Visibility
from app.challenge.models import Challenge
from app.challenge.registry import find_kind, kind_as, registered
from app.challenge.schemas import ChallengeCreate, ChallengeUpdate
from app.challenge.templates import all_templates, default_template, find_template
from app.evaluation.engine.feedback import FEEDBACK_MODE_WORDS, FEEDBACK_MODES
from app.evaluation.engine.offline import OFFLINE_MODELS
from app.kit.config import get_settings
from app.kit.errors import AppError, NotFound, ValidationFailed, detail_text
from app.kit.input_guard import refuse_unstorable_value
from app.kit.unit_of_work import UnitOfWork
from app.outbound.prices import bundled_prices
from app.scoring.strategies import Strategy, scoring_strategy
from app.web.schema_form import (
    FieldGroup,
    FormField,
    FormItem,
    Problem,
    body_from_form,
    each_field,
    form_item,
    model_items,
    shown_values,
    with_choices,
    with_suggestions,
)
from app.web.schema_form import default_values as form_defaults
from app.web.web_kind import WebKind

# Chosen before the form (the kind), or by the console's buttons (the state: a challenge made
# here starts as a draft, published when its admin says so).
_NOT_IN_FORM = ("kind", "state")
COPY_TITLE = " (copy)"
# What every challenge's form asks first, in this order; then the kind's essential fields.
_FIRST = ("title", "slug", "visibility", "goal")
VISIBILITY_WORDS = {
    Visibility.PUBLIC: "Public: listed, its page and leaderboard open to anyone",
    Visibility.UNLISTED: "Unlisted: your tenant's signed-in participants see it",
    Visibility.PRIVATE: "Private: through the API only",
}
METRIC_WORDS = {
    "pass@k": "pass@k: k independent tries, the best counts",
    "seq@k": "seq@k: k tries in sequence, each seeing the earlier ones and their feedback",
}
# Models suggested per provider whose key this server has (the price map lists hundreds).
_MODELS_PER_PROVIDER = 30


@dataclass(frozen=True)
class TemplateChoice:
    name: str
    title: str
    description: str


@dataclass(frozen=True)
class KindChoice:
    name: str
    title: str
    description: str
    templates: tuple[TemplateChoice, ...]


def _template_choices(kind: str) -> tuple[TemplateChoice, ...]:
    return tuple(TemplateChoice(t.name, t.title, t.description) for t in all_templates(kind))


def kind_choices() -> list[KindChoice]:
    return [
        KindChoice(kind.name, kind.people_name, kind.description, _template_choices(kind.name))
        for kind in registered().values()
    ]


@dataclass(frozen=True)
class ChallengeForm:
    kind: str
    title: str  # the kind's name in people's words
    description: str
    # Every input, in the order of the body (what the form sends is read by these).
    items: tuple[FormItem, ...]
    # What the page shows first, and what it folds under "More settings": the same inputs,
    # a section whose fields are in both shown as two parts.
    essential: tuple[FormItem, ...] = ()
    more: tuple[FormItem, ...] = ()
    templates: tuple[TemplateChoice, ...] = ()


def challenge_form(kind_name: str, *, editing: bool = False) -> ChallengeForm:
    """The form of a challenge of this kind (`KindNotFound` for another name): the fields every
    challenge has, with the kind's sections where the body names its kind, and its own
    limits beside the core's, each choice in people's words. An edit has no slug (a challenge
    keeps it)."""
    kind = find_kind(kind_name)
    web = kind_as(kind_name, WebKind)
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
        items.append(item)
    choices = {**_core_choices(kind.strategies), **web.form_choices()}
    models = suggested_models() if web.model_fields else ()
    shaped: list[FormItem] = []
    for item in items:
        for path, offered in choices.items():
            values, labels = zip(*offered, strict=True) if offered else ((), ())
            item = with_choices(item, path, values, labels)
        for path in web.model_fields:
            item = with_suggestions(item, path, models)
        shaped.append(item)
    essential, more = _arranged(shaped, (*_FIRST, *web.essential_fields))
    return ChallengeForm(
        kind.name,
        kind.people_name,
        kind.description,
        tuple(shaped),
        essential,
        more,
        _template_choices(kind.name),
    )


def _core_choices(strategies: Sequence[Strategy]) -> dict[str, list[tuple[str, str]]]:
    """The choices of the fields every challenge (or every kind that runs trials) has."""
    return {
        "visibility": [(str(value), words) for value, words in VISIBILITY_WORDS.items()],
        # Only the strategies the kind allows are offered.
        "scoring.strategy": [
            (str(strategy.name), f"{strategy.label}: {strategy.explanation}")
            for strategy in map(scoring_strategy, strategies)
        ],
        "evaluation.metric": list(METRIC_WORDS.items()),
        "evaluation.feedback_mode": [
            (mode, FEEDBACK_MODE_WORDS[mode])
            for mode in FEEDBACK_MODE_WORDS
            if mode in FEEDBACK_MODES
        ],
    }


def _arranged(
    items: Sequence[FormItem], first: Sequence[str]
) -> tuple[tuple[FormItem, ...], tuple[FormItem, ...]]:
    """The inputs whose paths are in `first` (in that order; a section's fields where the
    first of them falls), and the others in the body's order."""
    by_path = {item.path: item for item in items}
    essential: list[FormItem] = []
    for path in first:
        section = path.split(".", 1)[0]
        item = by_path.get(path) or by_path.get(section)
        if item is None or any(shown.path == item.path for shown in essential):
            continue
        if isinstance(item, FieldGroup) and path != item.path:
            wanted = [one for one in item.fields if one.path in first]
            item = replace(item, fields=tuple(sorted(wanted, key=lambda f: first.index(f.path))))
        essential.append(item)
    shown = {one.path for item in essential for one in _inputs(item)}
    more: list[FormItem] = []
    for item in items:
        if isinstance(item, FieldGroup):
            rest = tuple(one for one in item.fields if one.path not in shown)
            if rest and len(rest) < len(item.fields):
                more.append(replace(item, fields=rest, part="more"))
            elif rest:
                more.append(item)
        elif item.path not in shown:
            more.append(item)
    return tuple(essential), tuple(more)


def _inputs(item: FormItem) -> tuple[FormItem, ...]:
    return (item, *item.fields) if isinstance(item, FieldGroup) else (item,)


def suggested_models() -> tuple[str, ...]:
    """The models a challenge here can name and a worker call: the offline ones, then those
    of the providers this server has keys for (from litellm's price map, a few each)."""
    policy = get_settings().outbound_policy()
    catalog = policy.catalog
    keyed = sorted(
        provider
        for provider, alternatives in catalog.provider_keys.items()
        if alternatives
        and catalog.missing_key(provider, policy.environ) is None
        and policy.providers.refusal(provider, catalog) is None
    )
    prices = bundled_prices()
    found: list[str] = list(OFFLINE_MODELS)
    for provider in keyed:
        names = sorted(
            key if key.startswith(f"{provider}/") else f"{provider}/{key}"
            for key, owner in prices.providers.items()
            if owner == provider
        )
        found.extend(names[:_MODELS_PER_PROVIDER])
    return tuple(found)


def _fields(items: Sequence[FormItem]) -> list[FormField]:
    return [item for item in items if isinstance(item, FormField)]


def chosen_template(kind: str | None, name: str | None) -> ChallengeTemplate | None:
    """The template a new form starts from: the one named (of the kind, when one is named),
    else the kind's default; None for a kind without templates (NotFound: no such template,
    or one of another kind)."""
    if name is None:
        return default_template(kind) if kind is not None else None
    chosen = find_template(name)
    if kind is not None and chosen.kind != kind:
        raise NotFound(f"no template {name!r} of {kind} challenges")
    return chosen


def new_values(form: ChallengeForm, template: ChallengeTemplate | None) -> dict[str, str]:
    """A new form's values: the template's body, which works as it is, with no title and no
    slug (made from the title); the fields' defaults without a template."""
    if template is None:
        return form_defaults(form.items)
    return shown_values(form.items, template.body)


def form_models(form: ChallengeForm) -> tuple[str, ...]:
    """The models the form's model fields suggest (none when it has none)."""
    if any(one.suggestions for one in each_field(form.items)):
        return suggested_models()
    return ()


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
    """A service's refusal: a 422's problems (or another refusal's listed as problems: a slug
    taken), each at its field; another refusal's message (the API's), at the field its
    details name, if they name one."""
    if isinstance(error, ValidationFailed):
        return _placed(error.problems)
    details = error.details
    if (
        isinstance(details, list)
        and details
        and all(isinstance(detail, Mapping) and "message" in detail for detail in details)
    ):
        return _placed(details)
    if isinstance(details, list) and details and isinstance(details[0], Mapping):
        location = details[0].get("loc")
        if isinstance(location, list):
            return [(tuple(part for part in location if part != "body"), error.message)]
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
            if isinstance(item, FieldGroup):
                body[item.path] = None if item.optional else {}
            else:
                body[item.path] = item.default

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
