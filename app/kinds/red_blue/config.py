"""A red_blue challenge's sections, as the challenge layer stores them.

The rules of the sections are `app.kinds.red_blue.rules.config`'s; this module only adapts
them to the kind registry: `target`, `judge_suite`, `self_test`, `pairing`, `points` and
`final_round` are the kind's sections (kept in the challenge's `kind_sections`), while
`limits` is the `limits` every challenge has (its `max_attempts_per_day`,
`max_attempts_total`), with the kind's own beside them in the same document
(`RedBlueLimitFields`: `max_defense_chars`, `max_attack_chars`). `rules` puts them together
as one `RedBlueConfig`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from app.kinds.api import KindConfig, KindLimits, LimitsConfig
from app.kinds.api.evaluation import ModelSpec
from app.kinds.red_blue.rules.config import (
    JudgeSuite,
    PairingConfig,
    PointsConfig,
    RedBlueConfig,
    RedBlueLimits,
    RedBlueTarget,
    SelfTest,
)


class Target(RedBlueTarget):
    """The target model; `api_base` (an OpenAI-compatible server, checked against the
    operator's allowed base URLs) is for tenant admins' eyes only."""

    api_base: str | None = Field(
        default=None,
        max_length=500,
        description="An OpenAI-compatible server; must match an allowed base URL (setting "
        "GAUNTLET_ALLOWED_API_BASES). Stored in its normalised form.",
    )

    def model_spec(self, system_prompt: str, timeout_s: float) -> ModelSpec:
        """The call of a match (or a self-test): the defense is the system prompt."""
        return ModelSpec(
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            system_prompt=system_prompt or None,
            api_base=self.api_base,
            timeout_s=timeout_s,
        )


class RedBlueSections(KindConfig):
    target: Target
    judge_suite: JudgeSuite = Field(
        examples=[
            {
                "categories": [
                    {"name": "pwned", "verifier": {"type": "contains", "pattern": "PWNED"}}
                ]
            }
        ]
    )
    self_test: SelfTest
    pairing: PairingConfig = Field(default_factory=PairingConfig)
    points: PointsConfig = Field(default_factory=PointsConfig)
    final_round: bool = Field(
        default=False,
        description="At the close, every participant's newest active defense meets every other "
        "participant's newest attack it has not met, before the final ratings "
        '(docs/redblue.md, "Final round").',
    )


def sections_of(config: KindConfig) -> RedBlueSections:
    if not isinstance(config, RedBlueSections):
        raise TypeError(f"a red_blue challenge's configuration, not {type(config).__name__}")
    return config


class RedBlueLimitFields(KindLimits):
    """red_blue's own limits, in the challenge's `limits` document beside the core's."""

    max_defense_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="The longest defense (system prompt); null: the "
        "server's cap (GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )
    max_attack_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="The longest attack (user message); null: the "
        "server's cap (GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )


def red_blue_limits(limits: LimitsConfig) -> RedBlueLimits:
    own = RedBlueLimitFields.of(limits)
    return RedBlueLimits(
        max_attempts_per_day=limits.max_attempts_per_day,
        max_defense_chars=own.max_defense_chars,
        max_attack_chars=own.max_attack_chars,
    )


def rules(config: KindConfig, limits: LimitsConfig) -> RedBlueConfig:
    """The whole configuration of a red_blue challenge, as the rules (`rules/`) take it."""
    sections = sections_of(config)
    return RedBlueConfig.model_construct(
        target=sections.target,
        judge_suite=sections.judge_suite,
        self_test=sections.self_test,
        pairing=sections.pairing,
        points=sections.points,
        limits=red_blue_limits(limits),
    )


def text_limit(configured: int | None, server_cap: int) -> int:
    """The longest defense or attack: the challenge's limit, never above the server's."""
    return min(configured or server_cap, server_cap)


def public_verifier(verifier: Any) -> dict[str, Any]:
    """What participants see of a verifier: its type (and a judge's voting), never its
    pattern, rubric or model."""
    shown: dict[str, Any] = {"type": verifier.type}
    if verifier.type == "llm_judge":
        shown["votes"] = verifier.votes
        shown["pass_threshold"] = verifier.pass_threshold
    return shown
