"""Prometheus metrics, with the official client library.

Process model: the API runs as several uvicorn processes and a worker as a Celery parent with
prefork children, so one process's counters are not the service's. The client library's
multiprocess mode is used: every process writes its samples to memory-mapped files in one
directory per process tree (`PROMETHEUS_MULTIPROC_DIR`, made by `gauntlet serve`, `worker`
and `run` before anything imports the client), and whoever serves `/metrics` adds up the files
of its tree. The API serves its own processes' series (and, in the embedded mode, the
worker's, which shares its directory); a worker serves its processes' on its own port
(`GAUNTLET_WORKER_HTTP_PORT`), since in production it is another container. Without the
variable (tests, scripts) a process serves its own in-memory registry.

Gauges that describe the deployment rather than a process (queue depth, attempts waiting,
workers seen) are read when scraped, by the API only.

Label values that come from tenants (model ids) are capped per process, so a participant
submitting many distinct model ids cannot grow the series without bound.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import REGISTRY, Collector
from sqlalchemy import event

from app.evaluation.engine.types import CallRecord

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_ATTEMPT_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)

HTTP_REQUESTS = Counter(
    "gauntlet_http_requests",
    "HTTP requests answered, by method, route template and status code.",
    ["method", "route", "status"],
)
ATTEMPTS = Counter(
    "gauntlet_attempts",
    "Attempts reaching a status (queued on submission, running when a worker claims one, "
    "completed or error when it ends), by challenge kind.",
    ["kind", "status"],
)
ATTEMPT_LATENCY = Histogram(
    "gauntlet_attempt_latency_seconds",
    "Submission to the end of an attempt (completed or error), by kind and final status.",
    ["kind", "status"],
    buckets=_ATTEMPT_BUCKETS,
)
ATTEMPT_RUN = Histogram(
    "gauntlet_attempt_run_seconds",
    "One worker run of an attempt, from its claim to its end, by kind and final status.",
    ["kind", "status"],
    buckets=_ATTEMPT_BUCKETS,
)
MODEL_CALLS = Histogram(
    "gauntlet_model_call_seconds",
    "One model call (each try of a retried call counts), by model and outcome (ok, error).",
    ["model", "outcome"],
    buckets=_LATENCY_BUCKETS,
)
MODEL_TOKENS = Counter(
    "gauntlet_model_tokens",
    "Tokens of model calls, by model and type (input, output, cached, thinking).",
    ["model", "type"],
)
MODEL_COST = Counter(
    "gauntlet_model_cost_usd",
    "Cost of model calls in US dollars (litellm's price map), by model.",
    ["model"],
)
SCORER_CALLS = Counter(
    "gauntlet_scorer_calls",
    "Scorer plugin calls, by plugin and outcome (ok, error, timeout, unavailable).",
    ["plugin", "outcome"],
)
SCORER_SECONDS = Histogram(
    "gauntlet_scorer_call_seconds",
    "Scorer plugin call time, sandbox included, by plugin.",
    ["plugin"],
    buckets=_LATENCY_BUCKETS,
)
SWEEP_RUNS = Counter("gauntlet_sweep_runs", "Runs of the periodic sweep.")
SWEEP_RESENT = Counter(
    "gauntlet_sweep_resent_attempts",
    "Attempts the sweep sent again, by reason (queued: never started; orphaned: lease expired).",
    ["reason"],
)
REDBLUE_RECOMPUTE = Histogram(
    "gauntlet_redblue_recompute_seconds",
    "Red-blue board recomputes, by part: ratings (every recompute: new matches read, the fit "
    "refined, the board written) and intervals (a recount of every match and the bootstrap, "
    "at a bounded rate). Their sum over time is the share of a worker they take.",
    ["part"],
    buckets=_LATENCY_BUCKETS,
)
ENQUEUE_FAILURES = Counter(
    "gauntlet_enqueue_failures",
    "Attempts that could not be sent to the broker (the sweep sends them later).",
)
MAIL_TRIES = Counter(
    "gauntlet_mail_tries",
    "Tries to hand a message to the SMTP server (or the mail folder), by outcome: sent, retry "
    "(not taken, tried again later) or failed (refused for good, or out of tries).",
    ["outcome"],
)

# Admission and capacity of the API (app/kit/middleware.py). Live gauges: a process's value counts
# while it runs; the limits are the same in every process of a deployment (`livemax`).
HTTP_IN_FLIGHT = Gauge(
    "gauntlet_http_requests_in_flight",
    "HTTP requests an API process is working on (admitted, not yet answered), summed.",
    multiprocess_mode="livesum",
)
HTTP_REFUSED = Counter(
    "gauntlet_http_refused",
    "Requests refused at admission, by reason (busy: the process works on its limit of "
    "requests, answered 503; client: one client's limit of requests at once, answered 429; "
    "tenant: a tenant's share, public: the share of a tenant's anonymous readers, "
    "across the API's processes, answered 429; queue: a submission past its tenant's share "
    "of the workers' queue, answered 429 queue_share_full).",
    ["reason"],
)
CAPACITY = Gauge(
    "gauntlet_capacity",
    "Configured limits of one process, by what they limit (api_threads, "
    "api_in_flight, api_in_flight_per_client, api_in_flight_per_tenant, queued_per_tenant, "
    "database_pool).",
    ["limit"],
    multiprocess_mode="livemax",
)
DATABASE_CONNECTIONS_IN_USE = Gauge(
    "gauntlet_database_connections_in_use",
    "Pooled database connections checked out, summed over the processes of this tree.",
    multiprocess_mode="livesum",
)

_MAX_MODEL_LABELS = 200
_MAX_LABEL_CHARS = 200
_OTHER = "other"
_model_labels: set[str] = set()
_model_labels_lock = threading.Lock()


def model_label(model: str) -> str:
    """The model id as a label value, or "other" once this process has seen enough ids."""
    label = model[:_MAX_LABEL_CHARS]
    if label in _model_labels:
        return label
    with _model_labels_lock:
        if len(_model_labels) >= _MAX_MODEL_LABELS:
            return _OTHER
        _model_labels.add(label)
    return label


# -- recording (each a few microseconds; called from the API, the workers, the sandbox) ---------

_request_counters: dict[tuple[str, str, int], Any] = {}


def count_request(method: str, route: str, status: int) -> None:
    key = (method, route, status)
    counter = _request_counters.get(key)
    if counter is None:
        counter = HTTP_REQUESTS.labels(method, route, str(status))
        _request_counters[key] = counter
    counter.inc()


def attempt_reached(kind: str, status: str) -> None:
    ATTEMPTS.labels(kind, status).inc()


def attempt_ended(
    kind: str, status: str, since_submission_s: float | None, run_s: float | None
) -> None:
    ATTEMPTS.labels(kind, status).inc()
    if since_submission_s is not None:
        ATTEMPT_LATENCY.labels(kind, status).observe(max(0.0, since_submission_s))
    if run_s is not None:
        ATTEMPT_RUN.labels(kind, status).observe(max(0.0, run_s))


def model_call(
    model: str,
    seconds: float,
    *,
    ok: bool,
    input_tokens: int = 0,
    output_tokens: int = 0,
    cached_tokens: int = 0,
    thinking_tokens: int = 0,
    cost_usd: float | None = None,
) -> None:
    label = model_label(model)
    MODEL_CALLS.labels(label, "ok" if ok else "error").observe(max(0.0, seconds))
    for kind, tokens in (
        ("input", input_tokens),
        ("output", output_tokens),
        ("cached", cached_tokens),
        ("thinking", thinking_tokens),
    ):
        if tokens > 0:
            MODEL_TOKENS.labels(label, kind).inc(tokens)
    if cost_usd is not None and math.isfinite(cost_usd) and cost_usd >= 0:
        MODEL_COST.labels(label).inc(cost_usd)


def observe_model_call(model: str, seconds: float, record: CallRecord | None) -> None:
    """`LLMClient`'s call observer in the service."""
    if record is None:
        model_call(model, seconds, ok=False)
        return
    model_call(
        model,
        seconds,
        ok=True,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cached_tokens=record.cached_tokens,
        thinking_tokens=record.thinking_tokens,
        cost_usd=record.cost_usd,
    )


def scorer_call(plugin: str | None, outcome: str, seconds: float | None) -> None:
    label = (plugin or "unknown")[:_MAX_LABEL_CHARS]
    SCORER_CALLS.labels(label, outcome).inc()
    if seconds is not None:
        SCORER_SECONDS.labels(label).observe(max(0.0, seconds))


def sweep_ran(queued: int, orphaned: int) -> None:
    SWEEP_RUNS.inc()
    if queued:
        SWEEP_RESENT.labels("queued").inc(queued)
    if orphaned:
        SWEEP_RESENT.labels("orphaned").inc(orphaned)


def redblue_recomputed(part: str, seconds: float) -> None:
    REDBLUE_RECOMPUTE.labels(part).observe(max(0.0, seconds))


def mail_tried(outcome: str) -> None:
    MAIL_TRIES.labels(outcome).inc()


def enqueue_failed() -> None:
    ENQUEUE_FAILURES.inc()


def request_admitted() -> None:
    HTTP_IN_FLIGHT.inc()


def request_done() -> None:
    HTTP_IN_FLIGHT.dec()


def request_refused(reason: str) -> None:
    HTTP_REFUSED.labels(reason).inc()


def capacity(limits: dict[str, int]) -> None:
    for name, value in limits.items():
        CAPACITY.labels(name).set(value)


def _connection_checked_out(*_: object) -> None:
    DATABASE_CONNECTIONS_IN_USE.inc()


def _connection_checked_in(*_: object) -> None:
    DATABASE_CONNECTIONS_IN_USE.dec()


def instrument_pool(engine: Any) -> None:
    """Counts the engine's pooled connections in use (`gauntlet_database_connections_in_use`);
    once per engine, however often called."""

    if not event.contains(engine, "checkout", _connection_checked_out):
        event.listen(engine, "checkout", _connection_checked_out)
        event.listen(engine, "checkin", _connection_checked_in)


# -- serving ------------------------------------------------------------------------------------


class GaugesAtScrape(Collector):
    """Gauges computed when scraped, from functions returning (labels, value) pairs."""

    def __init__(
        self,
        gauges: Iterable[
            tuple[str, str, list[str], Callable[[], Iterable[tuple[list[str], float]]]]
        ],
    ) -> None:
        self.gauges = list(gauges)

    def collect(self) -> Iterable[Metric]:
        for name, documentation, label_names, read in self.gauges:
            try:
                samples = list(read())
            except Exception:
                # A gauge whose source is down is left out; /healthz says what is down.
                continue
            family = GaugeMetricFamily(name, documentation, labels=label_names)
            for labels, value in samples:
                family.add_metric(labels, value)
            yield family


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROCESS_DIR_VARIABLE) or None


def render(extra: Collector | None = None) -> bytes:
    """The exposition text: this process tree's series, and `extra` gauges read now."""
    directory = multiprocess_dir()
    if directory is None and extra is None:
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    if directory is not None:
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
    else:
        registry.register(_ProcessRegistry())
    if extra is not None:
        registry.register(extra)
    return generate_latest(registry)


class _ProcessRegistry(Collector):
    """This process's default registry, inside another registry."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()
