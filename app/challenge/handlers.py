"""How the challenge domain reacts to what the domains below it announce (domain events)."""

from __future__ import annotations

from app.challenge.service import count_naming_plugin
from app.kit.error_codes import SCORER_IN_USE
from app.kit.errors import Conflict
from app.kit.unit_of_work import UnitOfWork, handles
from app.scoring.events import ScorerRemoving


@handles(ScorerRemoving)
def refuse_removing_a_scorer_in_use(work: UnitOfWork, event: ScorerRemoving) -> None:
    """A challenge naming the scorer would lose its scores: disable the scorer instead."""
    in_use = count_naming_plugin(work.session, event.admin, event.plugin_id)
    if in_use:
        raise Conflict(
            f"scorer '{event.plugin_id}' is used by {in_use} challenge(s); disable it instead "
            '(PATCH {"enabled": false})',
            code=SCORER_IN_USE,
        )
