"""Verifiers: decide whether one actor output solves the task.

Each verifier returns a `VerifierResult` whose `raw_eval_output` is public (it may reach the
participant and, as feedback, the actor) and whose `details` are private (they name the expected
keywords, patterns and the judge's per-vote verdicts, so they never reach the actor).

Configurations are pydantic models discriminated by `type`; `VERIFIER_CONFIG_ADAPTER` validates a
plain dict into one.
"""

from __future__ import annotations

import ast
import asyncio
import json
import math
import re
import statistics
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from app.evaluation.engine.jsonish import balanced_spans
from app.evaluation.engine.llm import CompletionClient
from app.evaluation.engine.patterns import PatternError, compile_tenant_pattern, linear
from app.evaluation.engine.prompts import build_judge_prompt
from app.evaluation.engine.storable import encodable
from app.evaluation.engine.types import (
    CallRecord,
    InfrastructureError,
    Message,
    ModelSpec,
    Verifier,
    VerifierResult,
)

PATTERN_MAX_CHARS = 1000
# Keywords per rubric list: each is a scan of the output.
RUBRIC_MAX_ITEMS = 200
# Verifiers read at most this much of an output, and the judge's parser this much of a reply,
# so no output makes a verification take long (a model's reply has no other bound here).
VERIFIED_OUTPUT_MAX_CHARS = 1_000_000
JUDGE_REPLY_MAX_CHARS = 100_000
JUDGE_RUBRIC_MAX_CHARS = 20_000
JUDGE_RATING_MIN = 0.0
JUDGE_RATING_MAX = 10.0
_MATCH_EXCERPT_CHARS = 200
# Longer texts are matched in a thread: the slowest patterns take ~5 ms per 1,000 characters.
_MATCH_IN_THREAD_CHARS = 50_000
_UNPARSEABLE_EXCERPT_CHARS = 200


# Configurations


class _StrictConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class ContainsConfig(_StrictConfig):
    """Passes when the output contains `pattern`, ignoring case."""

    type: Literal["contains"] = "contains"
    pattern: str = Field(min_length=1, max_length=PATTERN_MAX_CHARS)


class RegexConfig(_StrictConfig):
    """Passes when the regular expression `pattern` matches anywhere in the output (any case).

    Patterns run on RE2 in linear time (app/evaluation/engine/patterns.py): Python's syntax, without
    backreferences, lookaround, atomic groups or possessive quantifiers."""

    type: Literal["regex"] = "regex"
    pattern: str = Field(min_length=1, max_length=PATTERN_MAX_CHARS)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as error:
            raise ValueError(f"invalid regular expression: {error}") from error
        except RecursionError as error:
            raise ValueError("invalid regular expression: nested too deeply") from error
        try:
            compile_tenant_pattern(pattern)
        except PatternError as error:
            raise ValueError(f"regular expression {error}") from error
        return pattern


def _non_blank(values: list[str]) -> list[str]:
    if len(values) > RUBRIC_MAX_ITEMS:
        raise ValueError(f"at most {RUBRIC_MAX_ITEMS} items")
    for position, value in enumerate(values):
        if not value.strip():
            raise ValueError(f"item {position} is blank; a blank keyword would match any output")
        if len(value) > PATTERN_MAX_CHARS:
            raise ValueError(f"item {position} is longer than {PATTERN_MAX_CHARS} characters")
    return values


class RubricConfig(_StrictConfig):
    """Correct-first keyword grading.

    The score is the share of `correct_keywords` found in the output (case-insensitive, and
    Unicode-normalised: a decomposed "Café" is "Café"). With `match: substring` (the default) a
    keyword is found anywhere, inside longer words too; with `match: token` only where it is not
    part of a longer identifier or number: `PROJ-456` is not found in "PROJ-4567", nor `1.4M` in
    "$11.4M", nor `$1` in "$1.4M" (letters, digits and `_` continue a token, and so do `.` and `,`
    between digits; a keyword's own edges that are neither letter, digit nor `_` need no
    boundary). `incorrect_patterns` are matched the same way and are known wrong answers:
    they never lower the score of an output that holds a correct keyword (an answer that
    mentions the old figure on its way to the new one is still right); they only mark, in the
    public output, an answer that holds a wrong one and no right one.
    """

    type: Literal["rubric"] = "rubric"
    correct_keywords: list[str] = Field(min_length=1)
    incorrect_patterns: list[str] = Field(default_factory=list)
    pass_threshold: float = Field(default=1.0, gt=0.0, le=1.0)
    match: Literal["substring", "token"] = "substring"

    _check_correct = field_validator("correct_keywords")(_non_blank)
    _check_incorrect = field_validator("incorrect_patterns")(_non_blank)


class LLMJudgeConfig(_StrictConfig):
    """An LLM rates the output 0-10 against a hidden rubric; the median of `votes` decides."""

    type: Literal["llm_judge"] = "llm_judge"
    model: str = Field(min_length=1)
    # Bounded: the offline judge scans the response once per keyword of the rubric.
    rubric: str = Field(min_length=1, max_length=JUDGE_RUBRIC_MAX_CHARS)
    votes: int = Field(default=3, ge=1, le=9)
    pass_threshold: float = Field(default=7.0, ge=JUDGE_RATING_MIN, le=JUDGE_RATING_MAX)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)

    @field_validator("votes")
    @classmethod
    def _odd(cls, votes: int) -> int:
        if votes % 2 == 0:
            raise ValueError("votes must be odd, so the median is one of the votes")
        return votes


VerifierConfig = Annotated[
    ContainsConfig | RegexConfig | RubricConfig | LLMJudgeConfig,
    Field(discriminator="type"),
]
VERIFIER_CONFIG_ADAPTER: TypeAdapter[VerifierConfig] = TypeAdapter(VerifierConfig)


# Deterministic verifiers


class ContainsVerifier:
    def __init__(self, config: ContainsConfig) -> None:
        self.config = config
        self.model: str | None = None

    async def verify(self, output: str) -> VerifierResult:
        output = output[:VERIFIED_OUTPUT_MAX_CHARS]
        # Compared as rubric keywords are: case-folded and Unicode-normalised.
        found = _folded(self.config.pattern) in _folded(output)
        return VerifierResult(
            success=found,
            score=1.0 if found else 0.0,
            raw_eval_output="expected text found" if found else "expected text not found",
            details={"pattern": self.config.pattern, "found": found},
        )


class RegexVerifier:
    def __init__(self, config: RegexConfig) -> None:
        self.config = config
        self.model: str | None = None
        try:
            self._compiled = compile_tenant_pattern(config.pattern)
        except PatternError as error:
            # Saved before patterns ran on RE2: the challenge needs a new pattern, and the
            # attempt ends in error (not counted against limits) saying so.
            raise InfrastructureError(
                f"the verifier's regular expression is {error}; the challenge must change it"
            ) from error

    async def verify(self, output: str) -> VerifierResult:
        text = encodable(output[:VERIFIED_OUTPUT_MAX_CHARS])
        if len(text) > _MATCH_IN_THREAD_CHARS:
            # RE2 releases the GIL: a long match runs beside the event loop, not in its way.
            match = await asyncio.to_thread(self._compiled.search, text)
        else:
            match = self._compiled.search(text)
        return VerifierResult(
            success=match is not None,
            score=1.0 if match is not None else 0.0,
            raw_eval_output="pattern matched" if match is not None else "pattern not matched",
            details={
                "pattern": self.config.pattern,
                "match": match.group(0)[:_MATCH_EXCERPT_CHARS] if match is not None else None,
            },
        )


def _folded(text: str) -> str:
    """Case-folded and NFC-normalised: how rubric keywords and outputs are compared. Decomposed
    before folding, as Unicode's canonical caseless match asks, so that canonically equivalent
    texts fold alike even when folding a combining mark (U+0345) changes the marks' order."""
    return unicodedata.normalize("NFC", unicodedata.normalize("NFD", text).casefold())


def _continues_token(character: str) -> bool:
    return character.isalnum() or character == "_"


# Between two digits these continue a number ("1.4", "3,500"): "1" is no token of "$1.4M".
_NUMBER_JOINERS = frozenset(".,")


def _extends_before(text: str, start: int, keyword: str) -> bool:
    """Whether the text just before `start` continues the token `keyword` begins with."""
    if start == 0 or not _continues_token(keyword[0]):
        return False
    before = text[start - 1]
    if _continues_token(before):
        return True
    return (
        before in _NUMBER_JOINERS
        and keyword[0].isdigit()
        and start >= 2
        and text[start - 2].isdigit()
    )


def _extends_after(text: str, end: int, keyword: str) -> bool:
    """Whether the text from `end` on continues the token `keyword` ends with."""
    if end == len(text) or not _continues_token(keyword[-1]):
        return False
    after = text[end]
    if _continues_token(after):
        return True
    return (
        after in _NUMBER_JOINERS
        and keyword[-1].isdigit()
        and end + 1 < len(text)
        and text[end + 1].isdigit()
    )


def _has_token(text: str, keyword: str) -> bool:
    """Whether `keyword` occurs in `text` not as a part of a longer token (both folded): no
    letter, digit or `_` continues it, nor a `.` or `,` between digits (a longer number)."""
    start = text.find(keyword)
    while start != -1:
        end = start + len(keyword)
        if not _extends_before(text, start, keyword) and not _extends_after(text, end, keyword):
            return True
        start = text.find(keyword, start + 1)
    return False


class RubricVerifier:
    def __init__(self, config: RubricConfig) -> None:
        self.config = config
        self.model: str | None = None

    def _occurs(self, keyword: str, text: str) -> bool:
        folded = _folded(keyword)
        return _has_token(text, folded) if self.config.match == "token" else folded in text

    async def verify(self, output: str) -> VerifierResult:
        text = _folded(output[:VERIFIED_OUTPUT_MAX_CHARS])
        expected = self.config.correct_keywords
        found = [keyword for keyword in expected if self._occurs(keyword, text)]
        missing = [keyword for keyword in expected if keyword not in found]
        incorrect = [
            pattern for pattern in self.config.incorrect_patterns if self._occurs(pattern, text)
        ]
        # Correct-first: the share of expected keywords found is the score, so a wrong answer
        # mentioned next to the right one costs nothing, and a wrong one alone scores 0.
        score = len(found) / len(expected)
        public = f"matched {len(found)} of {len(expected)} expected keywords"
        if not found and incorrect:
            public += "; the output gives a known incorrect answer"
        return VerifierResult(
            success=score >= self.config.pass_threshold,
            score=score,
            raw_eval_output=public,
            details={
                "found_keywords": found,
                "missing_keywords": missing,
                "incorrect_patterns_found": incorrect,
                "pass_threshold": self.config.pass_threshold,
            },
        )


# LLM judge


@dataclass(frozen=True)
class JudgeVote:
    rating: float
    passed: bool | None
    feedback: str


# Judge replies are model output a participant can steer: these run on RE2 (linear time).
_FENCED = linear(r"```[a-zA-Z0-9_-]*\s*(.*?)```", dot_matches_newline=True)
# A number as JSON writes it, exponent included ("8.5e1" is 85, never 8.5), also with a leading
# "+", leading zeros or a bare fraction (".5"): each read whole, by its value. ASCII digits only.
_NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
# What would continue a number: a letter, a digit of any script, "_", or a digit after a "," or
# a sign ("7,5", "7-8") or a letter or digit after a "." ("7.5.3", "1.e5"). A number so continued
# is not read at all, since its start alone ("7" of "7,5", "0" of "0x1A") would misread it.
_CONTINUED = r"[\pL\pN_]|[,+\-]\pN|\.[\pL\pN]"
# A rating as text: a number, or a fraction of two ("7/10", "4 out of 5"), then anything.
_RATING_TEXT = linear(
    rf"\s*({_NUMBER})({_CONTINUED})?(?:\s*(?:/|out\s+of)\s*({_NUMBER})({_CONTINUED})?)?",
    ignore_case=True,
)
# `rating:` and where its value starts; an object or list there ("my rating: {...}") is not it.
_LOOSE_RATING_KEY = linear(r"""["']?rating["']?\s*[:=]\s*["']?\s*([^\s{\[])""", ignore_case=True)
_LOOSE_FEEDBACK = linear(r"""["']?feedback["']?\s*[:=]\s*["']([^"']*)""", ignore_case=True)
_LOOSE_PASSED = linear(r"""["']?passed["']?\s*[:=]\s*["']?(true|false)""", ignore_case=True)
_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}
_JSON_LITERAL_WORD = re.compile(r"\b(true|false|null)\b")


def _balanced_objects(text: str) -> list[str]:
    """Every top-level `{...}` span of `text`."""
    return balanced_spans(text, "{", "}")


def _from_json(candidate: str) -> Any:
    return json.loads(candidate)


def _from_python_literal(candidate: str) -> Any:
    # Judges that answer in Python syntax (single quotes) may still use JSON's true/false/null.
    pythonic = _JSON_LITERAL_WORD.sub(lambda found: _JSON_LITERALS[found.group(1)], candidate)
    return ast.literal_eval(pythonic)


def _from_single_quoted_json(candidate: str) -> Any:
    return json.loads(candidate.replace("'", '"'))


_OBJECT_LOADERS: tuple[Callable[[str], Any], ...] = (
    _from_json,
    _from_python_literal,
    _from_single_quoted_json,
)


def _load_object(candidate: str) -> dict[str, Any] | None:
    for loader in _OBJECT_LOADERS:
        try:
            loaded = loader(candidate)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(loaded, dict):
            return {str(key).lower(): value for key, value in loaded.items()}
    return None


def parse_rating(value: Any) -> float | None:
    """A 0-10 rating from a number or from text that begins with one: "7", "7.5", "1e1",
    "7/10", "4 out of 5", "7 (solid)".

    None for a rating outside 0-10 (an 85 is a judge on another scale, not a 10), not finite,
    or not a number read whole (see `_CONTINUED`): such a reply is unparseable, as one without
    a rating is."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        # Compared as an integer: JSON allows one too long for a float.
        if not JUDGE_RATING_MIN <= value <= JUDGE_RATING_MAX:
            return None
        rating: float | None = float(value)
    elif isinstance(value, float):
        rating = value
    elif isinstance(value, str):
        rating = _rating_in_text(encodable(value[:JUDGE_REPLY_MAX_CHARS]), 0)
    else:
        return None
    return _on_scale(rating)


def _on_scale(rating: float | None) -> float | None:
    """`rating` when it is finite and within 0-10 (a -0.0 as 0), else None: never clamped."""
    if rating is None or not math.isfinite(rating):
        return None
    if not JUDGE_RATING_MIN <= rating <= JUDGE_RATING_MAX:
        return None
    return rating + 0.0


def _rating_in_text(text: str, position: int) -> float | None:
    """The rating written at `position` of `text` (after blanks), before any range check;
    None unless a number (or a fraction of two) stands there whole."""
    found = _RATING_TEXT.match(text, position)
    if found is None or found.group(2) is not None or found.group(4) is not None:
        return None
    numerator = float(found.group(1))
    if found.group(3) is None:
        return numerator
    denominator = float(found.group(3))
    if not math.isfinite(denominator) or denominator <= 0:
        return None
    return numerator / denominator * JUDGE_RATING_MAX


def _parse_passed(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "pass", "passed"}:
        return True
    if isinstance(value, str) and value.strip().lower() in {"false", "no", "fail", "failed"}:
        return False
    return None


def parse_judge_reply(text: str) -> JudgeVote | None:
    """The vote in a judge's reply, tolerating fences, prose, single quotes and string ratings.

    None when no rating can be read: none is found, or the first one found is out of 0-10, not
    finite or not a number read whole (`parse_rating`). Only the first JUDGE_REPLY_MAX_CHARS
    are read.
    """
    text = encodable(text[:JUDGE_REPLY_MAX_CHARS])
    candidates = [block.strip() for block in _FENCED.findall(text)]
    candidates.append(text.strip())
    candidates.extend(_balanced_objects(text))
    for candidate in candidates:
        loaded = _load_object(candidate)
        if loaded is None or loaded.get("rating") is None:
            continue
        # The first object that gives a rating decides: one out of range or not a number makes
        # the reply unparseable, never rescued by a number found elsewhere in it.
        rating = parse_rating(loaded["rating"])
        if rating is None:
            return None
        feedback = loaded.get("feedback")
        return JudgeVote(
            rating=rating,
            passed=_parse_passed(loaded.get("passed")),
            feedback=feedback.strip() if isinstance(feedback, str) else "",
        )
    # A reply cut short by max_tokens is not valid JSON but still states its rating; the first
    # `rating:` with a value decides, as in a whole reply.
    key = _LOOSE_RATING_KEY.search(text)
    if key is None:
        return None
    rating = _on_scale(_rating_in_text(text, key.start(1)))
    if rating is None:
        return None
    feedback_match = _LOOSE_FEEDBACK.search(text)
    passed_match = _LOOSE_PASSED.search(text)
    return JudgeVote(
        rating=rating,
        passed=_parse_passed(passed_match.group(1)) if passed_match else None,
        feedback=feedback_match.group(1).strip() if feedback_match else "",
    )


class LLMJudgeVerifier:
    """Asks a judge model `votes` times at once; the median rating decides.

    The threshold decides: `success` is `rating >= pass_threshold`, where `rating` is the
    median of the votes (with an even number left after drops, the lower of the two middle
    ones: always a rating some vote gave), and the feedback is that vote's. The judge's own
    `passed` (the majority of the votes that gave one) is recorded beside it in the details as
    `judge_passed`, for comparison; it never overrides the threshold. A vote whose reply cannot
    be parsed is asked once more; a vote still unparseable is dropped (recorded in the details)
    and the remaining votes decide as above. Only when every vote is unparseable is it an
    `InfrastructureError`, since an unusable judge says nothing about the actor.
    """

    def __init__(self, config: LLMJudgeConfig, *, goal: str, llm: CompletionClient) -> None:
        self.config = config
        self.goal = goal
        self.llm = llm
        self.model: str | None = config.model
        self._spec = ModelSpec(model=config.model, temperature=config.temperature)

    async def verify(self, output: str) -> VerifierResult:
        messages: list[Message] = [
            {
                "role": "user",
                "content": build_judge_prompt(
                    goal=self.goal, rubric=self.config.rubric, response=output
                ),
            }
        ]
        outcomes = await asyncio.gather(
            *(self._vote(messages) for _ in range(self.config.votes)), return_exceptions=True
        )
        votes: list[JudgeVote] = []
        calls: list[CallRecord] = []
        dropped: list[str] = []
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
            vote, vote_calls = outcome
            calls.extend(vote_calls)
            if vote is None:
                dropped.append(" ".join(vote_calls[-1].output.split())[:_UNPARSEABLE_EXCERPT_CHARS])
            else:
                votes.append(vote)
        if not votes:
            raise InfrastructureError(
                f"judge model {self.config.model} gave no usable verdict in any of its "
                f"{self.config.votes} votes (each asked twice); last reply: {dropped[-1]!r}"
            )

        ratings = [vote.rating for vote in votes]
        # The lower middle vote: with votes dropped, an even number may be left, and the mean of
        # the two middle ones is a rating no judge gave that would decide on its own (6 and 8
        # would pass at 7). The lower one is a judge's, and conservative: a pass needs most of
        # the votes left at or above the threshold, as it does with an odd number.
        rating = statistics.median_low(ratings)
        deciding = next(vote for vote in votes if vote.rating == rating)
        threshold = self.config.pass_threshold
        counted = f"{'median' if len(votes) % 2 else 'lower middle'} of {len(votes)} votes"
        if dropped:
            counted += f", {len(dropped)} unparseable dropped"
        return VerifierResult(
            success=rating >= threshold,
            score=rating / JUDGE_RATING_MAX,
            raw_eval_output=f"judge rating {rating:g}/10 ({counted}; pass at {threshold:g})",
            details={
                "model": self.config.model,
                "ratings": ratings,
                "median_low": rating,
                "pass_threshold": threshold,
                "decided_by": "threshold",
                "passed_by_threshold": rating >= threshold,
                "judge_passed": _majority([vote.passed for vote in votes]),
                "votes": [
                    {"rating": vote.rating, "passed": vote.passed, "feedback": vote.feedback}
                    for vote in votes
                ],
                "dropped_votes": [{"reply_excerpt": excerpt} for excerpt in dropped],
            },
            rating=rating,
            feedback=deciding.feedback,
            calls=calls,
        )

    async def _vote(self, messages: list[Message]) -> tuple[JudgeVote | None, list[CallRecord]]:
        """The vote, or None when its reply is unparseable twice; the calls either way."""
        calls: list[CallRecord] = []
        for _ in range(2):
            record = await self.llm.complete(self._spec, messages)
            calls.append(record)
            vote = parse_judge_reply(record.output)
            if vote is not None:
                return vote, calls
        return None, calls


def _majority(verdicts: list[bool | None]) -> bool | None:
    """The verdict most votes gave, of those that gave one; None without one or on a tie."""
    given = [verdict for verdict in verdicts if verdict is not None]
    yes = sum(given)
    if not given or yes * 2 == len(given):
        return None
    return yes * 2 > len(given)


def build_verifier(config: VerifierConfig, *, goal: str, llm: CompletionClient) -> Verifier:
    """The verifier a configuration describes; `goal` and `llm` serve the LLM judge."""
    if isinstance(config, ContainsConfig):
        return ContainsVerifier(config)
    if isinstance(config, RegexConfig):
        return RegexVerifier(config)
    if isinstance(config, RubricConfig):
        return RubricVerifier(config)
    return LLMJudgeVerifier(config, goal=goal, llm=llm)
