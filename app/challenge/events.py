"""What the challenge domain announces to the domains above it (domain events)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from app.kit.unit_of_work import Event


@dataclass(frozen=True)
class ScoringChanged(Event[uuid.UUID]):
    """A challenge's scoring changed: its attempts are to be scored again. Handlers return the
    id of the job that does it (the rescore domain's)."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
    reason: str


@dataclass(frozen=True)
class ChallengeClosed(Event[None]):
    """A tenant admin closed a challenge at once (a close that comes by its `closes_at` is
    found by the kinds' own sweeps)."""

    tenant_id: uuid.UUID
    challenge_id: uuid.UUID
