"""What the scoring domain announces to the domains above it (domain events)."""

from __future__ import annotations

from dataclasses import dataclass

from app.auth.subjects import PlatformAdmin
from app.kit.unit_of_work import Event


@dataclass(frozen=True)
class ScorerChanged(Event[None]):
    """A registered scorer's defaults or availability changed (by the platform admin,
    `admin`): the challenges scoring with it, of every tenant, are to be scored again."""

    admin: PlatformAdmin
    plugin_id: str
    reason: str


@dataclass(frozen=True)
class ScorerRemoving(Event[None]):
    """A scorer is about to be removed from the registry (by the platform admin, `admin`); a
    handler refuses (raises) while something, of any tenant, still uses it."""

    admin: PlatformAdmin
    plugin_id: str
