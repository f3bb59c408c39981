"""Request ids, the request counter's labels, JSON log lines, the metrics token and the label
caps: the parts of observability that need no database or worker (those are in
tests/integration/deployment/test_observability.py)."""

from __future__ import annotations

import io
import json
import logging
import re
import secrets
from collections.abc import Iterator

import httpx
import pytest
import yaml

from app.kit.config import Settings
from app.kit.observability import context, metrics
from app.kit.observability.logging import build_formatter
from app.kit.observability.service import metrics_reader_allowed
from app.main import create_app
from app.web.rendering import STATIC_DIR
from tests.conftest import ROOT

ADMIN = "gadm_" + secrets.token_urlsafe(32)
STYLESHEET = next(p.name for p in STATIC_DIR.iterdir() if p.suffix == ".css")


def sample(name: str, labels: dict[str, str]) -> float:
    value = metrics.REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


@pytest.mark.parametrize(
    "offered",
    [
        None,
        "",
        "x" * 129,
        "bad id with spaces",
        "line\nbreak",
        '{"json": "injection"}',
        "naïve",
    ],
)
def test_unacceptable_request_ids_are_replaced(offered: str | None) -> None:
    replaced = context.accepted_request_id(offered)
    assert replaced != offered
    assert len(replaced) == 32 and replaced.isalnum()


def test_a_plain_client_request_id_is_kept() -> None:
    for offered in ("abc-123", "3f2b6c1e-8a1d-4e7b-9c4f-0a1b2c3d4e5f", "trace:span/1=x+y"):
        assert context.accepted_request_id(offered) == offered


def test_ids_bound_inside_a_request_stay_with_it() -> None:
    assert context.current() == {}
    token = context.begin(request_id="r-1")
    context.bind(attempt_id="a-1")
    assert context.current() == {"request_id": "r-1", "attempt_id": "a-1"}
    context.end(token)
    assert context.current() == {}
    context.bind(attempt_id="ignored")  # outside of a request: nothing to bind to
    assert context.current() == {}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def client() -> Iterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=create_app())
    yield httpx.AsyncClient(transport=transport, base_url="http://test")


@pytest.mark.anyio
async def test_every_response_carries_a_request_id_and_is_counted_by_route_template(
    client: httpx.AsyncClient,
) -> None:
    labels = {"method": "GET", "route": "/openapi.json", "status": "200"}
    unmatched = {"method": "GET", "route": "unmatched", "status": "404"}
    static = {"method": "GET", "route": "/static/web/*", "status": "200"}
    before = [sample("gauntlet_http_requests_total", x) for x in (labels, unmatched, static)]
    async with client:
        given = await client.get("/openapi.json", headers={"X-Request-ID": "client-id-1"})
        fresh = await client.get("/no/such/path/7d1f")
        hostile = await client.get("/no/such/path", headers={"X-Request-ID": "a\tb"})
        asset = await client.get(f"/static/web/{STYLESHEET}")
    assert given.status_code == 200 and given.headers["X-Request-ID"] == "client-id-1"
    assert fresh.status_code == 404 and len(fresh.headers["X-Request-ID"]) == 32
    assert hostile.headers["X-Request-ID"] != "a\tb"
    assert asset.status_code == 200
    after = [sample("gauntlet_http_requests_total", x) for x in (labels, unmatched, static)]
    # Raw paths never become label values: every unknown path shares one series.
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 2, 1]


@pytest.mark.anyio
async def test_a_refused_body_is_counted_and_identified(client: httpx.AsyncClient) -> None:
    labels = {"method": "POST", "route": "unmatched", "status": "413"}
    before = sample("gauntlet_http_requests_total", labels)
    async with client:
        response = await client.post(
            "/v1/challenges/x/attempts",
            content=b"x" * 2_000_000,
            headers={"X-Request-ID": "big-body"},
        )
    assert response.status_code == 413
    assert response.headers["X-Request-ID"] == "big-body"
    assert sample("gauntlet_http_requests_total", labels) == before + 1


@pytest.mark.anyio
async def test_metrics_need_the_metrics_or_admin_token(client: httpx.AsyncClient) -> None:
    async with client:
        anonymous = await client.get("/metrics")
        tenantish = await client.get("/metrics", headers={"Authorization": "Bearer gk_nope"})
    assert anonymous.status_code == 401 and tenantish.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"


def test_metrics_reader_tokens() -> None:
    settings = Settings(_env_file=None, admin_token=ADMIN, metrics_token="m" * 30)  # type: ignore[call-arg]
    assert metrics_reader_allowed(f"Bearer {ADMIN}", settings)
    assert metrics_reader_allowed("Bearer " + "m" * 30, settings)
    assert metrics_reader_allowed("bearer " + "m" * 30, settings)
    for refused in (None, "", "Bearer", "Bearer ", "Basic " + "m" * 30, "Bearer " + "m" * 29):
        assert not metrics_reader_allowed(refused, settings), refused
    without = Settings(_env_file=None, admin_token=ADMIN)  # type: ignore[call-arg]
    assert not metrics_reader_allowed("Bearer " + "m" * 30, without)


def test_model_labels_are_capped_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(metrics, "_model_labels", set())
    labels = [metrics.model_label(f"hostile/model-{i}") for i in range(250)]
    assert labels[:200] == [f"hostile/model-{i}" for i in range(200)]
    assert set(labels[200:]) == {"other"}
    assert metrics.model_label("hostile/model-3") == "hostile/model-3"
    assert len(metrics.model_label("x" * 5000)) <= 200


def test_model_calls_count_tokens_and_cost() -> None:
    model = "unit/observed-model"
    metrics.model_call(model, 0.2, ok=True, input_tokens=7, output_tokens=3, cost_usd=0.5)
    metrics.model_call(model, 0.1, ok=True, input_tokens=1, cached_tokens=2, cost_usd=None)
    metrics.model_call(model, 1.5, ok=False)
    assert sample("gauntlet_model_tokens_total", {"model": model, "type": "input"}) == 8
    assert sample("gauntlet_model_tokens_total", {"model": model, "type": "output"}) == 3
    assert sample("gauntlet_model_tokens_total", {"model": model, "type": "cached"}) == 2
    assert sample("gauntlet_model_cost_usd_total", {"model": model}) == 0.5
    ok = {"model": model, "outcome": "ok"}
    assert sample("gauntlet_model_call_seconds_count", ok) == 2
    assert sample("gauntlet_model_call_seconds_sum", ok) == pytest.approx(0.3)
    failed = {"model": model, "outcome": "error", "le": "2.5"}
    assert sample("gauntlet_model_call_seconds_bucket", failed) == 1


def _render(log_format: str, **ids: str) -> str:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(build_formatter(log_format))  # type: ignore[arg-type]
    logger = logging.getLogger(f"tests.observability.{log_format}")
    logger.addHandler(handler)
    logger.propagate = False
    token = context.begin(**ids)
    try:
        logger.warning("attempt %s stored", "a-9", extra={"route": "/x", "color_message": "no"})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("failed")
    finally:
        context.end(token)
        logger.removeHandler(handler)
    return stream.getvalue()


def test_json_lines_carry_the_ids() -> None:
    lines = [
        json.loads(line) for line in _render("json", request_id="r1", attempt_id="a1").splitlines()
    ]
    first, second = lines
    assert first["event"] == "attempt a-9 stored" and first["level"] == "warning"
    assert first["request_id"] == "r1" and first["attempt_id"] == "a1"
    assert first["route"] == "/x" and "color_message" not in first
    assert first["logger"] == "tests.observability.json" and isinstance(first["pid"], int)
    assert first["timestamp"].endswith("Z")
    assert second["request_id"] == "r1" and "ValueError: boom" in second["exception"]


def test_console_lines_are_readable() -> None:
    text = _render("console", request_id="r2")
    first = text.splitlines()[0]
    assert "attempt a-9 stored" in first and "request_id=r2" in first
    with pytest.raises(json.JSONDecodeError):
        json.loads(first)


def _operator_value(match: re.Match[str]) -> str:
    default = match.group(1)
    return default if default is not None else secrets.token_urlsafe(32)


def test_compose_checks_each_worker_on_its_own_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    worker = compose["services"]["worker"]
    environment = worker["environment"]
    # The worker keeps everything the services share, plus its endpoint.
    shared = set(compose["x-gauntlet"]["environment"])
    assert shared < set(environment)
    assert shared < set(compose["services"]["api"]["environment"])
    port = environment["GAUNTLET_WORKER_HTTP_PORT"]
    assert environment["GAUNTLET_WORKER_HTTP_HOST"] == "0.0.0.0"
    # The check asks the port the worker was given (tests/integration/deployment/test_production.py
    # runs it).
    check = " ".join(worker["healthcheck"]["test"])
    assert 'os.environ["GAUNTLET_WORKER_HTTP_PORT"]}/healthz' in check
    for key, value in environment.items():
        if key.startswith("GAUNTLET_"):
            # What Compose would pass: a default given with `:-`, else (`:?`, set in .env) a
            # strong secret of the operator's.
            monkeypatch.setenv(
                key, re.sub(r"\$\{\w+(?::-([^}]*)|[^}]*)\}", _operator_value, str(value))
            )
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.worker_http_port == int(port)
    assert settings.resolved_log_format == "json"  # production logs are JSON lines
