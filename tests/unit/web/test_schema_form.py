"""Forms made from pydantic models (app/web/schema_form.py): which input each field
gets, the body a form's values make, the values a body shows, and where an error is placed."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, Field, StringConstraints

from app.web.schema_form import (
    FieldGroup,
    FormField,
    Widget,
    body_from_form,
    default_values,
    each_field,
    model_items,
    placed,
    shown_values,
)


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    depth: int = 1


class Section(BaseModel):
    model: str = Field(max_length=200, examples=["offline/echo"])
    prompt: str = Field(default="", max_length=50_000)
    temperature: float | None = Field(default=None, ge=0, le=2)
    inner: Inner = Field(default_factory=Inner)  # a section within a section: JSON


class Shapes(BaseModel):
    options: dict[str, Any] = Field(default_factory=dict)


class Body(BaseModel):
    slug: Annotated[str, StringConstraints(max_length=64)]
    note: str | None = None  # no length limit: a text area
    count: int = 3
    enabled: bool = True
    colour: Colour = Colour.RED
    mode: Literal["fast", "slow"] | None = None
    opens_at: AwareDatetime | None = None
    section: Section
    shapes: Shapes = Field(default_factory=Shapes)  # no simple field: JSON as a whole
    either: int | str | None = None
    tags: list[str] | None = Field(default=None, description="Labels.")
    hidden: str | None = Field(default=None, exclude=True)


class Labels(BaseModel):
    plugin_id: str
    cost_budget_usd: float
    k: int


ITEMS = model_items(Body)


def _by_path() -> dict[str, FormField | FieldGroup]:
    found: dict[str, FormField | FieldGroup] = {item.path: item for item in ITEMS}
    found.update({one.path: one for one in each_field(ITEMS)})
    return found


def test_each_field_gets_the_input_of_its_type() -> None:
    items = _by_path()
    widgets = {path: item.widget for path, item in items.items() if isinstance(item, FormField)}
    assert widgets == {
        "slug": Widget.TEXT,
        "note": Widget.LONG_TEXT,
        "count": Widget.NUMBER,
        "enabled": Widget.YES_NO,
        "colour": Widget.CHOICE,
        "mode": Widget.CHOICE,
        "opens_at": Widget.DATETIME,
        "section.model": Widget.TEXT,
        "section.prompt": Widget.LONG_TEXT,
        "section.temperature": Widget.NUMBER,
        "section.inner": Widget.JSON,
        "shapes": Widget.JSON,
        "either": Widget.JSON,
        "tags": Widget.JSON,
    }
    assert "hidden" not in items  # excluded from the model's dumps, so not the form's
    section = items["section"]
    assert isinstance(section, FieldGroup) and section.required
    colour, mode, model, tags = (
        items["colour"],
        items["mode"],
        items["section.model"],
        items["tags"],
    )
    assert isinstance(colour, FormField) and colour.choices == ("red", "blue")
    assert colour.default == "red" and not colour.required
    assert isinstance(mode, FormField) and mode.choices == ("fast", "slow")
    assert isinstance(model, FormField) and model.placeholder == "offline/echo"
    assert model.required and model.element_id == "field-section-model"
    assert isinstance(tags, FormField) and tags.help == "Labels."
    assert default_values(ITEMS)["section.inner"] == '{\n  "depth": 1\n}'
    assert [item.label for item in model_items(Labels)] == ["Plugin ID", "Cost budget USD", "K"]


def test_the_body_is_what_a_client_would_write() -> None:
    body, problems = body_from_form(
        ITEMS,
        {
            "slug": "été-✓",
            "note": "line one\r\nline two",
            "count": " 7 ",
            "enabled": "false",
            "colour": "blue",
            "mode": "",
            "opens_at": "2030-01-02T03:04",
            "section.model": "offline/echo",
            "section.temperature": "0.5",
            "section.prompt": "   ",
            "shapes": '{"options": {"a": [1, 2.5, null]}}',
            "either": "12",
            "unknown": "ignored",
        },
    )
    assert problems == []
    assert body == {
        "slug": "été-✓",
        "note": "line one\nline two",  # browsers end a text area's lines with CRLF
        "count": 7,
        "enabled": False,
        "colour": "blue",
        "opens_at": "2030-01-02T03:04+00:00",  # the form's dates are UTC
        "section": {"model": "offline/echo", "temperature": 0.5},
        "shapes": {"options": {"a": [1, 2.5, None]}},
        "either": 12,
    }


def test_what_is_not_a_number_or_a_choice_goes_to_the_model_as_typed() -> None:
    texts = {"many": "many", "NaN": "NaN", "Infinity": "Infinity", "true": "true", "[1]": "[1]"}
    for typed, sent in texts.items():
        body, _ = body_from_form(ITEMS, {"count": typed, "enabled": "maybe"})
        assert body == {"count": sent, "enabled": "maybe", "section": {}}
    # A number beyond a float is JSON's infinity: the storable-input check refuses it later.
    assert body_from_form(ITEMS, {"count": "1e400"})[0]["count"] == float("inf")
    # An offset given is kept; anything else is the model's to refuse.
    for typed in ("2030-01-02T03:04:05-02:00", "tomorrow"):
        assert body_from_form(ITEMS, {"opens_at": typed})[0]["opens_at"] == typed


def test_empty_inputs_are_fields_not_given() -> None:
    body, problems = body_from_form(ITEMS, {})
    # A required section is an empty object (its fields say what they miss), an optional one
    # is left out.
    assert (body, problems) == ({"section": {}}, [])


class Split(BaseModel):
    fraction: float = 0.5
    seed: int


class WithOptionalSection(BaseModel):
    split: Split | None = None


def test_an_optional_section_is_given_when_the_form_says_so() -> None:
    items = model_items(WithOptionalSection)
    shown = default_values(items)
    # The form asks whether to give it (an input named as the section), not given at first.
    assert shown == {"split": "off", "split.fraction": "0.5", "split.seed": ""}
    assert body_from_form(items, shown) == ({}, [])
    # Asked for, it is given with its fields as typed (a field left empty: not given).
    assert body_from_form(items, {**shown, "split": "on"})[0] == {"split": {"fraction": 0.5}}
    # Not asked for, whatever its fields show: an edit that unticks it removes it.
    changed = {**shown, "split.fraction": "0.25", "split.seed": "7"}
    assert body_from_form(items, changed) == ({}, [])
    # A form without the question (sent by a client of older pages): a value of its own, or
    # the field it requires, gives it.
    unasked = {name: value for name, value in changed.items() if name != "split"}
    assert body_from_form(items, unasked)[0] == {"split": {"fraction": 0.25, "seed": 7}}
    seeded = {"split.fraction": "0.5", "split.seed": "7"}
    assert body_from_form(items, seeded)[0] == {"split": {"fraction": 0.5, "seed": 7}}
    shown_again = shown_values(items, {"split": {"fraction": 0.25, "seed": 7}})
    assert shown_again == {"split": "on", "split.fraction": "0.25", "split.seed": "7"}
    assert shown_values(items, {"split": None})["split"] == "off"


def test_json_that_does_not_parse_is_reported_at_its_field() -> None:
    body, problems = body_from_form(ITEMS, {"shapes": '{"options":\n  {"a": }', "count": "2"})
    assert body == {"count": 2, "section": {}}
    assert problems == [
        (
            ("shapes",),
            "shapes: not valid JSON: a value was expected (text in double quotes, a number, "
            "true, false, null, an object {...} or a list [...]) at line 2, character 9",
        )
    ]


def test_errors_are_placed_beside_the_nearest_input() -> None:
    beside, apart = placed(
        ITEMS,
        [
            (("section", "temperature"), "too hot"),
            (("section", "inner", "depth"), "too deep"),  # inside a JSON field
            (("section",), "missing"),  # the fieldset itself
            (("tags", 0), "not a tag"),
            ((), "closes before it opens"),  # the body as a whole
            (("nowhere", "else"), "unknown field"),
        ],
    )
    assert beside == {
        "section.temperature": ["too hot"],
        "section.inner": ["too deep"],
        "section": ["missing"],
        "tags": ["not a tag"],
    }
    assert apart == ["closes before it opens", "unknown field"]


def test_a_body_shown_in_the_form_comes_back_as_it_was() -> None:
    stored = {
        "slug": "s",
        "note": "two\nlines",
        "count": 0,
        "enabled": False,
        "colour": "blue",
        "mode": "slow",
        "opens_at": datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC).isoformat(),
        "section": {"model": "m", "prompt": "p", "temperature": 1.5, "inner": {"depth": 2}},
        "shapes": {"options": {"ü": "✓"}},
        "either": "text",
        "tags": [],
    }
    shown = shown_values(ITEMS, stored)
    assert shown["opens_at"] == "2030-01-02T03:04:05" and shown["enabled"] == "false"
    body, problems = body_from_form(ITEMS, shown)
    assert problems == []
    assert body == {**stored, "opens_at": "2030-01-02T03:04:05+00:00"}
    assert Body.model_validate(body).opens_at == datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
