"""Regular expressions matched in linear time, whatever the pattern and the text.

Python's `re` backtracks: `^(a+)+$` on thirty `a`s and a `!` takes minutes, holding the GIL,
so one tenant's pattern could stop a shared worker (and its lease heartbeat). Every pattern a
tenant or a dataset supplies, and every pattern of ours that reads model output, runs on RE2
(google-re2), whose matching time grows linearly with the text and which releases the GIL
while it matches.

Tenant patterns keep the meaning they had with Python's `re` where RE2 can express it
(`python_to_re2`): `\\d`, `\\w`, `\\s` and their negations stay Unicode-aware, `$` also matches
before a final newline, `\\Z`, `\\uXXXX` and `{,n}` are understood. What RE2 cannot do in linear
time (backreferences, lookaround, atomic groups, possessive quantifiers, conditionals) is
refused when the pattern is saved. Two differences remain: `\\b` and `\\B` are ASCII word
boundaries, and `\\W` and `\\S` inside a character class are the ASCII ones.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import re2

# Python's Unicode classes, in RE2's syntax. `\w` is str.isalnum() or "_"; `\s` is
# str.isspace(): the ASCII controls \t-\r and \x1c-\x1f, \x85 and the Unicode separators.
_WORD = r"\p{L}\p{N}_"
_SPACE = r"\t-\r\x{1c}-\x{1f}\x{85}\p{Z}"
_OUTSIDE_CLASS = {
    "d": r"\p{Nd}",
    "D": r"\P{Nd}",
    "w": f"[{_WORD}]",
    "W": f"[^{_WORD}]",
    "s": f"[{_SPACE}]",
    "S": f"[^{_SPACE}]",
    "Z": r"\z",
}
_INSIDE_CLASS = {"d": r"\p{Nd}", "D": r"\P{Nd}", "w": _WORD, "s": _SPACE}
# Python's `$` (without MULTILINE) also matches before a newline that ends the text.
_END_OF_TEXT = r"(?:\n?\z)"
_MULTILINE_FLAG = re.compile(r"\(\?[a-zA-Z-]*m")
_HEX = frozenset("0123456789abcdefABCDEF")
_OPEN_RANGE = re.compile(r"\{,(\d+)\}")


class PatternError(ValueError):
    """A pattern RE2 cannot run (or cannot run in linear time)."""


def _hex_escape(pattern: str, start: int, digits: int) -> str | None:
    """`\\x{…}` for the `digits` hex digits at `start`, or None if they are not all there."""
    value = pattern[start : start + digits]
    if len(value) == digits and all(character in _HEX for character in value):
        return f"\\x{{{value}}}"
    return None


def python_to_re2(pattern: str) -> str:
    """`pattern`, written for Python's `re`, in RE2's syntax with the same meaning."""
    translate_dollar = _MULTILINE_FLAG.search(pattern) is None
    out: list[str] = []
    in_class = False
    class_start = -1  # where the class's members start (a `]` there is a literal)
    position = 0
    length = len(pattern)
    while position < length:
        character = pattern[position]
        if character == "\\" and position + 1 < length:
            escaped = pattern[position + 1]
            if escaped in ("u", "U"):
                replacement = _hex_escape(pattern, position + 2, 4 if escaped == "u" else 8)
                if replacement is not None:
                    out.append(replacement)
                    position += 6 if escaped == "u" else 10
                    continue
            table = _INSIDE_CLASS if in_class else _OUTSIDE_CLASS
            out.append(table.get(escaped, character + escaped))
            position += 2
            continue
        if in_class:
            if character == "]" and position != class_start:
                in_class = False
            out.append(character)
            position += 1
            continue
        if character == "[":
            in_class = True
            class_start = position + 1
            if pattern.startswith("^", class_start):
                class_start += 1
                out.append("[^")
                position += 2
                continue
        elif character == "$" and translate_dollar:
            out.append(_END_OF_TEXT)
            position += 1
            continue
        elif character == "{":
            open_range = _OPEN_RANGE.match(pattern, position)
            if open_range is not None:
                out.append(f"{{0,{open_range.group(1)}}}")
                position = open_range.end()
                continue
        out.append(character)
        position += 1
    return "".join(out)


def _options(*, ignore_case: bool, dot_matches_newline: bool = False) -> Any:
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_matches_newline
    options.log_errors = False  # a refused pattern is reported to the caller, not to stderr
    return options


def _error_text(error: Exception) -> str:
    detail = error.args[0] if error.args else error
    return detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)


@lru_cache(maxsize=32)
def compile_tenant_pattern(pattern: str, *, ignore_case: bool = True) -> Any:
    """A tenant's (or a dataset's) pattern, compiled for RE2; raises `PatternError`.

    Cached: a benchmark's rows repeat their patterns for every trial (RE2 objects are
    immutable and safe to share between threads). Few are kept: each may hold up to RE2's
    memory budget (8 MB, which also caps how large a pattern compiles) for its DFA."""
    try:
        return re2.compile(python_to_re2(pattern), _options(ignore_case=ignore_case))
    except re2.error as error:
        raise PatternError(
            f"not supported: {_error_text(error)} (patterns run on RE2, in linear time: no "
            "backreferences, lookaround, atomic groups or possessive quantifiers)"
        ) from error


def linear(pattern: str, *, ignore_case: bool = False, dot_matches_newline: bool = False) -> Any:
    """One of our own patterns, in RE2 syntax, for text a model or a participant wrote."""
    return re2.compile(
        pattern, _options(ignore_case=ignore_case, dot_matches_newline=dot_matches_newline)
    )
