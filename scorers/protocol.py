"""The types a scorer plugin imports.

`AttemptMetrics` and `ScoringContext` are read either way: by attribute (`metrics.succeeded`),
or as read-only mappings, the way the original scorer protocol's TypedDicts are
(`metrics.get('succeeded', False)`, `ctx['tenant_id']`, `'rating' in metrics`, `dict(metrics)`).
As a mapping, a value Gauntlet does not have (None) is an absent key, so `.get(name, default)`
gives the plugin's default; keys the original protocol had and Gauntlet lacks (`app_id`,
`end_user_id`, ...) are absent too, exactly as a dict without them: `.get` gives None (or the
default), `in` is False, `[...]` raises KeyError. Attributes are the declared fields only: a known
field that is missing reads as None, an unknown name raises AttributeError as for any object
(TypedDicts have no attribute access, so no original plugin relies on anything else, and a typo
fails loudly instead of reading as missing).

Both are frozen: no attribute or item can be set or deleted, and `metric_at` is a tuple.

Standard library only: every sandbox child imports this module before its first call, so anything
heavy here would slow each child's start and put more code within a plugin's reach.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Protocol, TypedDict, TypeVar


class _ReadOnlyRecord(Mapping[str, Any]):
    """The mapping face of a frozen dataclass: its fields whose value is not None."""

    __slots__ = ()
    # Each field name mapped to itself: a lookup returns the canonical name, so a key that only
    # hashes and compares equal to a field name (a hostile str subclass) still reads that field
    # and nothing else; any other key, whatever its type, is simply absent.
    _field_names: ClassVar[dict[str, str]]

    def __getitem__(self, key: str) -> Any:
        # An unhashable key raises TypeError here, as it does for a dict.
        name = self._field_names.get(key)
        if name is not None:
            value = getattr(self, name)
            if value is not None:
                return value
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (name for name in self._field_names if getattr(self, name) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def copy(self) -> dict[str, Any]:
        """A plain, mutable dict of the present keys, as `dict.copy()` gives a TypedDict user."""
        return dict(self)

    def to_dict(self) -> dict[str, Any]:
        """Every field, None included, as plain JSON-like data."""
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name in self._field_names
            for value in (getattr(self, name),)
        }


_Record = TypeVar("_Record", bound=type[_ReadOnlyRecord])


def _with_field_names(cls: _Record) -> _Record:
    cls._field_names = {field.name: field.name for field in fields(cls)}  # type: ignore[arg-type]
    return cls


# eq=False keeps Mapping's equality (equal to any mapping with the same present items, a plain
# dict included), which also makes them unhashable, as dicts are.
@_with_field_names
@dataclass(frozen=True, eq=False)
class AttemptMetrics(_ReadOnlyRecord):
    """What is known about a finished attempt; every field may be missing."""

    succeeded: bool | None = None
    tokens_total: int | None = None
    elapsed_ms: int | None = None
    rating: float | None = None
    created_at: int | None = None
    metric_at: Sequence[float] | None = None
    tasks_total: int | None = None
    tasks_solved: int | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.metric_at, list):
            object.__setattr__(self, "metric_at", tuple(self.metric_at))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AttemptMetrics:
        """From any mapping (a plain dict, or AttemptMetrics itself). Keys this version does
        not know are dropped, so the service can add metrics without breaking plugins written
        against an older list."""
        return cls(**{name: data[name] for name in cls._field_names if name in data})


@_with_field_names
@dataclass(frozen=True, eq=False)
class ScoringContext(_ReadOnlyRecord):
    tenant_id: str
    challenge_id: str
    participant_id: str
    timeout_ms: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScoringContext:
        """From any mapping with the four keys; other keys are dropped."""
        return cls(**{name: data[name] for name in cls._field_names if name in data})


class ScoringResult(TypedDict):
    score: float
    details: dict[str, Any] | None


class Scorer(Protocol):
    def score(
        self, metrics: AttemptMetrics, config: dict[str, Any], ctx: ScoringContext
    ) -> ScoringResult: ...
