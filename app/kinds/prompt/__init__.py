"""Prompt challenges: participants submit a prompt; the target model answers it behind the
challenge's hidden system prompt, k times (pass@k) or in sequence with feedback (seq@k); the
verifier judges each answer."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from app.kinds.api import (
    AttemptMetrics,
    ChallengeTemplate,
    Kind,
    KindConfig,
    KindSubmission,
    Measure,
    NamedModel,
    RunContext,
    RunsAttempts,
    ScoringConfig,
    ShownFields,
    Strategy,
    SubmissionTarget,
    Submitted,
    ValidationFailed,
    checked_api_base,
    checked_prompt,
    fields_as,
    scoring_strategy,
)
from app.kinds.api.evaluation import FEEDBACK_MODES
from app.kinds.prompt import web
from app.kinds.prompt.challenge_templates import PROMPT_INJECTION
from app.kinds.prompt.config import PromptConfig
from app.kinds.prompt.schemas import PromptSubmission


def _config(config: KindConfig) -> PromptConfig:
    if not isinstance(config, PromptConfig):
        raise TypeError(f"a prompt challenge's configuration, not {type(config).__name__}")
    return config


class PromptKind(web.PromptPages, RunsAttempts, Kind):
    name: ClassVar[str] = "prompt"
    title: ClassVar[str] = "Prompt"
    description: ClassVar[str] = "Participants write a prompt; the challenge's model answers it."
    config_model: ClassVar[type[KindConfig]] = PromptConfig
    strategies: ClassVar[tuple[Strategy, ...]] = (
        Strategy.FIRST,
        Strategy.FASTEST,
        Strategy.FEWEST_TOKENS,
        Strategy.HIGHEST_RATING,
        Strategy.CUSTOM,
    )
    default_strategy: ClassVar[Strategy] = Strategy.FIRST
    submission_model: ClassVar[type[KindSubmission]] = PromptSubmission

    # Configuration ------------------------------------------------------------------------

    def templates(self) -> Sequence[ChallengeTemplate]:
        return (PROMPT_INJECTION,)

    def check(self, config: KindConfig, scoring: ScoringConfig) -> None:
        prompt = _config(config)
        if prompt.evaluation.feedback_mode not in FEEDBACK_MODES:
            known = ", ".join(sorted(FEEDBACK_MODES))
            raise ValidationFailed.at(
                ["evaluation", "feedback_mode"], f"unknown feedback mode; known: {known}"
            )
        strategy = scoring.strategy
        ranks_by_rating = (
            strategy is not None and scoring_strategy(strategy).measure is Measure.RATING
        )
        if ranks_by_rating and prompt.verifier.type != "llm_judge":
            raise ValidationFailed.at(
                ["scoring", "strategy"],
                f"strategy '{strategy}' needs an 'llm_judge' verifier (only a judge rates)",
            )

    def prepare(self, config: KindConfig) -> KindConfig:
        prompt = _config(config)
        api_base = checked_api_base(prompt.target.api_base, ["target", "api_base"])
        target = prompt.target.model_copy(update={"api_base": api_base})
        return prompt.model_copy(update={"target": target})

    def named_models(self, config: KindConfig) -> Sequence[NamedModel]:
        prompt = _config(config)
        models = [
            NamedModel(
                ("target", "model"),
                prompt.target.model,
                api_base=prompt.target.api_base,
                base_field="target.api_base",
            )
        ]
        if prompt.verifier.type == "llm_judge":
            models.append(NamedModel(("verifier", "model"), prompt.verifier.model))
        return models

    def public_sections(self, config: KindConfig) -> dict[str, Any]:
        """No system prompt, no verifier keys or patterns, no judge rubric, no server."""
        prompt = _config(config)
        verifier: dict[str, Any] = {"type": prompt.verifier.type}
        if prompt.verifier.type == "llm_judge":
            verifier["votes"] = prompt.verifier.votes
            verifier["pass_threshold"] = prompt.verifier.pass_threshold
        return {
            "target": prompt.target.public(),
            "verifier": verifier,
            "evaluation": prompt.evaluation.model_dump(mode="json"),
        }

    # Submissions and runs -----------------------------------------------------------------

    def submission(
        self,
        target: SubmissionTarget,
        fields: KindSubmission,
        config: Callable[[], KindConfig],
    ) -> Submitted:
        prompt = fields_as(fields, PromptSubmission).prompt
        return Submitted(kind_fields={"prompt": checked_prompt(target, prompt)})

    def shown(self, kind_fields: dict[str, Any] | None) -> ShownFields:
        # The read's `prompt` is the participant's prompt.
        return ShownFields.prompt_apart(kind_fields)

    async def run(self, context: RunContext) -> AttemptMetrics:
        # The engine's runner is the worker's: the API loads the kind, never the run.
        from app.kinds.prompt import run

        return await run.run(context, _config(context.job.config))


KIND = PromptKind()
