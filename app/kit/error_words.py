"""Validation errors in people's words.

A 422 lists each problem twice: in the validator's words (`msg`, `validator_message`: what
pydantic says, for programs and for the record) and in plain words (`message`): what is
allowed rather than the pattern that says it, "must be at most 2" rather than "Input should
be less than or equal to 2", where a JSON text went wrong and what was expected there. The
web forms show the plain words beside each field, so a form and the API say the same.

A pattern is worded by whoever defines it (`pattern_words`): the words live beside the
regular expression, and a pattern without words says only that the text has not the allowed
form.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

_PATTERN_WORDS: dict[str, str] = {}


def pattern_words(pattern: str, words: str) -> str:
    """Registers what `pattern` allows, in words ("lowercase letters, digits and hyphens");
    returns the pattern, so a definition reads `pattern=pattern_words(r"...", "...")`."""
    _PATTERN_WORDS[pattern] = words
    return pattern


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _count(number: Any, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def _pattern_message(ctx: Mapping[str, Any]) -> str:
    pattern = str(ctx.get("pattern", ""))
    words = _PATTERN_WORDS.get(pattern)
    if words is not None:
        return f"use {words}"
    return "does not have the allowed form"


def _length(ctx: Mapping[str, Any], bound: str, text: str) -> str:
    limit = ctx.get(bound)
    if bound == "min_length" and limit == 1:
        return "must not be empty"
    unit = ("character", "characters") if text == "string" else ("item", "items")
    wanted = _count(limit, *unit)
    if bound == "min_length":
        return f"needs at least {wanted}"
    actual = ctx.get("actual_length")
    given = f" (it has {actual})" if actual is not None else ""
    return f"takes at most {wanted}{given}"


# What each of pydantic's error types says, in plain words; `ctx` is the error's context.
_BY_TYPE: Final[dict[str, Any]] = {
    "missing": lambda ctx: "is required",
    "extra_forbidden": lambda ctx: "unknown field",
    "string_pattern_mismatch": _pattern_message,
    "string_too_short": lambda ctx: _length(ctx, "min_length", "string"),
    "string_too_long": lambda ctx: _length(ctx, "max_length", "string"),
    "too_short": lambda ctx: _length(ctx, "min_length", "list"),
    "too_long": lambda ctx: _length(ctx, "max_length", "list"),
    "less_than_equal": lambda ctx: f"must be at most {_number(ctx.get('le'))}",
    "less_than": lambda ctx: f"must be less than {_number(ctx.get('lt'))}",
    "greater_than_equal": lambda ctx: f"must be at least {_number(ctx.get('ge'))}",
    "greater_than": lambda ctx: f"must be more than {_number(ctx.get('gt'))}",
    "int_parsing": lambda ctx: "must be a whole number",
    "int_type": lambda ctx: "must be a whole number",
    "int_from_float": lambda ctx: "must be a whole number",
    "float_parsing": lambda ctx: "must be a number",
    "float_type": lambda ctx: "must be a number",
    "finite_number": lambda ctx: "must be a finite number",
    "bool_parsing": lambda ctx: "must be true or false",
    "bool_type": lambda ctx: "must be true or false",
    "string_type": lambda ctx: "must be text",
    "dict_type": lambda ctx: "must be an object ({...})",
    "model_type": lambda ctx: "must be an object ({...})",
    "model_attributes_type": lambda ctx: "must be an object ({...})",
    "list_type": lambda ctx: "must be a list ([...])",
    "literal_error": lambda ctx: f"must be one of {ctx.get('expected')}",
    "enum": lambda ctx: f"must be one of {ctx.get('expected')}",
    "union_tag_invalid": lambda ctx: (
        f"{ctx.get('tag')!r} is not a known {str(ctx.get('discriminator', 'type')).strip(chr(39))}"
        f"; use one of {ctx.get('expected_tags')}"
    ),
    "union_tag_not_found": lambda ctx: (
        f"needs its {ctx.get('discriminator')} field, which says what kind of object it is"
    ),
    "datetime_parsing": lambda ctx: "must be a date and time, such as 2030-01-31T18:00:00+00:00",
    "datetime_from_date_parsing": lambda ctx: (
        "must be a date and time, such as 2030-01-31T18:00:00+00:00"
    ),
    "datetime_type": lambda ctx: "must be a date and time, such as 2030-01-31T18:00:00+00:00",
    "timezone_aware": lambda ctx: "needs its offset from UTC, such as +00:00",
    "uuid_parsing": lambda ctx: "must be an id (a UUID)",
    "uuid_type": lambda ctx: "must be an id (a UUID)",
}
_VALIDATOR_PREFIXES = ("Value error, ", "Assertion failed, ")


def plain_message(error: Mapping[str, Any]) -> str:
    """One validation error (pydantic's shape: `type`, `msg`, `ctx`) in plain words. A message
    a validator of the service wrote (`value_error`, or a type of its own) is already the
    service's words; pydantic's prefix is dropped."""
    kind = str(error.get("type", ""))
    message = str(error.get("msg", ""))
    if kind == "extra_forbidden":
        known: Sequence[str] = error.get("known") or ()
        if not message.startswith("Extra inputs"):
            return message  # already worded (a misspelling, with the field it meant)
        if known:
            return f"unknown field; the fields here are {', '.join(known)}"
        return "unknown field"
    if kind == "json_invalid":
        # The location of a body that is not JSON is the character the parser stopped at.
        context = error.get("ctx")
        parser_message = str(context.get("error", "")) if isinstance(context, Mapping) else ""
        loc = error.get("loc") or ()
        position = loc[-1] if loc and isinstance(loc[-1], int) else None
        where = f" at character {position + 1}" if position is not None else ""
        return _not_json(json_problem(parser_message), where)
    words = _BY_TYPE.get(kind)
    if words is not None:
        context = error.get("ctx")
        return str(words(context if isinstance(context, Mapping) else {}))
    for prefix in _VALIDATOR_PREFIXES:
        if message.startswith(prefix):
            return message.removeprefix(prefix)
    return message


# JSON ------------------------------------------------------------------------------------------

# What Python's JSON parser says went wrong, and what it means to a person typing JSON.
_JSON_PROBLEMS: Final[tuple[tuple[str, str], ...]] = (
    (
        "Expecting value",
        "a value was expected (text in double quotes, a number, true, false, null, "
        "an object {...} or a list [...])",
    ),
    (
        "Expecting property name enclosed in double quotes",
        "a field name in double quotes was expected (JSON has no trailing commas and no "
        "single quotes)",
    ),
    ("Expecting ',' delimiter", "a comma was expected between two items"),
    ("Expecting ':' delimiter", "a colon was expected after the field name"),
    ("Unterminated string", "a text opened with a double quote is never closed"),
    ("Extra data", "there is more after the end of the value"),
    ("Invalid control character", "a line break or tab inside a text in quotes: write \\n or \\t"),
    ("Invalid \\uXXXX escape", "\\u must be followed by four hexadecimal digits"),
    ("Invalid \\escape", "a backslash starts an escape JSON does not have (write \\\\ for one)"),
)
_AT = re.compile(r":? line (\d+) column (\d+) \(char \d+\)$")


def json_problem(message: str) -> str:
    """What the parser's message (without its position) means, in words."""
    if not message:
        return ""
    for start, words in _JSON_PROBLEMS:
        if message.startswith(start):
            return words
    return message[:1].lower() + message[1:]


def json_words(parser_message: str, line: int | None = None, column: int | None = None) -> str:
    """A JSON text that does not parse, in words: what was expected, and where (its line and
    character, counted from 1). The position comes from the arguments, or from the end of
    the parser's message ("... line 1 column 5 (char 4)")."""
    found = _AT.search(parser_message)
    if found is not None:
        parser_message = parser_message[: found.start()]
        line, column = int(found.group(1)), int(found.group(2))
    where = f" at line {line}, character {column}" if line is not None and column else ""
    return _not_json(json_problem(parser_message), where)


def _not_json(problem: str, where: str) -> str:
    return f"not valid JSON: {problem}{where}" if problem else f"not valid JSON{where}"


def json_error_words(error: json.JSONDecodeError) -> str:
    return json_words(error.msg, error.lineno, error.colno)


NOT_A_JSON_NUMBER: Final = "not valid JSON: NaN and Infinity are not JSON numbers"
