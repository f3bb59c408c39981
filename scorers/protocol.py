"""The types a scorer plugin imports.

Standard library only: every sandbox child imports this module before its first call, so anything
heavy here would slow each child's start and put more code within a plugin's reach.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol, TypedDict


@dataclass(frozen=True)
class AttemptMetrics:
    """What is known about a finished attempt; every field may be missing."""

    succeeded: bool | None = None
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    rating: float | None = None
    created_at: int | None = None
    metric_at: list[float] | None = None
    tasks_total: int | None = None
    tasks_solved: int | None = None
    cost_usd: float | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttemptMetrics:
        """Keys this version does not know are dropped, so the service can add metrics without
        breaking plugins written against an older list."""
        return cls(**{key: value for key, value in data.items() if key in _METRIC_NAMES})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


_METRIC_NAMES = frozenset(field.name for field in fields(AttemptMetrics))


@dataclass(frozen=True)
class ScoringContext:
    tenant_id: str
    challenge_id: str
    participant_id: str
    timeout_ms: int


class ScoringResult(TypedDict):
    score: float
    details: dict[str, Any] | None


class Scorer(Protocol):
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult: ...
