from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field, model_validator

from app.kit.error_words import pattern_words
from app.kit.schemas import InputSchema, OutputSchema
from app.scoring.strategies import PLUGIN_STRATEGY, STRATEGIES, Strategy, scored_by_plugin

PLUGIN_ID_PATTERN = pattern_words(
    r"^[A-Za-z0-9_.-]{1,100}$", "1 to 100 letters, digits and the characters _ . -"
)
ENTRYPOINT_PATTERN = pattern_words(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$",
    "a Python module path, a colon and a class name, such as scorers.weighted:WeightedScorer",
)


# How each strategy ranks, in the API's terms, from the registry of strategies.
_STRATEGY_DESCRIPTION = (
    "How attempts rank: "
    + "; ".join(f"`{strategy.name}`: {strategy.description}" for strategy in STRATEGIES)
    + ". Ties go to the earlier attempt. Default: the kind's ('first' for prompt challenges, "
    "'metric_at_k' for benchmark ones)."
)


class ScoringConfig(InputSchema):
    strategy: Strategy | None = Field(default=None, description=_STRATEGY_DESCRIPTION)
    plugin_id: str | None = Field(default=None, max_length=100)
    config: dict[str, Any] = Field(default_factory=dict)
    timeout_ms: int = Field(default=5000, ge=1, le=60_000)

    @model_validator(mode="after")
    def _plugin_only_where_the_strategy_needs_one(self) -> ScoringConfig:
        needs_plugin = scored_by_plugin(self.strategy)
        if needs_plugin and not self.plugin_id:
            raise ValueError(f"plugin_id is required when strategy is '{self.strategy}'")
        if not needs_plugin and self.plugin_id:
            raise ValueError(f"plugin_id is only used with strategy '{PLUGIN_STRATEGY.name}'")
        return self


class ScorerCreate(InputSchema):
    plugin_id: str = Field(pattern=PLUGIN_ID_PATTERN)
    entrypoint: str | None = Field(
        default=None,
        pattern=ENTRYPOINT_PATTERN,
        description="'module.path:ClassName'. Omit it to register an installed entry point "
        "of the group 'gauntlet.scorers' by its name.",
    )
    description: str = Field(default="", max_length=5000)
    default_config: dict[str, Any] = Field(default_factory=dict)
    config_schema: dict[str, Any] = Field(default_factory=dict)


class ScorerUpdate(InputSchema):
    description: str | None = Field(default=None, max_length=5000)
    default_config: dict[str, Any] | None = None
    config_schema: dict[str, Any] | None = None
    enabled: bool | None = None


class ScorerRead(OutputSchema):
    plugin_id: str
    entrypoint: str
    description: str
    default_config: dict[str, Any]
    config_schema: dict[str, Any]
    enabled: bool
    created_at: datetime
    updated_at: datetime


class ScorerList(OutputSchema):
    items: list[ScorerRead]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int


class InstalledScorer(OutputSchema):
    name: str
    entrypoint: str
    registered: bool


class InstalledScorerList(OutputSchema):
    items: list[InstalledScorer]
    total: int
    # The page asked for: `limit` items at most, after `offset`.
    limit: int
    offset: int
