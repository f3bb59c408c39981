"""LLM-critic feedback modes, `socratic` and `directive`: a critic model hints at the flaw.

The critic cannot reveal the answer key because it never receives it: its prompt holds the task
prompt, the actor's output and the verifier's public `raw_eval_output`, never `Task.answer` nor
`VerifierResult.details` (nor the judge's per-vote notes). The wording lives in
app.evaluation.engine.prompts (`build_critic_prompt`).
"""

from __future__ import annotations

from typing import Final

from app.evaluation.engine.feedback import CRITIC_FEEDBACK_MODES, TRUNCATION_MARKER, render_feedback
from app.evaluation.engine.llm import CompletionClient
from app.evaluation.engine.prompts import build_critic_prompt
from app.evaluation.engine.types import CallRecord, Message, ModelSpec, VerifierResult

# A critic that rambles would flood every later seq@k prompt; a hint needs far less.
CRITIC_FEEDBACK_LIMIT_CHARS: Final = 2000


def critic_messages(mode: str, *, task_prompt: str, output: str, verdict: str) -> list[Message]:
    """The messages the critic model receives for one failed attempt under `mode`."""
    if mode not in CRITIC_FEEDBACK_MODES:
        known = ", ".join(sorted(CRITIC_FEEDBACK_MODES))
        raise ValueError(f"{mode!r} is not an LLM-critic feedback mode ({known})")
    return [
        {
            "role": "user",
            "content": build_critic_prompt(
                style=mode, task_prompt=task_prompt, output=output, verdict=verdict
            ),
        }
    ]


async def critic_feedback(
    mode: str,
    *,
    llm: CompletionClient,
    critic: ModelSpec,
    task_prompt: str,
    output: str,
    result: VerifierResult,
) -> tuple[str, list[CallRecord]]:
    """The critic's hint and the call that made it.

    Only `result.raw_eval_output` of the result is passed on. An empty reply falls back to that
    public verdict (`raw` mode), so the next attempt still learns something.
    """
    messages = critic_messages(
        mode, task_prompt=task_prompt, output=output, verdict=result.raw_eval_output
    )
    record = await llm.complete(critic, messages)
    text = record.output.strip()
    if not text:
        text = render_feedback("raw", result)
    elif len(text) > CRITIC_FEEDBACK_LIMIT_CHARS:
        text = text[:CRITIC_FEEDBACK_LIMIT_CHARS].rstrip() + TRUNCATION_MARKER
    return text, [record]
