"""Celery entry points of the red_blue kind (included by every worker because the kind is
registered). Tasks take ids and are safe to run twice; a database hiccup is retried as an
attempt's run is."""

from __future__ import annotations

import uuid
from typing import Any

from celery import shared_task
from sqlalchemy.exc import OperationalError

from app.kinds.api import get_settings
from app.kinds.red_blue import final_round_runs, worker
from app.kinds.red_blue.dispatch import (
    FINAL_ROUND_TASK,
    INTERVALS_ONLY,
    PAIR_ATTACK_TASK,
    RECOMPUTE_TASK,
    RUN_MATCH_TASK,
    RUN_MATCHES_TASK,
    SELF_TEST_TASK,
    SWEEP_TASK,
)

_settings = get_settings()
_SOFT_LIMIT = _settings.attempt_time_limit_seconds
_HARD_LIMIT = _settings.attempt_time_limit_seconds + 30
# Every task but the sweep: acknowledged once done, given back when its worker dies, and
# retried when the database hiccups.
_RETRIED: dict[str, Any] = {
    "acks_late": True,
    "reject_on_worker_lost": True,
    "autoretry_for": (OperationalError,),
    "retry_backoff": True,
    "retry_jitter": True,
    "max_retries": 5,
}
# Those that call the target model are bounded as an attempt's run is.
_MODEL_CALLS: dict[str, Any] = {"soft_time_limit": _SOFT_LIMIT, "time_limit": _HARD_LIMIT}


@shared_task(name=SELF_TEST_TASK, **_RETRIED, **_MODEL_CALLS)
def self_test(defense_id: str) -> str:
    return worker.run_self_test(uuid.UUID(defense_id))


@shared_task(name=PAIR_ATTACK_TASK, time_limit=300, **_RETRIED)
def pair_attack(attack_id: str) -> str:
    return worker.pair_attack(uuid.UUID(attack_id))


@shared_task(name=RUN_MATCH_TASK, **_RETRIED, **_MODEL_CALLS)
def run_match(match_id: str) -> str:
    return worker.run_match(uuid.UUID(match_id))


@shared_task(name=RUN_MATCHES_TASK, **_RETRIED, **_MODEL_CALLS)
def run_matches(*match_ids: str) -> dict[str, int]:
    """A chunk of matches (of one pairing, or re-sent by the sweep): how many ended how."""
    outcomes = worker.run_matches([uuid.UUID(match_id) for match_id in match_ids])
    counts: dict[str, int] = {}
    for outcome in outcomes.values():
        counts[outcome] = counts.get(outcome, 0) + 1
    return counts


@shared_task(name=RECOMPUTE_TASK, time_limit=600, **_RETRIED)
def recompute(challenge_id: str, part: str = "") -> str:
    # numpy and scipy (~0.6 s) load with the first recompute, not with every worker.
    from app.kinds.red_blue import board_recompute

    return board_recompute.recompute(uuid.UUID(challenge_id), intervals_only=part == INTERVALS_ONLY)


# One transaction inserts the whole round: 39,800 matches took 70 s on a loaded 2-core machine
# (bench/README.md); a round cut short is rolled back and made again by the next sweep.
@shared_task(name=FINAL_ROUND_TASK, time_limit=1800, **_RETRIED)
def final_round(challenge_id: str) -> str:
    return final_round_runs.make(uuid.UUID(challenge_id))


@shared_task(name=SWEEP_TASK, acks_late=True, time_limit=300)
def sweep() -> dict[str, int]:
    return worker.sweep()
