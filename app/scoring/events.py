"""What the scoring domain announces to the domains above it (domain events)."""

from __future__ import annotations

from dataclasses import dataclass

from app.unit_of_work import Event


@dataclass(frozen=True)
class ScorerChanged(Event[None]):
    """A registered scorer's defaults or availability changed: the challenges scoring with it
    are to be scored again."""

    plugin_id: str
    reason: str


@dataclass(frozen=True)
class ScorerRemoving(Event[None]):
    """A scorer is about to be removed from the registry; a handler refuses (raises) while
    something still uses it."""

    plugin_id: str
