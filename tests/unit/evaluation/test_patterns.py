"""Tenant patterns on RE2: the meaning they had with Python's `re`, in linear time.

A pattern that backtracked catastrophically would hang these tests (pytest's timeout fails
them); none asserts a duration.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from app.evaluation.engine.patterns import (
    PatternError,
    compile_tenant_pattern,
    linear,
    python_to_re2,
)
from app.evaluation.engine.types import InfrastructureError
from app.evaluation.engine.verifiers import (
    RegexConfig,
    RegexVerifier,
    RubricConfig,
    parse_judge_reply,
)

PATTERNS = [
    r"PWNED",
    r"^pwned$",
    r"PWNED$",
    r"\bORD-\d{5}\b",
    r"^\d+$",
    r"\d{4}",
    r"^\w+$",
    r"\W",
    r"\s+end$",
    r"^\S+$",
    r"[\d\s]+x",
    r"[^\d]",
    r"[\w-]+@[\w.]+",
    r"colou?r",
    r"caf.",
    r"(?s)a.b",
    r"a.b",
    r"a{,2}b",
    r"x{2,}",
    r"\u00e9t\u00e9",
    r"[]x]",
    r"[^]x]+",
    r"^$",
    r"(?m)^line$",
    r"\Aabc\Z",
    r"\$\d+",
    r"[$]",
    r"(?P<year>19\d\d)",
    r"stra(ss|ß)e",
    r"\bthe\b",
    r"a|b|c",
]
TEXTS = [
    "",
    "PWNED",
    "pwned\n",
    "say PWNED now",
    "PWNED!",
    "your order ORD-48213, thanks",
    "ord-4821",
    "résumé",
    "١٩٦٩",
    "1969",
    "a\u2003b",
    "the end\n",
    "the end\n\n",
    "x\vend",
    "tab\tend",
    "\u2028",
    "été",
    "ÉTÉ",
    "]",
    "x]x",
    "line\nline\n",
    "a\nb",
    "axb",
    "Café",
    "CAFÉ",
    "Straße",
    "STRASSE",
    "abc",
    "abc\n",
    "costs $42",
    "mail me: jo-anne@example.org",
    "xxx",
    "ab",
    "aab",
    "then the end",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_tenant_patterns_match_as_python_re_did(pattern: str) -> None:
    python = re.compile(pattern, re.IGNORECASE)
    re2 = compile_tenant_pattern(pattern)
    for text in TEXTS:
        expected = python.search(text)
        found = re2.search(text)
        assert (found is not None) == (expected is not None), (pattern, text)
        if expected is not None and found is not None:
            assert found.start() == expected.start(), (pattern, text)


def test_the_documented_differences_remain() -> None:
    """docs/input.md says `\\b` is an ASCII word boundary on RE2; if RE2 ever changes, the
    docs must too."""
    assert re.search(r"\bx", "éx", re.IGNORECASE) is None
    assert compile_tenant_pattern(r"\bx").search("éx") is not None


@pytest.mark.parametrize(
    "pattern",
    [
        r"(a)\1",
        r"(?P<x>a)(?P=x)",
        r"(?=a)",
        r"(?!a)b",
        r"(?<=a)b",
        r"(?<!a)b",
        r"(?>a+)b",
        r"a++",
        r"a*+",
        r"(?(1)a|b)",
        r"(?x) a b",
        r"a{1001}",
    ],
)
def test_patterns_that_need_backtracking_are_refused(pattern: str) -> None:
    with pytest.raises(PatternError, match="RE2"):
        compile_tenant_pattern(pattern)
    with pytest.raises(ValueError, match="regular expression"):
        RegexConfig(pattern=pattern)


def test_translation_keeps_escapes_and_classes_apart() -> None:
    assert python_to_re2(r"\\d") == r"\\d"  # an escaped backslash, then a literal d
    assert python_to_re2(r"\$") == r"\$"
    assert python_to_re2(r"[$]") == r"[$]"
    assert python_to_re2(r"(?m)a$") == r"(?m)a$"
    assert python_to_re2("\\") == "\\"  # RE2 refuses it, as Python does


CATASTROPHIC = [
    (r"^(a+)+$", "a" * 31 + "!", False),
    (r"^(a|aa)*$", "a" * 5000 + "!", False),
    (r"(x+x+)+y", "x" * 20_000, False),
    (r"^(\w+\s?)*$", "word " * 20_000 + "!", False),
    (r"(.*a){12}", "a" * 20_000, True),
    (r"(.*a){12}", "a" * 11 + "b" * 20_000, False),
]


@pytest.mark.parametrize(("pattern", "text", "matches"), CATASTROPHIC)
def test_catastrophic_patterns_answer_at_once(pattern: str, text: str, matches: bool) -> None:
    """Each of these takes Python's re minutes to years; a hang fails the test (timeout)."""
    result = asyncio.run(RegexVerifier(RegexConfig(pattern=pattern)).verify(text))
    assert result.success is matches


def test_a_catastrophic_pattern_answers_at_once_without_a_match() -> None:
    result = asyncio.run(RegexVerifier(RegexConfig(pattern=r"^(a+)+$")).verify("a" * 31 + "!"))
    assert result.success is False and result.details["match"] is None


def test_outputs_with_lone_surrogates_and_nul_are_matched() -> None:
    """RE2 reads UTF-8, which has no lone surrogates: they are matched as their stored escape."""
    verifier = RegexVerifier(RegexConfig(pattern=r"pwned\W+done"))
    assert asyncio.run(verifier.verify("PWNED\x00 done")).success is True
    escaped = RegexVerifier(RegexConfig(pattern=r"pwned \\ud800 done"))
    assert asyncio.run(escaped.verify("PWNED \ud800 done")).success is True


def test_a_pattern_saved_before_re2_ends_the_attempt_with_a_reason() -> None:
    stored = RegexConfig.model_construct(type="regex", pattern=r"(a)\1")
    with pytest.raises(InfrastructureError, match="regular expression"):
        RegexVerifier(stored)


def test_rubric_lists_are_bounded() -> None:
    with pytest.raises(ValueError, match="at most 200"):
        RubricConfig(correct_keywords=[f"k{i}" for i in range(201)])


HOSTILE_JUDGE_REPLIES = [
    "```" + "a" * 200_000,
    "rating:" + " " * 200_000 + "x",
    "rating" + "'" * 100_000,
    "feedback: " + " " * 200_000,
    "{" * 100_000,
    '{"rating": "' + "9" * 100_000 + '"}',
    "```json\n" * 50_000,
]


@pytest.mark.parametrize("reply", HOSTILE_JUDGE_REPLIES, ids=range(len(HOSTILE_JUDGE_REPLIES)))
def test_hostile_judge_replies_are_parsed_at_once(reply: str) -> None:
    vote = parse_judge_reply(reply)
    assert vote is None or 0.0 <= vote.rating <= 10.0


def test_judge_replies_still_parse() -> None:
    vote = parse_judge_reply('```json\n{"passed": true, "rating": "8/10", "feedback": "ok"}\n```')
    assert vote is not None and vote.rating == 8.0 and vote.passed is True
    loose = parse_judge_reply('{"rating": 7, "feedback": "cut sh')
    assert loose is not None and loose.rating == 7.0
    surrogate = parse_judge_reply('{"rating": 6, "feedback": "odd \ud800"}')
    assert surrogate is not None and surrogate.rating == 6.0


def test_our_own_patterns_compile() -> None:
    assert linear(r"<think>(.*?)</think>", ignore_case=True, dot_matches_newline=True).search(
        "<THINK>a\nb</think>"
    )


def test_dataset_rows_with_patterns_re2_refuses_name_their_line(tmp_path: Path) -> None:
    from benchmarks.jsonl import DatasetError, load_tasks

    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(
        '{"prompt": "p", "regex": "^(a+)+$"}\n{"prompt": "q", "regex": "(a)\\\\1"}\n'
    )
    tasks = load_tasks(str(dataset))
    first = next(tasks)
    assert first.answer["pattern"] == "^(a+)+$"
    with pytest.raises(DatasetError, match="line 2"):
        next(tasks)
