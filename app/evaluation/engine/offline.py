"""The built-in `offline` models: models that need no key and no network.

The engine answers them in its own process (`response_for`, called by
app.evaluation.engine.llm.LLMClient): the answer is an OpenAI chat completion in plain JSON, read,
bounded, counted and recorded by the same code as every other model's answer, and free.
Through litellm they cost ~5 ms of CPU per call, most of a worker's time per offline attempt
or red-blue match (bench/README.md). They are also a litellm provider, registered through
litellm's own custom-provider mechanism (`litellm.custom_provider_map`) and with zero prices
(`litellm.register_model`), so `litellm.completion("offline/echo", ...)` answers the same and
`litellm.completion_cost` answers 0.0 for them. Every offline model is deterministic and instant.

Models:

- `offline/echo`: answers with the last user message, verbatim ("" when there is none).
- `offline/judge`: a deterministic stand-in for an LLM judge. It reads the judge prompt that
  `LLMJudgeVerifier` builds (the marker layout of
  `app.evaluation.engine.prompts.build_judge_prompt`), takes the rubric's keywords (the phrases in
  double quotes; when there are none, the rubric's words of four or more letters, lowercased and
  deduplicated) and rates the response 10 x (share of keywords found in it, case-insensitive),
  rounded to one decimal. It replies with strict JSON `{"passed": rating >= 5, "rating": rating,
  "feedback": "..."}`; the feedback gives how many keywords are missing, never which. A rubric
  without keywords rates 0.0. A prompt that is not a judge prompt is rated 0.0 as well, with
  feedback saying so.
- `offline/guarded-echo`: a SIMULATED guarded target for red-blue competitions (documented in
  `guarded_echo_reply`): it echoes the last user message with every phrase the system prompt
  forbids on a `Never say: <phrase>` line replaced by `[redacted]`, unless the user message asks
  to ignore previous instructions and the system prompt does not forbid that.
- `offline/solver-sim`, `offline/solver-sim-weak`: SIMULATED solvers for the bundled benchmarks,
  told the answers by the benchmark; seeded, temperature-dependent, helped by feedback. They are
  defined and documented in app.evaluation.engine.simulated.

Usage, for every offline model, counts whitespace-separated words: prompt tokens over the
contents of all messages, completion tokens over the reply. No cached or reasoning tokens.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from functools import lru_cache
from typing import Any, Final

import re2

from app.evaluation.engine import simulated
from app.evaluation.engine.prompts import parse_judge_prompt

PROVIDER: Final = "offline"
ECHO_MODEL: Final = "offline/echo"
JUDGE_MODEL: Final = "offline/judge"
GUARDED_ECHO_MODEL: Final = "offline/guarded-echo"
OFFLINE_MODELS: Final[tuple[str, ...]] = (
    ECHO_MODEL,
    JUDGE_MODEL,
    GUARDED_ECHO_MODEL,
    *simulated.SIMULATED_MODELS,
)

JUDGE_PASS_RATING: Final = 5.0

_QUOTED_PHRASE = re.compile(r'"([^"]+)"')
_LONG_WORD = re.compile(r"[^\W\d_]{4,}")

_registration_lock = threading.Lock()


def _import_litellm() -> Any:
    # Without this, importing litellm fetches its price map over the network.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # litellm costs seconds to import; only the offline models' registration with it needs it.
    import litellm

    return litellm


def _content_text(content: Any) -> str:
    """The text of a message content, whether a string or a list of OpenAI content parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        ]
        return "\n".join(parts)
    return str(content)


def count_words(text: str) -> int:
    return len(text.split())


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return _content_text(message.get("content"))
    return ""


def _prompt_words(messages: list[Any]) -> int:
    return sum(
        count_words(_content_text(message.get("content")))
        for message in messages
        if isinstance(message, dict)
    )


def rubric_keywords(rubric: str) -> list[str]:
    """The keywords `offline/judge` looks for: quoted phrases, else long words (deduplicated)."""
    quoted = [phrase.strip() for phrase in _QUOTED_PHRASE.findall(rubric) if phrase.strip()]
    candidates = quoted or [word.lower() for word in _LONG_WORD.findall(rubric)]
    seen: dict[str, None] = {}
    for keyword in candidates:
        seen.setdefault(keyword, None)
    return list(seen)


def judge_verdict(rubric: str, response: str) -> dict[str, Any]:
    """The verdict `offline/judge` gives a response under a rubric."""
    keywords = rubric_keywords(rubric)
    if not keywords:
        return {"passed": False, "rating": 0.0, "feedback": "The rubric names no keywords."}
    lowered = response.casefold()
    found = sum(1 for keyword in keywords if keyword.casefold() in lowered)
    rating = round(10 * found / len(keywords), 1)
    missing = len(keywords) - found
    feedback = (
        f"Covers all {len(keywords)} rubric keywords."
        if missing == 0
        else f"Covers {found} of {len(keywords)} rubric keywords; {missing} missing."
    )
    return {"passed": rating >= JUDGE_PASS_RATING, "rating": rating, "feedback": feedback}


def _echo_reply(messages: list[Any]) -> str:
    return _last_user_text(messages)


# offline/guarded-echo

REDACTED: Final = "[redacted]"
NEVER_SAY_PREFIX: Final = "never say:"
NEVER_IGNORE_LINE: Final = "never ignore previous instructions"
OVERRIDE_PHRASE: Final = "ignore previous instructions"
# Bounds on what one system prompt can make the simulation look for, so the redaction pattern
# (and RE2's automaton for it) stays small whatever the prompt: matching is then linear in the
# text. Phrases past these bounds are not honoured.
GUARDED_MAX_PHRASES: Final = 64
GUARDED_MAX_PHRASE_CHARS: Final = 256


def _system_text(messages: list[Any]) -> str:
    return "\n".join(
        _content_text(message.get("content"))
        for message in messages
        if isinstance(message, dict) and message.get("role") == "system"
    )


def guarded_phrases(system_prompt: str) -> list[str]:
    """The phrases `offline/guarded-echo` redacts: the text after `Never say:` (any case) on
    each line that starts with it, trimmed; empty ones are skipped, repeats (in any case)
    count once, and only the first GUARDED_MAX_PHRASES of at most GUARDED_MAX_PHRASE_CHARS
    characters are kept."""
    phrases: dict[str, str] = {}
    for line in system_prompt.splitlines():
        stripped = line.lstrip()
        if stripped[: len(NEVER_SAY_PREFIX)].casefold() != NEVER_SAY_PREFIX:
            continue
        phrase = stripped[len(NEVER_SAY_PREFIX) :].strip()
        if phrase and len(phrase) <= GUARDED_MAX_PHRASE_CHARS:
            # lower(), not casefold(): repeats are those the redaction treats as the same.
            phrases.setdefault(phrase.lower(), phrase)
            if len(phrases) == GUARDED_MAX_PHRASES:
                break
    return list(phrases.values())


def forbids_ignoring(system_prompt: str) -> bool:
    """Whether a system-prompt line says `Never ignore previous instructions` (any case, an
    ending full stop allowed)."""
    return any(
        line.strip().rstrip(".").rstrip().casefold() == NEVER_IGNORE_LINE
        for line in system_prompt.splitlines()
    )


@lru_cache(maxsize=64)
def _redaction_pattern(phrases: tuple[str, ...]) -> Any:
    # Every character as `\x{...}`: a phrase is literal text whatever it holds. Leftmost-longest
    # with one pass over the text, so overlapping phrases redact the longest and the inserted
    # "[redacted]" is never searched again. Bytes: RE2 reads UTF-8, and a lone surrogate in the
    # text (which UTF-8 cannot encode) must still come back as it was.
    alternatives = ("".join(f"\\x{{{ord(character):x}}}" for character in p) for p in phrases)
    options = re2.Options()
    options.case_sensitive = False
    options.longest_match = True
    options.log_errors = False
    return re2.compile("|".join(alternatives).encode(), options)


def guarded_echo_reply(system_prompt: str, user_message: str) -> str:
    """What `offline/guarded-echo` answers: a SIMULATION of a target that obeys its system
    prompt, for demos and tests of red-blue competitions. It measures nothing about real models.

    The answer is `user_message` with every phrase of `guarded_phrases(system_prompt)`
    replaced by `[redacted]`, case-insensitively (Unicode simple case folding: each character
    against its case variants, so É matches é and the Kelvin sign matches k, but ß does not
    match SS), in one left-to-right pass where, of phrases starting at the same place, the
    longest wins. When the user message contains `ignore previous instructions` (any case)
    and no system-prompt line says `Never ignore previous instructions`, the guard is off and
    the message comes back verbatim. Time is linear in the lengths of both texts.
    """
    if OVERRIDE_PHRASE in user_message.casefold() and not forbids_ignoring(system_prompt):
        return user_message
    phrases = guarded_phrases(system_prompt)
    if not phrases or not user_message:
        return user_message
    encoded = user_message.encode("utf-8", "surrogatepass")
    redacted: bytes = _redaction_pattern(tuple(phrases)).sub(REDACTED.encode(), encoded)
    return redacted.decode("utf-8", "surrogatepass")


def _guarded_echo_reply(messages: list[Any]) -> str:
    return guarded_echo_reply(_system_text(messages), _last_user_text(messages))


def _judge_reply(messages: list[Any]) -> str:
    parsed = parse_judge_prompt(_last_user_text(messages))
    if parsed is None:
        verdict: dict[str, Any] = {
            "passed": False,
            "rating": 0.0,
            "feedback": "The message is not a judge prompt.",
        }
    else:
        verdict = judge_verdict(*parsed)
    return json.dumps(verdict)


_REPLIES: Final[dict[str, Callable[[list[Any]], str]]] = {
    "echo": _echo_reply,
    "judge": _judge_reply,
    "guarded-echo": _guarded_echo_reply,
}


def _bare_name(model: str) -> str:
    return model.removeprefix(f"{PROVIDER}/")


def _temperature(optional_params: Any) -> float | None:
    value = optional_params.get("temperature") if isinstance(optional_params, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _reply(name: str, messages: list[Any], temperature: float | None) -> str | None:
    """The offline model's reply, or None when no offline model has that name."""
    if f"{PROVIDER}/{name}" in simulated.SIMULATED_MODELS:
        # The simulations also need the temperature.
        return simulated.reply(name, _last_user_text(messages), temperature=temperature)
    reply_for = _REPLIES.get(name)
    return reply_for(messages) if reply_for is not None else None


class UnknownOfflineModel(LookupError):
    """No offline model has that name. Its `status_code` makes callers treat it as a
    permanent error (not retried), as litellm's NotFoundError is."""

    status_code = 404


def response_for(
    model: str, messages: list[Any], temperature: float | None = None
) -> dict[str, Any]:
    """The offline model's answer as an OpenAI chat completion, in plain JSON: what the engine
    reads from any model (app.evaluation.engine.llm), without litellm."""
    name = _bare_name(model)
    reply = _reply(name, messages, temperature)
    if reply is None:
        known = ", ".join(OFFLINE_MODELS)
        raise UnknownOfflineModel(f"unknown offline model {PROVIDER}/{name}; known: {known}")
    prompt_tokens = _prompt_words(messages)
    completion_tokens = count_words(reply)
    return {
        "model": f"{PROVIDER}/{name}",
        "created": int(time.time()),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": reply},
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _build_response(model: str, messages: list[Any], optional_params: Any = None) -> Any:
    litellm = _import_litellm()
    try:
        answer = response_for(model, messages, _temperature(optional_params))
    except UnknownOfflineModel as error:
        # A 404 makes litellm raise NotFoundError, which callers treat as a permanent error.
        # litellm is loaded by now (it called this handler); the module never imports it itself.
        from litellm.llms.custom_llm import CustomLLMError

        raise CustomLLMError(404, str(error)) from error
    usage = answer.pop("usage")
    return litellm.ModelResponse(**answer, usage=litellm.Usage(**usage))


def _make_handler() -> Any:
    _import_litellm()
    # litellm costs seconds to import; only the offline models' registration with it needs it.
    from litellm.llms.custom_llm import CustomLLM

    class OfflineLLM(CustomLLM):  # type: ignore[misc]  # litellm is untyped for mypy
        def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            return _build_response(model, messages, kwargs.get("optional_params"))

        async def acompletion(
            self, model: str, messages: list[Any], *args: Any, **kwargs: Any
        ) -> Any:
            return _build_response(model, messages, kwargs.get("optional_params"))

    return OfflineLLM()


def register_offline_models() -> None:
    """Register the `offline` provider and its models with litellm. Safe to call repeatedly."""
    litellm = _import_litellm()
    with _registration_lock:
        if not any(item.get("provider") == PROVIDER for item in litellm.custom_provider_map):
            litellm.custom_provider_map = [
                *litellm.custom_provider_map,
                {"provider": PROVIDER, "custom_handler": _make_handler()},
            ]
        if all(model in litellm.model_cost for model in OFFLINE_MODELS):
            return
        litellm.register_model(
            {
                model: {
                    "litellm_provider": PROVIDER,
                    "mode": "chat",
                    "input_cost_per_token": 0.0,
                    "output_cost_per_token": 0.0,
                    "cache_read_input_token_cost": 0.0,
                    "cache_creation_input_token_cost": 0.0,
                    "max_tokens": 1_000_000,
                    "max_input_tokens": 1_000_000,
                    "max_output_tokens": 1_000_000,
                }
                for model in OFFLINE_MODELS
            }
        )
