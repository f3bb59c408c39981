"""Types shared by the evaluation engine, the service and the CLI.

The engine imports nothing from the web or database layers; these plain dataclasses are what
crosses that boundary. Every record serialises to the JSON layout of a run-folder attempt file
(docs/engine.md, "Run folders"), which is also how the service stores a trial.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, Literal, Protocol

Metric = Literal["pass@k", "seq@k"]
Message = dict[str, str]


class InfrastructureError(Exception):
    """A failure of the machinery (provider down after retries, judge unusable), not of the actor.

    An attempt that meets one ends `error` with this message as the reason; it never counts as a
    failed trial. The message is shown to participants, so it never holds an address, a port
    or a provider's answer; `detail` (the full reason, for logs and the tenant admin) may.
    """

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail if detail is not None else message


class CostBudgetExhausted(InfrastructureError):
    """No model call starts: the attempt's budget (`scope` "attempt") or the tenant's budget
    of the UTC day (`scope` "tenant") is spent."""

    def __init__(
        self, message: str, *, scope: Literal["attempt", "tenant"], detail: str | None = None
    ) -> None:
        super().__init__(message, detail=detail)
        self.scope = scope


class PromptTooLong(InfrastructureError):
    """The prompt is longer than the model accepts: refused before the call when its size
    proves it, or by the provider (never retried; the message says which model and why)."""


@dataclass
class CallRecord:
    """One model call exactly as made: the messages sent, the text received (cut at the call's
    output cap, with a visible mark), the usage (each count bounded by what the request could
    be; app.evaluation.engine.bounds).

    `output_truncated_chars`: characters of the answer cut off (0: the whole answer is here).
    `reported_usage`: the four counts as the server reported them, kept only when one was
    beyond its bound (the record holds the bounded ones)."""

    model: str
    prompt: list[Message]
    output: str
    input_tokens: int = 0
    cached_tokens: int = 0
    thinking_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    elapsed_ms: int = 0
    output_truncated_chars: int = 0
    reported_usage: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        # What dataclasses.asdict gives (a deep copy), built explicitly: asdict's generic deep
        # copy costs more than the rest of a trial's bookkeeping, and a run makes thousands.
        data: dict[str, Any] = {
            "model": self.model,
            "prompt": _copied(self.prompt),
            "output": self.output,
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "thinking_tokens": self.thinking_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "elapsed_ms": self.elapsed_ms,
        }
        # Written only when they say something, so the attempt files of ordinary calls keep
        # exactly the fields they always had.
        if self.output_truncated_chars:
            data["output_truncated_chars"] = self.output_truncated_chars
        if self.reported_usage is not None:
            data["reported_usage"] = dict(self.reported_usage)
        return data


@dataclass
class VerifierResult:
    """What every verifier returns. `raw_eval_output` is public; `details` never reach the actor."""

    success: bool
    score: float
    raw_eval_output: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    rating: float | None = None
    feedback: str | None = None
    calls: list[CallRecord] = field(default_factory=list)


# A trial's actor section is the record of the actor's call: one type, written to the attempt
# file's `actor` key.
ActorSection = CallRecord


@dataclass
class JudgeSection:
    model: str | None
    success: bool
    score: float
    raw_eval_output: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    rating: float | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class CriticSection:
    model: str | None = None
    feedback: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TrialRecord:
    """One actor call, its verification and (for a failed seq@k trial) its feedback."""

    attempt_index: int  # 1-based
    actor: ActorSection
    judge: JudgeSection
    critic: CriticSection = field(default_factory=CriticSection)

    @property
    def success(self) -> bool:
        return self.judge.success

    def to_dict(self) -> dict[str, Any]:
        # As dataclasses.asdict (a deep copy: nothing in it is shared with the record), built
        # explicitly for speed; see CallRecord.to_dict.
        judge, critic = self.judge, self.critic
        return {
            "attempt_index": self.attempt_index,
            "actor": self.actor.to_dict(),
            "judge": {
                "model": judge.model,
                "success": judge.success,
                "score": judge.score,
                "raw_eval_output": judge.raw_eval_output,
                "details": _copied(judge.details),
                "rating": judge.rating,
                "calls": _copied(judge.calls),
            },
            "critic": {
                "model": critic.model,
                "feedback": critic.feedback,
                "calls": _copied(critic.calls),
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TrialRecord:
        """A stored trial: the service's rows, or an attempt file of a run folder, whichever
        harness wrote it. The actor's prompt may be the message list (the service, older run
        folders) or the text it saw with the list beside it as `messages` (run folders);
        keys this record does not keep (a provider's raw response, a finish reason) are
        dropped rather than refused."""
        actor = dict(data["actor"])
        actor["prompt"] = stored_messages(actor.get("prompt"), actor.get("messages"))
        judge = dict(data["judge"])
        if "details" not in judge:
            # The research harness's older files call the private details otherwise.
            legacy = judge.get("judge_details", judge.get("private"))
            judge["details"] = legacy if isinstance(legacy, dict) else {}
        return cls(
            attempt_index=int(data["attempt_index"]),
            actor=_section(ActorSection, actor),
            judge=_section(JudgeSection, judge),
            critic=_section(CriticSection, dict(data.get("critic") or {})),
        )


_SHARED_TYPES = (str, int, float, bool, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of a record's JSON-like value, as dataclasses.asdict makes it: dicts and
    lists copied level by level, immutable scalars shared; anything else goes the general way."""
    kind = type(value)
    if kind is dict:
        return {_copied(key): _copied(item) for key, item in value.items()}
    if kind is list:
        return [_copied(item) for item in value]
    if kind in _SHARED_TYPES:
        return value
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return copy.deepcopy(value)


def _section(kind: type[Any], data: dict[str, Any]) -> Any:
    known = {item.name for item in fields(kind)}
    return kind(**{key: value for key, value in data.items() if key in known})


def prompt_text(messages: list[Message]) -> str:
    """The text a model saw in `messages`: the one message's content, or the contents of
    several in order, a blank line apart (a system prompt before the user message)."""
    return "\n\n".join(str(message.get("content", "")) for message in messages)


def stored_messages(prompt: Any, messages: Any) -> list[Message]:
    """The message list of a stored call: `messages` when kept, a stored list as is, or a
    prompt stored as text, taken as the one user message it was."""
    if isinstance(messages, list):
        return [dict(message) for message in messages if isinstance(message, Mapping)]
    if isinstance(prompt, list):
        return [dict(message) for message in prompt if isinstance(message, Mapping)]
    if isinstance(prompt, str):
        return [{"role": "user", "content": prompt}]
    return []


@dataclass(frozen=True)
class ModelSpec:
    """How to call one model for one role (actor, judge or critic)."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    system_prompt: str | None = None
    api_base: str | None = None
    timeout_s: float = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4  # calls in all, the first included
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0


class Verifier(Protocol):
    """Decides whether one actor output solves the task."""

    async def verify(self, output: str) -> VerifierResult: ...


TrialCallback = Callable[[TrialRecord], Awaitable[None]]
