"""/metrics for the API: who may read it and the deployment-wide gauges read at scrape time."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterable, Sequence
from datetime import timedelta

from app.kit.config import Settings
from app.kit.db import get_sessionmaker, utcnow
from app.kit.observability import metrics, repository
from app.kit.observability.health import worker_window_seconds


def metrics_reader_allowed(authorization: str | None, settings: Settings) -> bool:
    """Whether `Authorization: Bearer <token>` carries the metrics token or the admin token.

    /metrics counts every tenant's attempts and names the models they use: not for tenants.
    """
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    accepted = [settings.resolved_admin_token]
    if settings.metrics_token:
        accepted.append(settings.metrics_token)
    # Every candidate is compared, so the time taken does not tell which one came close.
    matches = [hmac.compare_digest(token.encode(), candidate.encode()) for candidate in accepted]
    return any(matches)


def workers_seen(settings: Settings) -> Iterable[tuple[list[str], float]]:
    since = utcnow() - timedelta(seconds=worker_window_seconds(settings))
    with get_sessionmaker()() as session:
        seen = repository.workers_seen_since(session, settings.queue, since)
    yield [settings.queue], float(len(seen))


# A deployment-wide gauge read when /metrics is scraped: (name, help, labels, read). Domains
# above this package provide theirs (the app passes them in; see app/main.py).
ScrapeGauge = tuple[str, str, list[str], Callable[[], Iterable[tuple[list[str], float]]]]


def api_metrics(settings: Settings, gauges_of_domains: Sequence[ScrapeGauge] = ()) -> bytes:
    gauges = metrics.GaugesAtScrape(
        [
            *gauges_of_domains,
            (
                "gauntlet_workers_seen",
                "Worker processes (Celery parents) that sent a heartbeat recently.",
                ["queue"],
                lambda: workers_seen(settings),
            ),
        ]
    )
    return metrics.render(gauges)
