"""How rescoring reacts to the scoring changes announced below it (domain events)."""

from __future__ import annotations

import uuid

from app.challenge.events import ScoringChanged
from app.kit.unit_of_work import UnitOfWork, handles
from app.rescore.service import request_rescore, request_rescores_for_plugin
from app.scoring.events import ScorerChanged


@handles(ScoringChanged)
def rescore_the_challenge(work: UnitOfWork, event: ScoringChanged) -> uuid.UUID:
    """Past attempts are scored again and the leaderboard rebuilt; the job is sent after the
    commit that stores the new scoring, so it scores with it."""
    return request_rescore(work, event.tenant_id, event.challenge_id, event.reason).id


@handles(ScorerChanged)
def rescore_the_scorers_challenges(work: UnitOfWork, event: ScorerChanged) -> None:
    request_rescores_for_plugin(work, event.admin, event.plugin_id, event.reason)
