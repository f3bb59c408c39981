"""A crowd at one API process (`gauntlet serve`, PostgreSQL): 200 requests at once, anonymous or
keyed, get 200, 429 or 503 (with Retry-After) within seconds, never a 500 or a hang, and a
request from another client (of another tenant, past the crowd's tenant's share) made
meanwhile is served.

The crowd is sent over raw sockets from one event loop, so the test's own client costs little
CPU beside the server's; the other client is a plain blocking socket on another loopback
address (a different client to the server). The deadlines are the client's timeouts: they stop
a test that would otherwise wait, as a hung server would make it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import pytest

from tests import http
from tests.conftest import ROOT, Api, Stack
from tests.integration.red_blue.test_redblue import red_blue_body
from tests.services import free_port

pytestmark = pytest.mark.integration

CROWD = 200
CROWD_DEADLINE_S = 5.0
OTHER_CLIENT_DEADLINE_S = 1.0
OTHER_CLIENT_ADDRESS = "127.0.0.2"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    # When its request was all sent and when its answer was all read (time.monotonic()).
    sent_at: float = 0.0
    answered_at: float = 0.0


@dataclass
class Server:
    url: str
    port: int
    process: subprocess.Popen[bytes]
    api: Api = field(init=False)

    def __post_init__(self) -> None:
        self.api = Api(self.url)


def _with_default_limits(env: dict[str, str]) -> dict[str, str]:
    """The suite's environment with the admission limits at their production defaults."""
    return {name: value for name, value in env.items() if not name.startswith("GAUNTLET_API_MAX_")}


@contextmanager
def _serving(stack: Stack, **settings: str) -> Iterator[Server]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env={**_with_default_limits(stack.env()), "GAUNTLET_LOG_LEVEL": "warning", **settings},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            if http.get(f"{url}/healthz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("the API server did not start")
        time.sleep(0.1)
    started = Server(url, port, process)
    try:
        yield started
    finally:
        started.api.http.close()
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


@pytest.fixture(scope="module")
def server(stack: Stack) -> Iterator[Server]:
    """One API process started as production starts it, its limits at their defaults."""
    with _serving(stack) as started:
        yield started


@pytest.fixture(scope="module")
def unlimited_server(stack: Stack) -> Iterator[Server]:
    """One API process that admits every request: only the thread pool and the connection pool
    bound what it does at once."""
    with _serving(
        stack,
        GAUNTLET_API_MAX_IN_FLIGHT="100000",
        GAUNTLET_API_MAX_IN_FLIGHT_PER_CLIENT="100000",
        GAUNTLET_API_MAX_IN_FLIGHT_PER_TENANT="100000",
    ) as started:
        yield started


def _client_address(number: int) -> str:
    """Loopback addresses 127.0.1.1, 127.0.1.2, ...: each a different client to the server."""
    return f"127.0.{1 + number // 250}.{1 + number % 250}"


async def _get(port: int, target: str, headers: dict[str, str], source: str) -> Answer:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
    try:
        lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        sent_at = time.monotonic()
        raw = await reader.read()
        answered_at = time.monotonic()
    finally:
        writer.close()
    answer = _parse(raw)
    answer.sent_at, answer.answered_at = sent_at, answered_at
    return answer


def _parse(raw: bytes) -> Answer:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Answer(int(status_line.split()[1]), headers, body)


def _blocking_get(port: int, target: str, headers: dict[str, str], timeout: float) -> Answer:
    """One request from another client address, within `timeout` or an exception."""
    with socket.create_connection(
        ("127.0.0.1", port), timeout=timeout, source_address=(OTHER_CLIENT_ADDRESS, 0)
    ) as connection:
        deadline = time.monotonic() + timeout
        lines = [f"GET {target} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        chunks = []
        while True:
            connection.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = connection.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return _parse(b"".join(chunks))


def _crowd_with_another_client(
    port: int,
    targets: list[str],
    headers: dict[str, str],
    other: str,
    *,
    one_client: bool = False,
    other_deadline: float = OTHER_CLIENT_DEADLINE_S,
    crowd_headers: list[dict[str, str]] | None = None,
    other_headers: dict[str, str] | None = None,
) -> tuple[list[Answer], Answer]:
    """Sends every target at once, each from its own client address (or all from one), with
    `headers` (or each with its own `crowd_headers`); once the crowd is in flight, another
    client sends `other` (with `other_headers`, else `headers`). Answers the crowd's answers
    and the other client's."""
    other_answer: list[Answer] = []
    other_error: list[BaseException] = []
    crowd_sent = threading.Event()

    def other_client() -> None:
        crowd_sent.wait(30)
        time.sleep(0.05)  # the crowd's requests are on the server by now
        try:
            other_answer.append(
                _blocking_get(
                    port, other, headers if other_headers is None else other_headers, other_deadline
                )
            )
        except BaseException as error:  # reported below, with what the crowd got
            other_error.append(error)

    async def crowd() -> list[Answer]:
        requests = [
            asyncio.create_task(
                _get(
                    port,
                    target,
                    headers if crowd_headers is None else crowd_headers[number],
                    _client_address(0 if one_client else number),
                )
            )
            for number, target in enumerate(targets)
        ]
        await asyncio.sleep(0)
        crowd_sent.set()
        async with asyncio.timeout(CROWD_DEADLINE_S):
            return await asyncio.gather(*requests)

    thread = threading.Thread(target=other_client)
    thread.start()
    try:
        answers = asyncio.run(crowd())
    finally:
        crowd_sent.set()
        thread.join()
    if other_error:
        raise AssertionError(
            f"the other client was not served within {other_deadline} s"
        ) from other_error[0]
    return answers, other_answer[0]


def _check_crowd(answers: list[Answer]) -> dict[int, int]:
    statuses: dict[int, int] = {}
    for answer in answers:
        statuses[answer.status] = statuses.get(answer.status, 0) + 1
        assert answer.status in (200, 429, 503), (answer.status, answer.body[:300])
        if answer.status != 200:
            assert int(answer.headers["retry-after"]) >= 1
            assert json.loads(answer.body)["error"]["code"] in ("rate_limited", "unavailable")
    assert statuses.get(200, 0) > 0, statuses
    return statuses


def _served_past_the_limit(answers: list[Answer], limit: int) -> None:
    """No more of the crowd were served than the process admits at once, but for those
    answered before the crowd's last request was sent: each freed its place for another (the
    crowd's connections open over a few milliseconds, and a quick read ends within them)."""
    statuses = _check_crowd(answers)
    last_sent = max(answer.sent_at for answer in answers)
    freed = sum(answer.answered_at < last_sent for answer in answers if answer.status == 200)
    assert statuses.get(200, 0) <= limit + freed, (statuses, freed)
    assert statuses.get(503, 0) > 0, statuses


def _public_challenges(server: Server) -> tuple[str, str, str]:
    tenant = server.api.create_tenant()
    key = tenant["api_key"]
    prompt = server.api.create_challenge(key, visibility="public")
    red_blue = server.api.request(
        "POST", "/v1/challenges", key, json=red_blue_body(slug=f"rb-{uuid.uuid4().hex[:8]}")
    )
    assert red_blue.status_code == 201, red_blue.text
    return tenant["slug"], prompt["slug"], red_blue.json()["slug"]


def _distinct_public_reads(server: Server) -> tuple[list[str], str, str]:
    """CROWD distinct public URLs (none served from the public cache: each reads the
    database), and one board and one match list URL."""
    tenant_slug, prompt_slug, red_blue_slug = _public_challenges(server)
    board = f"/v1/public/{tenant_slug}/challenges/{prompt_slug}/leaderboard"
    matches = f"/v1/public/{tenant_slug}/challenges/{red_blue_slug}/matches"
    targets = [f"{board}?offset={i}" if i % 2 else f"{matches}?offset={i}" for i in range(CROWD)]
    return targets, board, matches


def test_two_hundred_anonymous_reads_at_once_are_answered_and_another_client_is_served(
    server: Server,
) -> None:
    """One client's 200 reads of a tenant's public boards at once: its first ones are served,
    the rest get 429 at once, and another client reading another tenant's public board is
    served meanwhile."""
    targets, board, matches = _distinct_public_reads(server)
    _, elsewhere, _ = _distinct_public_reads(server)
    answers, other = _crowd_with_another_client(
        server.port, targets, {}, elsewhere, one_client=True
    )
    statuses = _check_crowd(answers)
    assert set(statuses) == {200, 429}, statuses
    assert other.status == 200, other.body[:300]
    assert other.headers["cache-control"] == "public, max-age=1"
    # The same URL for the whole crowd: one read, every answer from the copy, no place taken.
    answers, other = _crowd_with_another_client(
        server.port, [board] * CROWD, {}, matches, one_client=True
    )
    assert other.status == 200
    assert _check_crowd(answers) == {200: CROWD}


def test_two_hundred_keyed_reads_at_once_are_answered_and_another_client_is_served(
    server: Server,
) -> None:
    tenant = server.api.create_tenant()
    key = tenant["api_key"]
    challenge = server.api.create_challenge(key)
    headers = {"Authorization": f"Bearer {key}"}
    targets = [
        f"/v1/challenges/{challenge['id']}",
        "/v1/challenges?limit=5",
        f"/v1/attempts?challenge_id={challenge['id']}",
        f"/v1/challenges/{challenge['id']}/leaderboard",
    ]
    crowd = [targets[i % len(targets)] for i in range(CROWD)]
    other_key = server.api.create_tenant()["api_key"]
    other_challenge = server.api.create_challenge(other_key)
    answers, other = _crowd_with_another_client(
        server.port,
        crowd,
        headers,
        f"/v1/challenges/{other_challenge['id']}",
        one_client=True,
        other_headers={"Authorization": f"Bearer {other_key}"},
    )
    statuses = _check_crowd(answers)
    assert set(statuses) == {200, 429}, statuses
    assert other.status == 200, other.body[:300]
    assert json.loads(other.body)["id"] == other_challenge["id"]
    # Private answers are never kept by a cache on the way.
    served = next(answer for answer in answers if answer.status == 200)
    assert served.headers["cache-control"] == "no-store"
    assert other.headers["cache-control"] == "no-store"


def test_a_crowd_of_two_hundred_clients_past_the_limit_gets_503_at_once(server: Server) -> None:
    """200 clients at once, of tenants that each stay within their share, past what one
    process admits: the first are served, the others get 503 with Retry-After, and nobody
    waits past the deadlines (a latecomer gets its answer, served or refused, within a
    second)."""
    # Each of the crowd's tenants sends 7 requests or fewer, within its share of 8.
    boards, keyed = [], []
    for _ in range(-(-CROWD // 7)):
        tenant = server.api.create_tenant()
        key = tenant["api_key"]
        challenge = server.api.create_challenge(key, visibility="public")
        boards += [f"/v1/public/{tenant['slug']}/challenges/{challenge['slug']}/leaderboard"] * 7
        keyed += [(key, f"/v1/challenges/{challenge['id']}")] * 7
    targets = [f"{board}?offset={i}" for i, board in enumerate(boards[:CROWD])]
    answers, other = _crowd_with_another_client(server.port, targets, {}, targets[0])
    _served_past_the_limit(answers, 64)
    assert other.status in (200, 503)
    answers, other = _crowd_with_another_client(
        server.port,
        [target for _, target in keyed[:CROWD]],
        {},
        keyed[0][1],
        crowd_headers=[{"Authorization": f"Bearer {key}"} for key, _ in keyed[:CROWD]],
        other_headers={"Authorization": f"Bearer {keyed[0][0]}"},
    )
    _served_past_the_limit(answers, 64)
    assert other.status in (200, 503)


def test_a_crowd_that_is_all_admitted_is_served_without_waiting_on_connections(
    unlimited_server: Server,
) -> None:
    """Connections are held only while a thread works on a request: 200 requests at once, all
    admitted, far more than the pool's connections, are all served."""
    targets, board, _ = _distinct_public_reads(unlimited_server)
    answers, other = _crowd_with_another_client(
        unlimited_server.port, targets, {}, board, other_deadline=CROWD_DEADLINE_S
    )
    assert _check_crowd(answers) == {200: CROWD}
    assert other.status == 200
    tenant = unlimited_server.api.create_tenant()
    key = tenant["api_key"]
    challenge = unlimited_server.api.create_challenge(key)
    keyed = [f"/v1/challenges/{challenge['id']}"] * CROWD
    answers, other = _crowd_with_another_client(
        unlimited_server.port,
        keyed,
        {"Authorization": f"Bearer {key}"},
        keyed[0],
        other_deadline=CROWD_DEADLINE_S,
    )
    assert _check_crowd(answers) == {200: CROWD}
    assert other.status == 200


def test_after_a_crowd_the_process_serves_as_before(server: Server) -> None:
    """Nothing leaks from a crowd: no connection, no place in the limits; the next requests
    one by one are all 200, and the metrics show the refusals."""
    targets, board, _ = _distinct_public_reads(server)
    _crowd_with_another_client(server.port, targets, {}, board, one_client=True)
    for offset in range(40):
        response = server.api.http.get(board, params={"offset": offset})
        assert response.status_code == 200, response.text
    metrics = server.api.http.get(
        "/metrics", headers={"Authorization": f"Bearer {server.api.admin_token}"}
    )
    assert metrics.status_code == 200
    values = {
        line.split()[0]: float(line.split()[1])
        for line in metrics.text.splitlines()
        if line and not line.startswith("#")
    }
    assert values["gauntlet_http_requests_in_flight"] == 0  # /metrics itself is not counted
    # One client's crowd of one tenant's public reads: refused by the client's limit or (the
    # smaller) the share of the tenant's anonymous readers.
    refused = [
        f'gauntlet_http_refused_total{{reason="{reason}"}}' for reason in ("client", "public")
    ]
    assert sum(values.get(name, 0) for name in refused) > 0, values
    assert values['gauntlet_capacity{limit="api_in_flight"}'] == 64
    assert values['gauntlet_capacity{limit="api_in_flight_per_tenant"}'] == 8
    assert values['gauntlet_capacity{limit="queued_per_tenant"}'] == 500
