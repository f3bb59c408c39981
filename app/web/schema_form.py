"""Forms made from the pydantic models a request body is validated with: each field of the model
as an input, what a browser sends back as the body an API client would send, and that body's
validation errors placed beside the inputs they are about.

A field holding one simple value (a text, a number, yes or no, one of a few values, a date and
time) is an input of its own. A section (a nested model) with at least one such field is a
fieldset of inputs, one per field. Anything else (a union of shapes, a list, a mapping, a
section within a section) is a text area holding JSON. The form adds no rule of its own: an
empty input is a field not given, and the body goes to the same models and service functions
as the API's, so a form says exactly what the API says about the same body.
"""

from __future__ import annotations

import json
import re
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import Enum, StrEnum
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AwareDatetime, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

from app.kit.error_words import json_error_words

# A text the model allows to be longer than this is a text area, not a one-line input.
LONG_TEXT_CHARS = 500
# What a datetime-local input sends (no offset): the form's dates and times are UTC.
_LOCAL_DATETIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?")


class Widget(StrEnum):
    TEXT = "text"
    LONG_TEXT = "long_text"
    NUMBER = "number"
    CHOICE = "choice"
    YES_NO = "yes_no"
    DATETIME = "datetime"
    JSON = "json"


@dataclass(frozen=True)
class FormField:
    """One input: `path` is the field's dotted path in the body (`target.model`), also the
    input's name."""

    path: str
    label: str
    widget: Widget
    required: bool
    help: str = ""
    choices: tuple[str, ...] = ()
    # The field's default as JSON (None: none, or null): a new form starts with it.
    default: Any = None
    placeholder: str = ""
    # Each choice in people's words (as many as `choices`; none: the choices as they are).
    choice_labels: tuple[str, ...] = ()
    # Values offered for a text input, which still takes any (a model id among those this
    # server can call).
    suggestions: tuple[str, ...] = ()

    @property
    def element_id(self) -> str:
        return "field-" + self.path.replace(".", "-")

    @property
    def labelled_choices(self) -> list[tuple[str, str]]:
        labels = self.choice_labels if len(self.choice_labels) == len(self.choices) else ()
        return list(zip(self.choices, labels or self.choices, strict=True))


@dataclass(frozen=True)
class FieldGroup:
    """A section shown field by field (a fieldset); its value is the object of the fields
    given."""

    path: str
    label: str
    required: bool
    help: str = ""
    fields: tuple[FormField, ...] = field(default_factory=tuple)
    # A section that is null unless given (a benchmark's split): the form asks whether to
    # give it, by an input named as the section, "on" or "off".
    optional: bool = False
    # Which part of a section shown in two places this is ("more": its further fields).
    part: str = ""

    @property
    def element_id(self) -> str:
        suffix = f"-{self.part}" if self.part else ""
        return "field-" + self.path.replace(".", "-") + suffix


FormItem = FormField | FieldGroup


# Words of field names that are written in capitals.
_ACRONYMS = {"api": "API", "url": "URL", "usd": "USD", "id": "ID"}


def _label(name: str) -> str:
    words = [_ACRONYMS.get(word, word) for word in name.split("_")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def _one_value(annotation: Any) -> tuple[Any, list[Any]]:
    """The type of the one value a field holds, without `Annotated` and `| None` (None when
    it may hold values of several types: a union of shapes), and the constraints found on
    the way."""
    constraints: list[Any] = []
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation, *metadata = get_args(annotation)
            constraints.extend(metadata)
        elif origin is Union or origin is types.UnionType:
            members = [member for member in get_args(annotation) if member is not type(None)]
            if len(members) != 1:
                return None, constraints
            annotation = members[0]
        else:
            return annotation, constraints


def _max_length(constraints: Iterable[Any]) -> int | None:
    for constraint in constraints:
        length = getattr(constraint, "max_length", None)
        if isinstance(length, int):
            return length
    return None


def _default(info: FieldInfo) -> Any:
    if info.is_required():
        return None
    value = info.get_default(call_default_factory=True)
    return None if value is PydanticUndefined else to_jsonable_python(value)


def _widget(value_type: Any, constraints: list[Any]) -> tuple[Widget, tuple[str, ...]]:
    """The input of a field holding one value of this type, and its choices if it has any."""
    if get_origin(value_type) is Literal:
        options = get_args(value_type)
        if all(isinstance(option, str) for option in options):
            return Widget.CHOICE, tuple(options)
        return Widget.JSON, ()
    if not isinstance(value_type, type):
        return Widget.JSON, ()
    if issubclass(value_type, Enum):
        return Widget.CHOICE, tuple(str(member.value) for member in value_type)
    if issubclass(value_type, bool):
        return Widget.YES_NO, ()
    if issubclass(value_type, int | float):
        return Widget.NUMBER, ()
    if issubclass(value_type, str):
        length = _max_length(constraints)
        long = length is None or length > LONG_TEXT_CHARS
        return (Widget.LONG_TEXT if long else Widget.TEXT), ()
    if value_type is AwareDatetime or issubclass(value_type, datetime):
        return Widget.DATETIME, ()
    return Widget.JSON, ()


def _placeholder(info: FieldInfo, widget: Widget) -> str:
    if not info.examples:
        return ""
    example = info.examples[0]
    return json.dumps(example) if widget is Widget.JSON else str(example)


def form_item(name: str, info: FieldInfo, prefix: str = "", *, sections: bool = True) -> FormItem:
    """The input (or fieldset, for a section when `sections`) of one field of a model."""
    path = f"{prefix}{name}"
    value_type, constraints = _one_value(info.annotation)
    required = info.is_required()
    help_text = info.description or ""
    if isinstance(value_type, type) and issubclass(value_type, BaseModel):
        if sections:
            fields = tuple(
                item
                for item in model_items(value_type, f"{path}.", sections=False)
                if isinstance(item, FormField)
            )
            if any(item.widget is not Widget.JSON for item in fields):
                optional = not required and _default(info) is None
                return FieldGroup(path, _label(name), required, help_text, fields, optional)
        return FormField(
            path,
            _label(name),
            Widget.JSON,
            required,
            help_text,
            default=_default(info),
            placeholder=_placeholder(info, Widget.JSON),
        )
    constraints = [*info.metadata, *constraints]
    widget, choices = (
        _widget(value_type, constraints) if value_type is not None else (Widget.JSON, ())
    )
    return FormField(
        path,
        _label(name),
        widget,
        required,
        help_text,
        choices,
        default=_default(info),
        placeholder=_placeholder(info, widget),
    )


def model_items(
    model: type[BaseModel], prefix: str = "", *, sections: bool = True, skip: Iterable[str] = ()
) -> list[FormItem]:
    """The inputs of a model's fields, in its order (fields excluded from its dumps, and
    those in `skip`, left out)."""
    skipped = set(skip)
    return [
        form_item(name, info, prefix, sections=sections)
        for name, info in model.model_fields.items()
        if not info.exclude and name not in skipped
    ]


def _changed(item: FormItem, path: str, change: Callable[[FormField], FormField]) -> FormItem:
    if isinstance(item, FieldGroup):
        fields = tuple(change(one) if one.path == path else one for one in item.fields)
        return replace(item, fields=fields)
    return change(item) if item.path == path else item


def with_choices(
    item: FormItem, path: str, choices: Sequence[str], labels: Sequence[str] = ()
) -> FormItem:
    """The item with the input at `path` offering only these choices (each in people's
    words, `labels`); a text input becomes a choice of them."""

    def offer(one: FormField) -> FormField:
        widget = Widget.CHOICE if one.widget in (Widget.TEXT, Widget.CHOICE) else one.widget
        return replace(one, widget=widget, choices=tuple(choices), choice_labels=tuple(labels))

    return _changed(item, path, offer)


def with_suggestions(item: FormItem, path: str, suggestions: Sequence[str]) -> FormItem:
    """The item with the text input at `path` suggesting these values (it takes any)."""
    return _changed(item, path, lambda one: replace(one, suggestions=tuple(suggestions)))


def each_field(items: Iterable[FormItem]) -> Iterable[FormField]:
    for item in items:
        if isinstance(item, FieldGroup):
            yield from item.fields
        else:
            yield item


# Values shown --------------------------------------------------------------------------------


def _datetime_text(value: Any) -> str:
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if not isinstance(moment, datetime):
        return str(value)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    shape = "%Y-%m-%dT%H:%M" if moment.second == 0 else "%Y-%m-%dT%H:%M:%S"
    return moment.strftime(shape)


def value_text(item: FormField, value: Any) -> str:
    """What the input shows for a value of the body."""
    if value is None:
        return ""
    if item.widget is Widget.JSON:
        return json.dumps(to_jsonable_python(value), indent=2, ensure_ascii=False)
    if item.widget is Widget.YES_NO:
        return "true" if value else "false"
    if item.widget is Widget.DATETIME:
        return _datetime_text(value)
    if item.widget is Widget.NUMBER:
        return json.dumps(value)
    return str(value.value if isinstance(value, Enum) else value)


def _at(data: Mapping[str, Any], path: str, missing: Any = None) -> Any:
    """The value at a dotted path; `missing` when the data does not have it (a null it has
    is None)."""
    value: Any = data
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return missing
        value = value[part]
    return value


GIVEN, NOT_GIVEN = "on", "off"


def _optional_sections(items: Iterable[FormItem], given: Callable[[str], bool]) -> dict[str, str]:
    return {
        item.path: GIVEN if given(item.path) else NOT_GIVEN
        for item in items
        if isinstance(item, FieldGroup) and item.optional
    }


def shown_values(items: Sequence[FormItem], data: Mapping[str, Any]) -> dict[str, str]:
    """What each input shows for a body (a stored challenge as the API reads it; a template's
    body): the fields it has, the defaults of those it lacks."""
    shown = {
        item.path: value_text(item, _at(data, item.path, item.default))
        for item in each_field(items)
    }
    return {**shown, **_optional_sections(items, lambda path: _at(data, path) is not None)}


def default_values(items: Sequence[FormItem]) -> dict[str, str]:
    """What each input of a new form shows: the field's default."""
    shown = {item.path: value_text(item, item.default) for item in each_field(items)}
    return {**shown, **_optional_sections(items, lambda path: False)}


# The body sent ---------------------------------------------------------------------------------

# A problem the form finds before the body exists (JSON that does not parse): where, and why.
Problem = tuple[tuple[str | int, ...], str]
_NOT_GIVEN = object()


class _Constant(Exception):
    pass


def _refuse_constant(_name: str) -> Any:
    raise _Constant


def _number(text: str) -> Any:
    """A number as a client would write it in JSON; anything else as the text it is, for the
    model to say what is wrong with it."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (ValueError, _Constant):
        return text
    return value if isinstance(value, int | float) and not isinstance(value, bool) else text


def _value(item: FormField, text: str) -> Any:
    text = text.replace("\r\n", "\n")  # browsers send a text area's lines ended by CRLF
    if not text.strip():
        return _NOT_GIVEN
    if item.widget is Widget.NUMBER:
        return _number(text.strip())
    if item.widget is Widget.YES_NO:
        return {"true": True, "false": False}.get(text, text)
    if item.widget is Widget.DATETIME:
        text = text.strip()
        return f"{text}+00:00" if _LOCAL_DATETIME.fullmatch(text) else text
    if item.widget is Widget.JSON:
        return json.loads(text)
    return text


def body_from_form(
    items: Iterable[FormItem], form: Mapping[str, str]
) -> tuple[dict[str, Any], list[Problem]]:
    """The body the form's values make (an empty input: the field not given), and the fields
    whose JSON does not parse."""
    body: dict[str, Any] = {}
    problems: list[Problem] = []

    def read(item: FormField, into: dict[str, Any], name: str) -> None:
        try:
            value = _value(item, form.get(item.path, ""))
        except json.JSONDecodeError as error:
            text = f"{item.path}: {json_error_words(error)}"
            problems.append((tuple(item.path.split(".")), text))
            return
        if value is not _NOT_GIVEN:
            into[name] = value

    for item in items:
        name = item.path.rsplit(".", 1)[-1]
        if isinstance(item, FieldGroup):
            section: dict[str, Any] = {}
            for one in item.fields:
                read(one, section, one.path.rsplit(".", 1)[-1])
            asked = form.get(item.path) if item.optional else None
            if asked == GIVEN or (asked is None and (item.required or _chosen(item, section))):
                body[name] = section
        else:
            read(item, body, name)
    return body, problems


def _chosen(group: FieldGroup, section: Mapping[str, Any]) -> bool:
    """Whether a section was filled in, when the form does not say (a form that has no input
    asking it): a field it requires is given, or a value differs from the default a new form
    shows."""
    for one in group.fields:
        name = one.path.rsplit(".", 1)[-1]
        if name in section and (one.required or section[name] != one.default):
            return True
    return False


def placed(
    items: Sequence[FormItem], problems: Iterable[Problem]
) -> tuple[dict[str, list[str]], list[str]]:
    """Each problem beside the input (or fieldset) its path falls in, the nearest one; those
    about no input (the body as a whole) apart."""
    anchors = {item.path for item in items} | {one.path for one in each_field(items)}
    beside: dict[str, list[str]] = {}
    apart: list[str] = []
    for path, text in problems:
        parts = [str(part) for part in path]
        for end in range(len(parts), 0, -1):
            anchor = ".".join(parts[:end])
            if anchor in anchors:
                beside.setdefault(anchor, []).append(text)
                break
        else:
            apart.append(text)
    return beside, apart
