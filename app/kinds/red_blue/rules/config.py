"""The configuration of a red-blue challenge, validated at the boundary.

These are the fields a `red_blue` challenge adds to the common ones (slug, title, goal,
visibility, opening dates): `target`, `judge_suite`, `self_test`, `pairing`, `points` and
`limits`. `RedBlueConfig` validates them together; every error names its field path (for
example `judge_suite.categories.1.verifier.pattern`). docs/redblue.md has the rules they feed.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import (
    AfterValidator,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
)

from app.kinds.api import InputSchema, ModelId, get_settings, pattern_words
from app.kinds.api.evaluation import (
    LLMJudgeConfig,
    VerifierConfig,
    base_url_problem,
    model_id_problem,
)

PairingPolicy = Literal["round_robin", "latest_best", "random_active"]
PAIRING_POLICIES: Final[tuple[PairingPolicy, ...]] = ("round_robin", "latest_best", "random_active")
MAX_CATEGORIES: Final = 16
# Opponents a submission of latest_best or random_active meets when `n` is not given.
DEFAULT_SAMPLED_OPPONENTS: Final = 5
MAX_MATCHES_PER_SUBMISSION: Final = 1000
SELF_TEST_PROMPT_MAX_CHARS: Final = 20_000

# Category names are keys in every match's verdicts and in its `breached` list.
CategoryName = Annotated[
    str,
    StringConstraints(
        min_length=1,
        max_length=64,
        pattern=pattern_words(
            r"^[a-z0-9][a-z0-9_-]*$",
            "lowercase letters, digits, _ and -, starting with a letter or digit",
        ),
    ),
]


def _judge_model_allowed(verifier: VerifierConfig) -> VerifierConfig:
    """An `llm_judge` verifier's model is held to the rules of every other model id."""
    if isinstance(verifier, LLMJudgeConfig):
        problem = model_id_problem(
            verifier.model, get_settings().outbound_policy().providers
        ) or base_url_problem(verifier.model, None, None)
        if problem:
            raise ValueError(f"model: {problem}")
    return verifier


CheckedVerifier = Annotated[VerifierConfig, AfterValidator(_judge_model_allowed)]


class RedBlueTarget(InputSchema):
    """The model every match calls: the defense as system prompt, the attack as user message."""

    model: ModelId = Field(examples=["offline/guarded-echo"])
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=200_000)

    @field_validator("model")
    @classmethod
    def _reachable(cls, model: str) -> str:
        if "api_base" in cls.model_fields:
            # A target that can name a base URL is checked with it when the challenge is saved.
            return model
        problem = base_url_problem(model, None, None)
        if problem:
            raise ValueError(problem)
        return model


class JudgeCategory(InputSchema):
    """One harm the suite looks for: breached when `verifier` passes on the target's answer."""

    name: CategoryName = Field(examples=["pwned"])
    verifier: CheckedVerifier


class JudgeSuite(InputSchema):
    categories: list[JudgeCategory] = Field(min_length=1, max_length=MAX_CATEGORIES)

    @field_validator("categories")
    @classmethod
    def _unique_names(cls, categories: list[JudgeCategory]) -> list[JudgeCategory]:
        first_at: dict[str, int] = {}
        for position, category in enumerate(categories):
            if category.name in first_at:
                raise ValueError(
                    f"category names must be unique: {category.name!r} is both item "
                    f"{first_at[category.name]} and item {position}"
                )
            first_at[category.name] = position
        return categories


class SelfTest(InputSchema):
    """A benign prompt a defense must still answer well: `verifier` must pass on the target's
    answer (with the defense as system prompt) for the defense to become active."""

    prompt: str = Field(min_length=1, max_length=SELF_TEST_PROMPT_MAX_CHARS, examples=["Say hello"])
    verifier: CheckedVerifier = Field(examples=[{"type": "contains", "pattern": "hello"}])


class PairingConfig(InputSchema):
    """Which opponents a new attack or a newly active defense meets (docs/redblue.md)."""

    policy: PairingPolicy = "round_robin"
    max_matches_per_submission: int = Field(default=50, ge=1, le=MAX_MATCHES_PER_SUBMISSION)
    n: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MATCHES_PER_SUBMISSION,
        description="Opponents per submission for latest_best and random_active "
        f"(default {DEFAULT_SAMPLED_OPPONENTS}); at most max_matches_per_submission.",
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        le=2**63 - 1,
        description="random_active only: with the submission's id it decides the draw, so a "
        "pairing can be reproduced (default 0).",
    )

    # Field validators (not one on the model) so an error names `pairing.n` or `pairing.seed`;
    # `policy` and `max_matches_per_submission` come first, so they are in `info.data`.
    @field_validator("n")
    @classmethod
    def _n_of_a_sampling_policy(cls, n: int | None, info: ValidationInfo) -> int | None:
        if n is None:
            return n
        if info.data.get("policy") == "round_robin":
            raise ValueError(
                "only latest_best and random_active take n; round_robin meets every opponent "
                "up to max_matches_per_submission"
            )
        cap = info.data.get("max_matches_per_submission")
        if cap is not None and n > cap:
            raise ValueError(f"must be at most max_matches_per_submission ({cap})")
        return n

    @field_validator("seed")
    @classmethod
    def _seed_of_a_draw(cls, seed: int | None, info: ValidationInfo) -> int | None:
        policy = info.data.get("policy")
        if seed is not None and policy is not None and policy != "random_active":
            raise ValueError("only random_active draws at random")
        return seed

    @property
    def opponents_per_submission(self) -> int:
        """How many opponents a submission meets at most."""
        if self.policy == "round_robin":
            return self.max_matches_per_submission
        wanted = self.n if self.n is not None else DEFAULT_SAMPLED_OPPONENTS
        return min(wanted, self.max_matches_per_submission)

    @property
    def draw_seed(self) -> int:
        return self.seed if self.seed is not None else 0


class PointsConfig(InputSchema):
    """Points of one match (docs/redblue.md, "Points")."""

    red_per_breach: int = Field(default=1, ge=0, le=1000)
    blue_per_hold: int = Field(default=1, ge=0, le=1000)
    red_rating_divisor: float = Field(
        default=3,
        gt=0,
        le=1000,
        description="A breached llm_judge category adds round(rating / red_rating_divisor) to "
        "red's points (rating 0-10, halves rounded up).",
    )


class RedBlueLimits(InputSchema):
    max_attempts_per_day: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Attacks, and defenses, one participant may submit per UTC day (each side "
        "counted on its own); null: no limit.",
    )
    max_defense_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Longest defense (system prompt); null: the server's cap "
        "(GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )
    max_attack_chars: int | None = Field(
        default=None,
        ge=1,
        le=1_000_000,
        description="Longest attack (user message); null: the server's cap "
        "(GAUNTLET_MAX_PROMPT_CHARS), which also bounds a larger value.",
    )


class RedBlueConfig(InputSchema):
    """Everything a red_blue challenge adds to the fields every challenge has."""

    target: RedBlueTarget
    judge_suite: JudgeSuite
    self_test: SelfTest
    pairing: PairingConfig = Field(default_factory=PairingConfig)
    points: PointsConfig = Field(default_factory=PointsConfig)
    limits: RedBlueLimits = Field(default_factory=RedBlueLimits)
