"""Simulated solvers for the `offline` provider: `offline/solver-sim` and `offline/solver-sim-weak`.

THESE ARE SIMULATIONS, NOT MODELS. They read nothing of a task and reason about nothing: a
benchmark tells them the answers (`register_task`) when it loads its tasks, and they answer
correctly or wrongly by a seeded draw. They exist so that demos, tests and a new user can watch
pass@k and seq@k behave like they do with real models (curves that rise with t, more errors at
higher temperature, seq@k helped by feedback) with no key and no network. A figure measured on
them says something about the engine, never about any model.

Registration (the API benchmarks call from `load_tasks`):

    from app.evaluation.engine import simulated
    simulated.register_task(task.prompt, correct=[...], wrong=[...], difficulty=0.3, seed=seed)

`correct` and `wrong` are reply texts (one or several renderings each); the model answers with
one of them. `difficulty` (0 easy .. 1 impossible) lowers the success probability; `answerable`
False says the prompt lacks what the answer needs (e.g. retrieval missed the evidence), so the
simulation can only answer wrongly. The registry is per process, keyed by a hash of the task
prompt, and bounded (`MAX_REGISTERED_TASKS`, least recently registered evicted): the runner
holds few tasks in flight and registers each one as it loads it, so a Celery worker that loads a
benchmark's tasks registers them in the process that then makes the calls. A prompt that matches
no registered task gets `UNREGISTERED_REPLY`.

How a reply is drawn, for the last user message of a call:

- The task is found from the message: the whole message (pass@k sends the task prompt alone),
  or the part before the seq@k attempt line ("This is attempt t of K.",
  app.evaluation.engine.prompts); the earlier attempts' feedback is read after it, in either prompt
  style (seq_k's tags or gauntlet-2025's headers).
- Success probability of a first look: `skill(model) x (1 - difficulty) x (1 - error(T))`,
  where `error(T) = min(0.9, 0.2 + 0.3 T)` grows with the temperature T (absent: 1.0, the usual
  provider default; clamped to 0..2). `skill` is 1.0 for `solver-sim`, 0.55 for the weak one.
- Feedback helps: on seq@k attempt t, each earlier attempt's feedback removes a share of the
  remaining failure probability, `p_t = 1 - (1 - p_1) x prod(1 - g)`, with g = 0.5 for an
  informative feedback, 0.2 for the bare "Incorrect." of the binary mode (or the pass/fail
  sentence a benchmark's own binary mode declares), 0 for none.
- The draw is `u = hash(seed, model, task, draw number, T)` in [0, 1); the attempt succeeds when
  `u < p`. seq@k attempt t uses draw number t - 1. pass@k sends the same message k times, so its
  samples are numbered in call order per task (counters reset whenever the task is registered,
  i.e. every time a run loads its tasks); at T = 0 every pass@k sample uses draw 0 (greedy
  decoding: one prompt, one reply), so pass@k stays flat at T = 0.
- Because pass@k sample j and seq@k attempt j + 1 share their draw and p_t >= p_1, a task that
  pass@k solves within k samples is solved by seq@k within k attempts too: seq@k >= pass@k per
  task for the same seed, model and temperature, and strictly more where feedback rescues a
  failure.
- The reply text: a correct rendering, or a wrong one; the number of distinct wrong renderings
  in play grows with T (one at T = 0, all of them from T = 1), so higher temperatures give more
  diverse samples.

Caveats: a resumed pass@k run (a new process) numbers its missing samples from 0 again, so they
repeat the first draws; two runs of the same task, model and temperature at the same time in one
process share the sample counters. Both change which draws a run gets, never the rules above.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from app.evaluation.engine.feedback import BINARY_FEEDBACK
from app.evaluation.engine.prompts import (
    ATTEMPT_LINE,
    EARLIER_FEEDBACK_HEADER,
    EARLIER_OUTPUT_HEADER,
    FEEDBACK_CLOSE,
    FEEDBACK_OPEN,
    FIRST_ATTEMPT_NOTE,
    LATER_ATTEMPT_NOTE,
    NO_FEEDBACK,
    PREVIOUS_ATTEMPT_CLOSE,
    PREVIOUS_ATTEMPT_OPEN,
    SECTION_SEPARATOR,
)

PROVIDER_PREFIX: Final = "offline/"
SOLVER_SIM_MODEL: Final = "offline/solver-sim"
WEAK_SOLVER_SIM_MODEL: Final = "offline/solver-sim-weak"
SIMULATED_MODELS: Final[tuple[str, ...]] = (SOLVER_SIM_MODEL, WEAK_SOLVER_SIM_MODEL)
SKILLS: Final[dict[str, float]] = {SOLVER_SIM_MODEL: 1.0, WEAK_SOLVER_SIM_MODEL: 0.55}

DEFAULT_TEMPERATURE: Final = 1.0
MAX_TEMPERATURE: Final = 2.0
INFORMATIVE_FEEDBACK_GAIN: Final = 0.5
BINARY_FEEDBACK_GAIN: Final = 0.2
# The pass/fail sentences that tell no more than the bare "Incorrect.": a benchmark whose
# binary mode has its own wording declares it (`declare_binary_feedback`).
_binary_feedbacks: set[str] = {BINARY_FEEDBACK}
# The runner keeps at most `tasks_in_flight` tasks loaded (100 by default); the bound keeps the
# registry's memory flat on a benchmark of any size while covering every task in flight.
MAX_REGISTERED_TASKS: Final = 4096

UNREGISTERED_REPLY: Final = (
    "[simulated solver] No registered task matches this prompt, so the simulation has no answer."
)

_UNIT: Final = float(2**64)


def _attempt_line_pattern() -> re.Pattern[str]:
    before, _, rest = ATTEMPT_LINE.partition("{attempt}")
    middle, _, after = rest.partition("{k}")
    return re.compile(
        re.escape(SECTION_SEPARATOR)
        + re.escape(before)
        + r"(\d+)"
        + re.escape(middle)
        + r"(\d+)"
        + re.escape(after)
    )


_ATTEMPT_LINE = _attempt_line_pattern()


@dataclass
class SimulatedTask:
    """What a benchmark told the simulation about one task."""

    correct: tuple[str, ...]
    wrong: tuple[str, ...]
    difficulty: float
    answerable: bool
    seed: int
    # Next pass@k sample number per (model, temperature): pass@k prompts carry no index.
    samples: dict[tuple[str, str], int] = field(default_factory=dict)


_registry: OrderedDict[str, SimulatedTask] = OrderedDict()
_lock = threading.Lock()


def _task_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def _texts(value: str | Sequence[str], name: str) -> tuple[str, ...]:
    items = (value,) if isinstance(value, str) else tuple(value)
    if not items or not all(isinstance(item, str) and item.strip() for item in items):
        raise ValueError(f"{name} must be one or more non-empty reply texts")
    return items


def register_task(
    prompt: str,
    *,
    correct: str | Sequence[str],
    wrong: str | Sequence[str],
    difficulty: float = 0.3,
    answerable: bool = True,
    seed: int = 0,
) -> None:
    """Tells the simulated solvers the answers to the task whose prompt is `prompt`.

    Registering a task again replaces its entry and restarts its pass@k sample numbering, so
    every run that loads its tasks draws the same samples.
    """
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("prompt must be the task's non-empty prompt text")
    if isinstance(difficulty, bool) or not 0.0 <= float(difficulty) <= 1.0:
        raise ValueError(f"difficulty must be between 0 and 1, got {difficulty!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    entry = SimulatedTask(
        correct=_texts(correct, "correct"),
        wrong=_texts(wrong, "wrong"),
        difficulty=float(difficulty),
        answerable=bool(answerable),
        seed=seed,
    )
    key = _task_key(prompt)
    with _lock:
        _registry.pop(key, None)
        _registry[key] = entry
        while len(_registry) > MAX_REGISTERED_TASKS:
            _registry.popitem(last=False)


def registered_task(prompt: str) -> SimulatedTask | None:
    """The entry registered for exactly this task prompt, if any."""
    with _lock:
        return _registry.get(_task_key(prompt))


def clear_registry() -> None:
    with _lock:
        _registry.clear()


# The probability model


def error_rate(temperature: float) -> float:
    """The share of first looks that go wrong at `temperature`, for an easy task."""
    return min(0.9, 0.2 + 0.3 * _clamp_temperature(temperature))


def first_look_probability(model: str, temperature: float, difficulty: float) -> float:
    """Success probability of an attempt that has seen no feedback."""
    skill = SKILLS.get(_full_name(model), 0.0)
    return skill * (1.0 - difficulty) * (1.0 - error_rate(temperature))


def declare_binary_feedback(text: str) -> None:
    """Tells the simulation that `text` is a binary mode's feedback: it helps as "Incorrect."
    does, not as an informative one."""
    _binary_feedbacks.add(text.strip())


def feedback_gain(feedback: str) -> float:
    """How much one earlier attempt's feedback helps: informative, binary or none."""
    text = feedback.strip()
    if not text or text == NO_FEEDBACK:
        return 0.0
    if text in _binary_feedbacks:
        return BINARY_FEEDBACK_GAIN
    return INFORMATIVE_FEEDBACK_GAIN


def success_probability(
    model: str,
    temperature: float,
    difficulty: float,
    *,
    feedback: Sequence[str] = (),
    answerable: bool = True,
) -> float:
    """p_t of the module docstring: the first look's chance, raised by each earlier feedback."""
    if not answerable:
        return 0.0
    failure = 1.0 - first_look_probability(model, temperature, difficulty)
    for text in feedback:
        failure *= 1.0 - feedback_gain(text)
    return 1.0 - failure


def _clamp_temperature(temperature: float | None) -> float:
    if temperature is None or not math.isfinite(temperature):
        return DEFAULT_TEMPERATURE
    return min(MAX_TEMPERATURE, max(0.0, float(temperature)))


def _full_name(model: str) -> str:
    return model if model.startswith(PROVIDER_PREFIX) else f"{PROVIDER_PREFIX}{model}"


def _draw(seed: int, model: str, task_key: str, draw: int, temperature: float) -> tuple[float, int]:
    """A uniform number in [0, 1) that decides success, and an int that picks the rendering."""
    material = f"{seed}|{model}|{task_key}|{draw}|{temperature:.4f}".encode()
    digest = hashlib.sha256(material).digest()
    return int.from_bytes(digest[:8], "big") / _UNIT, int.from_bytes(digest[8:16], "big")


# Reading the prompt


@dataclass(frozen=True)
class _Sighting:
    """A registered task found in a prompt, with what the prompt says about earlier attempts."""

    key: str
    task: SimulatedTask
    attempt: int | None  # the seq@k attempt number; None for a pass@k prompt
    feedback: tuple[str, ...]


def _earlier_feedback(history: str, attempt: int) -> tuple[str, ...]:
    """The feedback texts of attempts 1..attempt-1 in the part of a seq@k prompt after the
    attempt line ("" for an attempt that had none), in either prompt style."""
    if history.startswith((FIRST_ATTEMPT_NOTE, LATER_ATTEMPT_NOTE)):
        return _tagged_feedback(history, attempt)
    return _headed_feedback(history, attempt)


def _tagged_feedback(history: str, attempt: int) -> tuple[str, ...]:
    """seq_k's style: `<PreviousAttempt i>` blocks, each followed by its `<Feedback i>` when it
    had feedback. A block runs to the next attempt's opening tag (or the end)."""
    texts: list[str] = []
    position = 0
    for number in range(1, attempt):
        opening = SECTION_SEPARATOR + PREVIOUS_ATTEMPT_OPEN.format(attempt=number) + "\n"
        found = history.find(opening, position)
        if found < 0:
            break
        start = found + len(opening)
        following = SECTION_SEPARATOR + PREVIOUS_ATTEMPT_OPEN.format(attempt=number + 1) + "\n"
        end = history.find(following, start)
        block = history[start : end if end >= 0 else len(history)]
        feedback_opening = (
            "\n"
            + PREVIOUS_ATTEMPT_CLOSE.format(attempt=number)
            + SECTION_SEPARATOR
            + FEEDBACK_OPEN.format(attempt=number)
            + "\n"
        )
        feedback_closing = "\n" + FEEDBACK_CLOSE.format(attempt=number)
        at = block.rfind(feedback_opening)
        if at >= 0 and block.endswith(feedback_closing):
            texts.append(block[at + len(feedback_opening) : len(block) - len(feedback_closing)])
        else:
            texts.append("")
        position = start if end < 0 else end
    return tuple(texts)


def _headed_feedback(history: str, attempt: int) -> tuple[str, ...]:
    """gauntlet-2025's style: "Attempt i output:" and "Feedback on attempt i:" headers."""
    texts: list[str] = []
    position = 0
    for number in range(1, attempt):
        output_header = SECTION_SEPARATOR + EARLIER_OUTPUT_HEADER.format(attempt=number) + "\n"
        feedback_header = SECTION_SEPARATOR + EARLIER_FEEDBACK_HEADER.format(attempt=number) + "\n"
        output_at = history.find(output_header, position)
        if output_at < 0:
            break
        feedback_at = history.find(feedback_header, output_at + len(output_header))
        if feedback_at < 0:
            break
        start = feedback_at + len(feedback_header)
        next_output = SECTION_SEPARATOR + EARLIER_OUTPUT_HEADER.format(attempt=number + 1) + "\n"
        end = history.find(next_output, start)
        texts.append(history[start : end if end >= 0 else len(history)])
        position = start
    return tuple(texts)


def _find_task(text: str) -> _Sighting | None:
    with _lock:
        key = _task_key(text)
        task = _registry.get(key)
        if task is not None:
            return _Sighting(key=key, task=task, attempt=None, feedback=())
        # A task prompt may itself contain something like the attempt line; each candidate
        # split is tried, the first that names a registered task wins.
        for match in _ATTEMPT_LINE.finditer(text):
            key = _task_key(text[: match.start()])
            task = _registry.get(key)
            if task is not None:
                attempt = int(match.group(1))
                history = text[match.end() :]
                return _Sighting(
                    key=key,
                    task=task,
                    attempt=attempt,
                    feedback=_earlier_feedback(history, attempt),
                )
    return None


def _next_sample(task: SimulatedTask, model: str, temperature: float) -> int:
    counter_key = (model, f"{temperature:.4f}")
    with _lock:
        number = task.samples.get(counter_key, 0)
        task.samples[counter_key] = number + 1
    return number


def reply(model: str, prompt: str, *, temperature: float | None) -> str:
    """The simulated reply of `model` (with or without its `offline/` prefix) to the last user
    message `prompt` at `temperature`."""
    name = _full_name(model)
    if name not in SKILLS:
        raise ValueError(f"{model!r} is not a simulated model; known: {', '.join(SKILLS)}")
    sighting = _find_task(prompt)
    if sighting is None:
        return UNREGISTERED_REPLY
    task = sighting.task
    heat = _clamp_temperature(temperature)
    if sighting.attempt is not None:
        draw = sighting.attempt - 1
    elif heat == 0.0:
        draw = 0
    else:
        draw = _next_sample(task, name, heat)
    chance, pick = _draw(task.seed, name, sighting.key, draw, heat)
    probability = success_probability(
        name,
        heat,
        task.difficulty,
        feedback=sighting.feedback,
        answerable=task.answerable,
    )
    if chance < probability:
        return task.correct[pick % len(task.correct)]
    in_play = max(1, math.ceil(len(task.wrong) * min(1.0, heat)))
    return task.wrong[pick % in_play]
