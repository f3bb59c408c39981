"""Text and JSON values PostgreSQL can store.

PostgreSQL's `text` and `jsonb` refuse U+0000 (NUL), UTF-8 cannot encode a lone surrogate
(U+D800-U+DFFF without its pair), and `jsonb` has no NaN or Infinity. Python strings and floats
hold all of these, so a value that reaches the database with one fails the whole write.

Two policies, one per source (docs/input.md):

- What callers send (request bodies, paths, queries, headers, forms) is refused with a 422 that
  names the field: `first_problem` finds the first unstorable value and where it is.
- What models and plugins produce (outputs, judge and critic replies, scorer details, error
  reasons) is stored escaped, so the attempt completes and the character stays visible:
  `escape_text` / `escape_value` write each unstorable character as the six characters
  `\\uXXXX` (NUL becomes `\\u0000`, a lone U+DC80 becomes `\\udc80`) and a non-finite number as
  the string "NaN", "Infinity" or "-Infinity". The escape is one way: it is for reading, and an
  output that already held the text `\\u0000` reads the same.

Size is the third limit: `jsonb` refuses a value whose elements total more than 268,435,455
bytes, and a value that large would also be a page nobody can load. `truncated` keeps the
first characters of a text and says how many were cut, with `TRUNCATION_MARK`; `bounded_value`
does it to the longest strings of a JSON-like value until the whole fits a character budget.
Both are used for what is stored (`app/kit/db.py`) and for what is served of stored trials
(docs/engine.md, "Bounded outputs").
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

# Python's `re` is linear for a single character class; this runs on every escaped value.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

NUL_MESSAGE = "must not contain NUL (U+0000) characters"
SURROGATE_MESSAGE = "must not contain lone surrogates (U+D800-U+DFFF): text must be valid Unicode"
NON_FINITE_MESSAGE = "must be a finite number (NaN, Infinity and numbers beyond 1.8e308 are not)"

Location = tuple[str | int, ...]


def text_problem(text: str) -> str | None:
    """Why `text` cannot be stored, or None when it can."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    return NUL_MESSAGE if found.group() == "\x00" else SURROGATE_MESSAGE


# Where a value sits, as a linked list from the innermost step out: building each child's full
# path instead would cost time quadratic in the depth.
_Path = tuple["_Path | None", str | int] | None


def _location(prefix: Location, path: _Path) -> Location:
    steps: list[str | int] = []
    while path is not None:
        path, step = path
        steps.append(step)
    return (*prefix, *reversed(steps))


def first_problem(value: Any, location: Location = ()) -> tuple[Location, str] | None:
    """The first unstorable string, key or number in a JSON-like value, with its location.

    A bad object key is reported at its object (the key itself is what cannot be shown).
    Iterative, so a deeply nested value cannot exhaust the stack."""
    pending: list[tuple[Any, _Path]] = [(value, None)]
    while pending:
        item, path = pending.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem is not None:
                return _location(location, path), problem
        elif isinstance(item, float):
            if not math.isfinite(item):
                return _location(location, path), NON_FINITE_MESSAGE
        elif isinstance(item, dict):
            children: list[tuple[Any, _Path]] = []
            for key, child in item.items():
                if isinstance(key, str):
                    problem = text_problem(key)
                    if problem is not None:
                        return _location(location, path), f"object keys {problem}"
                children.append((child, (path, str(key))))
            pending.extend(reversed(children))
        elif isinstance(item, list | tuple):
            pending.extend((item[i], (path, i)) for i in reversed(range(len(item))))
    return None


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_text(text: str) -> str:
    """`text` with each unstorable character written as `\\uXXXX`."""
    return _UNSTORABLE.sub(_escaped, text)


def encodable(text: str) -> str:
    """`text` as UTF-8 can encode it, for a regex engine or a request to a model: a lone
    surrogate (which only a model's output can hold) is written as `\\udXXX`, as stored."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return escape_text(text)
    return text


def _non_finite_name(number: float) -> str:
    if math.isnan(number):
        return "NaN"
    return "Infinity" if number > 0 else "-Infinity"


def _escape_scalar(value: Any) -> Any:
    if isinstance(value, str):
        return escape_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return _non_finite_name(value)
    return value


def escape_value(value: Any) -> Any:
    """A JSON-like value PostgreSQL can store: strings and keys escaped, NaN and infinities as
    their names. A value that needs nothing (the usual case) is returned as it is; otherwise a
    copy is built, iteratively, so a deeply nested value cannot exhaust the stack."""
    if first_problem(value) is None:
        return value
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while pending:
        parent, slot, item = pending.pop()
        if isinstance(item, dict):
            copied: dict[Any, Any] = {}
            parent[slot] = copied
            for key, child in item.items():
                escaped_key = escape_text(key) if isinstance(key, str) else key
                copied[escaped_key] = None  # keeps the order; filled in below
                pending.append((copied, escaped_key, child))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            parent[slot] = items
            pending.extend((items, index, child) for index, child in enumerate(item))
        else:
            parent[slot] = _escape_scalar(item)
    return root[0]


# The most characters (strings and keys) one produced JSON value keeps when stored. PostgreSQL's
# `jsonb` refuses a value over 268,435,455 bytes; at up to 4 bytes a character this stays well
# below. Model outputs are capped long before (docs/engine.md, "Bounded outputs"): this is the
# last guard, so that no size can fail a trial's write.
STORED_VALUE_CHARS = 16_000_000
# The most characters of one trial section (actor, judge, critic) served by the API and the web
# pages: trials stored before outputs were capped may hold hundreds of megabytes.
SERVED_SECTION_CHARS = 500_000

# Appended where a text was cut: the visible sign, for readers and for models that see it again
# (a seq@k history), that more was there.
TRUNCATION_MARK = "\n[… truncated: {count:,} more characters]"
# Room a mark takes, whatever the count (`bounded_value` reserves it for every cut string).
_MARK_RESERVE = len(TRUNCATION_MARK.format(count=10**18))


def truncated(text: str, limit: int) -> str:
    """`text` when it has at most `limit` characters; else its first `limit` characters and
    the mark saying how many more there were."""
    if len(text) <= limit:
        return text
    keep = max(limit, 0)
    return text[:keep] + TRUNCATION_MARK.format(count=len(text) - keep)


def _string_lengths(value: Any) -> tuple[list[int], int]:
    """The lengths of the string values in a JSON-like value, and the characters of its object
    keys (counted, never cut). Iterative: a deeply nested value cannot exhaust the stack."""
    lengths: list[int] = []
    key_chars = 0
    pending: list[Any] = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            lengths.append(len(item))
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str):
                    key_chars += len(key)
                pending.append(child)
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return lengths, key_chars


def _kept_per_string(lengths: list[int], budget: int) -> int:
    """The largest length L such that strings cut to L (each with its mark) fit `budget`."""
    low, high = 0, max(lengths)
    while low < high:
        middle = (low + high + 1) // 2
        total = sum(length if length <= middle else middle + _MARK_RESERVE for length in lengths)
        if total <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def bounded_value(value: Any, limit: int) -> Any:
    """A JSON-like value whose strings and keys total at most about `limit` characters.

    A value within the limit (the usual case) is returned as it is. Otherwise the longest
    strings are cut to one common length, the largest that fits, each `truncated` with its
    mark: short strings (model names, verdicts, numbers' neighbours) stay whole and the text
    that made the value huge is what gives way. Keys are never cut; a value whose keys alone
    exceed the limit keeps them and has every string reduced to its mark."""
    lengths, key_chars = _string_lengths(value)
    if not lengths or sum(lengths) + key_chars <= limit:
        return value
    keep = _kept_per_string(lengths, max(limit - key_chars, 0))
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while pending:
        parent, slot, item = pending.pop()
        if isinstance(item, str):
            parent[slot] = truncated(item, keep)
        elif isinstance(item, dict):
            copied: dict[Any, Any] = {}
            parent[slot] = copied
            for key, child in item.items():
                copied[key] = None  # keeps the order; filled in below
                pending.append((copied, key, child))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            parent[slot] = items
            pending.extend((items, index, child) for index, child in enumerate(item))
        else:
            parent[slot] = item
    return root[0]


def describe_location(location: Sequence[str | int]) -> str:
    return ".".join(str(part) for part in location)
