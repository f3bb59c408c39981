"""Making a red-blue final round at the close: how long the one transaction that makes it
takes (its claim, the entries and the pairs met read, every missing match inserted, the
chunks queued), for --participants each with an active defense and an attack and no match
yet, so the round makes n * (n - 1) matches.

In a scratch PostgreSQL database, in this process, with the worker's own function
(`app.kinds.red_blue.final_round_runs.make`; no broker: the chunks it would send are counted).

Usage: .venv/bin/python bench/redblue_final_round.py [--participants 50,100,200]
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common
from bench.leaderboard_read import use_database


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--participants", default="50,100,200")
    parser.add_argument("--keep-db", action="store_true")
    return parser.parse_args()


def create(participants: int, tag: str) -> uuid.UUID:
    """A closed red_blue challenge with a final round; each participant with an active
    defense and an attack, none matched yet."""
    from datetime import timedelta

    from sqlalchemy import insert

    from app.challenge.schemas import ChallengeCreate
    from app.challenge.service import create_challenge
    from app.kinds.red_blue.models import Attack, Defense, DefenseStatus
    from app.kit.db import session_scope, utcnow
    from app.seed import DEMO_RED_BLUE
    from app.tenant.models import Participant
    from app.tenant.service import create_tenant

    now = utcnow()
    body = {**DEMO_RED_BLUE, "slug": f"final-{tag}", "final_round": True}
    with session_scope() as session:
        tenant, _row, _key = create_tenant(session, f"bench-fr-{tag}", "bench final round")
        challenge = create_challenge(session, tenant.id, ChallengeCreate.model_validate(body))
        challenge.closes_at = now - timedelta(seconds=1)
        people = [uuid.uuid4() for _ in range(participants)]
        session.execute(
            insert(Participant),
            [
                {"id": p, "tenant_id": tenant.id, "handle": f"p-{i:05d}", "created_at": now}
                for i, p in enumerate(people)
            ],
        )
        common_fields: dict[str, Any] = {
            "tenant_id": tenant.id,
            "challenge_id": challenge.id,
            "created_at": now,
            "enqueued_at": now,
            "paired_at": now,
        }
        session.execute(
            insert(Defense),
            [
                {
                    **common_fields,
                    "id": uuid.uuid4(),
                    "participant_id": p,
                    "system_prompt": "Never say: PWNED",
                    "status": DefenseStatus.ACTIVE,
                }
                for p in people
            ],
        )
        session.execute(
            insert(Attack),
            [
                {**common_fields, "id": uuid.uuid4(), "participant_id": p, "prompt": "PWNED"}
                for p in people
            ],
        )
        return challenge.id


def main() -> None:
    args = parse_args()
    common.exit_on_sigterm()
    sizes = [int(size) for size in args.participants.split(",")]
    common.print_machine_info("red-blue final round")
    with common.scratch_database(keep=args.keep_db) as database:
        use_database(database.url)
        import app.kit.unit_of_work as unit_of_work
        from app.kinds.red_blue import final_round_runs

        sent: list[int] = []

        def count(messages: list[Any]) -> int:
            sent.append(len(messages))
            return len(messages)

        unit_of_work.send_tasks = count
        for size in sizes:
            challenge_id = create(size, str(size))
            sent.clear()
            started, cpu = time.perf_counter(), time.process_time()
            outcome = final_round_runs.make(challenge_id)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            again = time.perf_counter()
            repeated = final_round_runs.make(challenge_id)
            print(
                f"{size} participants: {outcome} in {wall:.2f} s wall, {cpu:.2f} s CPU "
                f"({sum(sent)} chunks sent); asked again: {repeated!r} in "
                f"{time.perf_counter() - again:.3f} s",
                flush=True,
            )
        common.print_end_load()


if __name__ == "__main__":
    main()
