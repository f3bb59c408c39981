"""Requests generated from the OpenAPI document (which once found 500s): every operation, with
valid (positive) and invalid (negative) inputs, against the real app on PostgreSQL; no 5xx.

Requests carry the platform admin token or a tenant admin key as the operation needs, through
the security scheme the document declares for it (none for the public reads), and path
parameters are every other time real ids of this test's objects, so generation reaches the
services and not only the 404s. Every operation must be reached: some request of its own past
the credential check (an answer other than 401 or 403), else the test names it. The platform
admin's operations on a tenant get another tenant than the one fuzzed: a generated PATCH once
suspended it, and every operation after it was refused. The size is bounded (20 valid and 20
invalid cases an operation; with 10 every operation is reached) so the run takes about a
minute here. GAUNTLET_FUZZ_EXAMPLES raises it, and GAUNTLET_FUZZ_RANDOM=1 draws new inputs
each run, where the default replays the same ones, so CI is reproducible.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode

from tests.conftest import ADMIN_TOKEN, Api

pytestmark = pytest.mark.integration

EXAMPLES = int(os.environ.get("GAUNTLET_FUZZ_EXAMPLES", "20"))
RANDOM = os.environ.get("GAUNTLET_FUZZ_RANDOM") == "1"
ADMIN_PATHS = ("/v1/tenants", "/v1/scorers/installed", "/metrics")
ADMIN_SCORER_METHODS = {"POST", "PATCH", "DELETE"}


def _token_for(method: str, path: str, tenant_key: str) -> str:
    if path.startswith(ADMIN_PATHS):
        return ADMIN_TOKEN
    if path.startswith("/v1/scorers") and method in ADMIN_SCORER_METHODS:
        return ADMIN_TOKEN
    return tenant_key


@pytest.fixture
def real_ids(api: Api) -> dict[str, str]:
    """Objects of this run's own: a tenant, a public challenge with an attempt and a practice
    run, a scorer; and a second tenant, the one the platform admin's operations on a tenant
    get (a generated PATCH may suspend it, which would refuse every later request of the
    first)."""
    tenant = api.create_tenant()
    bystander = api.create_tenant()
    key = tenant["api_key"]
    challenge = api.create_challenge(key, visibility="public")
    attempt = api.submit(key, challenge["id"], "PWNED", "fuzz-player").json()
    participant = api.request("GET", "/v1/participants", key).json()["items"][0]
    plugin_id = f"fuzz.{uuid.uuid4().hex[:8]}"
    registered = api.request(
        "POST",
        "/v1/scorers",
        ADMIN_TOKEN,
        json={"plugin_id": plugin_id, "entrypoint": "scorers.testing:EchoScorer"},
    )
    assert registered.status_code == 201, registered.text
    rescore = api.request("POST", f"/v1/challenges/{challenge['id']}/rescore", key).json()
    key_row = api.request("GET", "/v1/api-keys", key).json()["items"][0]
    practice = api.request(
        "POST",
        f"/v1/challenges/{challenge['id']}/practice-runs",
        key,
        json={"participant": "fuzz-player", "prompt": "PWNED"},
    ).json()
    return {
        "key": key,
        "tenant_id": bystander["id"],
        "tenant_slug": tenant["slug"],
        "challenge_id": challenge["id"],
        "challenge_slug": challenge["slug"],
        "attempt_id": attempt["id"],
        "participant_id": participant["id"],
        "plugin_id": plugin_id,
        "job_id": rescore["id"],
        "key_id": key_row["id"],
        "run_id": practice["id"],
    }


def _credential(document: dict[str, Any], method: str, path: str, token: str) -> dict[str, str]:
    """The headers that carry `token` by the security scheme the operation declares."""
    operation = document["paths"][path][method.lower()]
    headers: dict[str, str] = {}
    for requirement in operation.get("security", document.get("security", [])):
        for name in requirement:
            scheme = document["components"]["securitySchemes"][name]
            assert (scheme["type"], scheme["scheme"]) == ("http", "bearer"), scheme
            headers["Authorization"] = f"Bearer {token}"
    return headers


def test_generated_requests_never_answer_5xx(
    api: Api, api_url: str, real_ids: dict[str, str]
) -> None:
    schema = schemathesis.openapi.from_url(f"{api_url}/openapi.json")
    document = requests.get(f"{api_url}/openapi.json", timeout=30).json()
    session = requests.Session()
    failures: list[str] = []
    reached: set[tuple[str, str]] = set()
    sent = 0

    def check(case: Any, counter: list[int]) -> None:
        nonlocal sent
        method, path = case.operation.method.upper(), case.operation.path
        counter[0] += 1
        # Every other case gets this run's real ids; never for DELETE, which would remove them.
        if counter[0] % 2 == 0 and method != "DELETE" and case.path_parameters:
            for name in case.path_parameters:
                if name in real_ids:
                    case.path_parameters[name] = real_ids[name]
        headers = {}
        if counter[0] % 7 != 0:  # and now and then no credential at all
            token = _token_for(method, path, real_ids["key"])
            headers = _credential(document, method, path, token)
        try:
            response = case.call(base_url=api_url, session=session, headers=headers, timeout=60)
        except (requests.exceptions.InvalidHeader, UnicodeError):
            return  # the HTTP client would not send it (a header it cannot encode)
        sent += 1
        if response.status_code not in (401, 403):
            reached.add((method, path))
        if response.status_code >= 500:
            failures.append(
                f"{response.status_code} {method} {path}: {response.text[:300]}\n"
                f"    {case.as_curl_command(headers=headers)}"
            )

    def fuzz(strategy: Any) -> Callable[[], None]:
        counter = [0]

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=not RANDOM,
            database=None,
            phases=[Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=strategy)
        def run(case: Any) -> None:
            check(case, counter)

        return run

    operations: list[tuple[str, str]] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        operations.append((operation.method.upper(), operation.path))
        fuzz(operation.as_strategy(generation_mode=GenerationMode.POSITIVE))()
        # An operation without parameters has no invalid input to generate.
        with contextlib.suppress(Unsatisfiable):
            fuzz(operation.as_strategy(generation_mode=GenerationMode.NEGATIVE))()
    # The fuzzed tenant was never suspended, nor its key revoked, by a generated request.
    still = requests.get(
        f"{api_url}/v1/tenant/quotas", headers={"Authorization": f"Bearer {real_ids['key']}"}
    )
    assert still.status_code == 200, still.text
    assert len(operations) == sum(len(item) for item in document["paths"].values())
    assert sent >= len(operations) * EXAMPLES, sent
    assert not failures, "\n".join(failures)
    unreached = [f"{method} {path}" for method, path in operations if (method, path) not in reached]
    assert not unreached, f"operations no request got past the credential check: {unreached}"
