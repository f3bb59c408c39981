"""The attempts gauge of /metrics, read when it is scraped."""

from __future__ import annotations

from collections.abc import Iterable

from app.attempt import repository
from app.kit.db import get_sessionmaker


def unfinished_attempts() -> Iterable[tuple[list[str], float]]:
    with get_sessionmaker()() as session:
        counts = repository.unfinished_by_status(session)
    for status, count in sorted(counts.items()):
        yield [str(status)], float(count)


UNFINISHED_ATTEMPTS = (
    "gauntlet_attempts_unfinished",
    "Attempts queued or running now, by status (all tenants).",
    ["status"],
    unfinished_attempts,
)
