"""Challenge templates: each kind's challenges that work as they are, offline
(`ChallengeKind.templates`), for an organizer to start from in the console's forms or with
`"template"` in a body of `POST /v1/challenges`; and the slug a challenge gets from its title
when its body gives none."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError
from slugify import slugify

from app.challenge.challenge_kind import ChallengeTemplate
from app.challenge.reference import ChallengeSlug
from app.challenge.registry import registered
from app.kit.errors import NotFound, ValidationFailed

# Room for `-2`... after a slug made from a title (a slug has at most 64 characters).
_TITLE_SLUG_CHARS = 56
_SLUG = TypeAdapter(ChallengeSlug)


def all_templates(kind: str | None = None) -> list[ChallengeTemplate]:
    """Every registered kind's templates (or one kind's), the kinds in their registration
    order, each kind's default first."""
    return [
        template
        for name, registered_kind in registered().items()
        if kind is None or name == kind
        for template in registered_kind.templates()
    ]


def find_template(name: str) -> ChallengeTemplate:
    """The template of this name (NotFound otherwise)."""
    for template in all_templates():
        if template.name == name:
            return template
    raise NotFound(f"no challenge template named {name!r}")


def default_template(kind: str) -> ChallengeTemplate | None:
    found = all_templates(kind)
    return found[0] if found else None


def merge_patch(target: Any, patch: Any) -> Any:
    """JSON Merge Patch (RFC 7386): an object merges into an object field by field (a null
    removes the field), anything else replaces the target; and an object of another `type`
    than the target's (another verifier) replaces it whole. Where the target has no object,
    the patch's value is taken as it is (its nulls are the body's "not given"), so the walk
    is only as deep as the template, however deep a body nests."""
    if not isinstance(patch, Mapping) or not isinstance(target, Mapping):
        return patch
    if "type" in patch and "type" in target and patch["type"] != target["type"]:
        # Another shape of a union (an llm_judge verifier for a contains one): the template's
        # fields are the other shape's, so the body's object stands alone.
        return patch
    merged = dict(target)
    for name, value in patch.items():
        if value is None:
            merged.pop(name, None)
        else:
            merged[name] = merge_patch(merged.get(name), value)
    return merged


def with_template(data: Mapping[str, Any]) -> dict[str, Any]:
    """A body naming a template (`"template"`) as the template's body with the body laid over
    it; any other body as it is. A name no template has is a 422 naming `template`."""
    name = data.get("template")
    given = {field: value for field, value in data.items() if field != "template"}
    if name is None:
        return given
    try:
        template = find_template(str(name))
    except NotFound:
        names = ", ".join(t.name for t in all_templates())
        raise ValidationFailed.at(
            ["template"], f"no template is named {name!r}; the templates are {names}"
        ) from None
    merged = merge_patch(template.body, given)
    return dict(merged)


def slug_of_title(title: str, taken: Callable[[str], bool]) -> str:
    """A slug made from a title (`Make it say PWNED!` is `make-it-say-pwned`), with `-2`,
    `-3`... when `taken` says it is; `challenge` when the title has nothing to make one of."""
    base = slugify(title, max_length=_TITLE_SLUG_CHARS, word_boundary=True) or "challenge"
    try:
        _SLUG.validate_python(base)
    except ValidationError:
        # A title of 32 hexadecimal digits makes a slug that reads as an id.
        base = slugify(f"challenge {base}", max_length=_TITLE_SLUG_CHARS)
    for number in range(1, 1000):
        candidate = base if number == 1 else f"{base}-{number}"
        if not taken(candidate):
            return candidate
    return f"{base}-{uuid.uuid4().hex[:6]}"
