"""A typed Python client generated from the OpenAPI document the API serves (openapi-python-client,
a dev dependency) is complete and typed: generation warns of nothing, code written against it
passes mypy with no expression of type `Any`, an integrator's journey plays a challenge against
the live API and a worker, and every operation of the document is called through it with the
bearer credential it declares, each answer parsed into its model (one generation and one type
check for the module; the session's API and worker)."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests import http
from tests.conftest import ADMIN_TOKEN, ROOT, Worker
from tests.fixtures.fake_openai import Behaviour, FakeOpenAIServer

pytestmark = pytest.mark.integration

PACKAGE = "gauntlet_client"
JOURNEY = ROOT / "tests" / "fixtures" / "typed_client_journey.py"
EVERY_OPERATION = ROOT / "tests" / "fixtures" / "typed_client_every_operation.py"
TYPED_MODULES = ("typed_client_journey", "typed_client_every_operation")
# The journey's operations: each takes and answers named models of the document.
JOURNEY_OPERATIONS = {
    ("post", "/v1/tenants"): ("TenantCreate", "TenantCreated"),
    ("post", "/v1/challenges"): ("ChallengeCreate", "ChallengeRead"),
    ("post", "/v1/challenges/{challenge_id}/attempts"): ("AttemptCreate", "AttemptRead"),
    ("get", "/v1/attempts/{attempt_id}"): (None, "AttemptRead"),
    ("get", "/v1/challenges/{challenge_id}/leaderboard"): (None, "Leaderboard"),
}


def _ref(content: dict[str, Any]) -> str | None:
    schema = content.get("application/json", {}).get("schema", {})
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if isinstance(ref, str) else None


@pytest.fixture(scope="module")
def generated(api_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The client, generated from the document the running API serves, importable, and the
    modules written against it type-checked (mypy, strict, no expression of type `Any`)."""
    tmp_path = tmp_path_factory.mktemp("generated")
    document = http.get(f"{api_url}/openapi.json", timeout=30).json()
    (tmp_path / "openapi.json").write_text(json.dumps(document))
    # No formatter run over the generated code: it is read by mypy and Python only.
    (tmp_path / "config.yaml").write_text("post_hooks: []\n")
    generation = subprocess.run(
        [
            sys.executable,
            "-m",
            "openapi_python_client",
            "generate",
            "--path",
            str(tmp_path / "openapi.json"),
            "--config",
            str(tmp_path / "config.yaml"),
            "--output-path",
            str(tmp_path / PACKAGE),
            "--meta",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = generation.stdout + generation.stderr
    assert generation.returncode == 0, said
    # Anything of the document it could not turn into types, it says so (and leaves it out);
    # otherwise it names only the folder it writes.
    told = [line for line in said.splitlines() if line and not line.startswith("Generating ")]
    assert told == [], said
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--disallow-any-expr",
            "--follow-imports=silent",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / ".mypy_cache"),
            str(JOURNEY),
            str(EVERY_OPERATION),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MYPYPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)},
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]
        for module in TYPED_MODULES:
            sys.modules.pop(f"tests.fixtures.{module}", None)


def test_the_journeys_operations_take_and_answer_named_models(api_url: str) -> None:
    document = http.get(f"{api_url}/openapi.json", timeout=30).json()
    schemas = document["components"]["schemas"]
    for (method, path), (body, answer) in JOURNEY_OPERATIONS.items():
        operation = document["paths"][path][method]
        if body is not None:
            assert _ref(operation["requestBody"]["content"]) == body, (method, path)
        success = next(code for code in operation["responses"] if code.startswith("2"))
        assert _ref(operation["responses"][success]["content"]) == answer, (method, path)
        for name in filter(None, (body, answer)):
            for field, schema in schemas[name]["properties"].items():
                # An empty schema is `Any` to every generator.
                assert schema, (name, field)


def test_a_generated_client_plays_a_challenge_fully_typed(
    api_url: str, worker: Worker, generated: Path
) -> None:
    journey = importlib.import_module("tests.fixtures.typed_client_journey").play(
        api_url, ADMIN_TOKEN
    )
    assert str(journey.finished.status) == "completed", journey.finished
    assert journey.submitted.challenge_id == journey.challenge.id
    metrics = journey.finished.metrics
    assert metrics is not None and metrics.succeeded is True
    assert isinstance(metrics.tokens_total, int) and metrics.tokens_total > 0
    rows = journey.board.items
    assert [(row.participant, row.attempt_id) for row in rows] == [("pat", journey.submitted.id)]
    assert rows[0].tokens_total == metrics.tokens_total and rows[0].rank == 1
    assert journey.board.total == 1 and journey.board.limit == 50


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    pattern: re.Pattern[str]
    id: str
    keyed: bool  # it declares the bearer scheme


def _operations(document: dict[str, Any]) -> list[Operation]:
    """Each operation of the document."""
    operations = []
    for path, item in document["paths"].items():
        pattern = re.compile(re.sub(r"\\{[^/]+?\\}", "[^/]+", re.escape(path)) + "$")
        for method, operation in item.items():
            keyed = bool(operation.get("security", document.get("security")))
            operations.append(
                Operation(method.upper(), path, pattern, operation["operationId"], keyed)
            )
    return operations


def _operation_of(method: str, path: str, operations: list[Operation]) -> Operation | None:
    """The operation a request reached: of the paths it matches, the most literal one
    (`/v1/scorers/installed` before `/v1/scorers/{plugin_id}`)."""
    matching = [op for op in operations if op.method == method and op.pattern.match(path)]
    return min(matching, key=lambda op: op.path.count("{"), default=None)


def test_every_operation_of_the_document_is_called_through_the_generated_client(
    api_url: str, worker: Worker, generated: Path
) -> None:
    document = http.get(f"{api_url}/openapi.json", timeout=30).json()
    operations = _operations(document)
    answered: dict[str, list[int]] = {}
    unkeyed: list[str] = []

    def watch(client: Any) -> None:
        def record(response: httpx.Response) -> None:
            request = response.request
            found = _operation_of(request.method, request.url.path, operations)
            assert found is not None, f"{request.method} {request.url.path} is in no operation"
            answered.setdefault(found.id, []).append(response.status_code)
            credential = request.headers.get("Authorization", "")
            if found.keyed and not credential.startswith("Bearer "):
                unkeyed.append(found.id)

        client.get_httpx_client().event_hooks = {"request": [], "response": [record]}

    with FakeOpenAIServer(default=Behaviour.ok("hello")) as provider:

        def provider_fails(failing: bool) -> None:
            provider.default = Behaviour.server_error() if failing else Behaviour.ok("hello")

        def provider_fails_after(answered: int) -> None:
            provider.enqueue(*[Behaviour.ok("hello")] * answered)
            provider_fails(True)

        importlib.import_module("tests.fixtures.typed_client_every_operation").call_every_operation(
            api_url, ADMIN_TOKEN, watch, provider.base_url, provider_fails, provider_fails_after
        )

    succeeded = {
        operation_id
        for operation_id, statuses in answered.items()
        if any(200 <= status < 300 for status in statuses)
    }
    uncalled = [f"{op.method} {op.path} ({op.id})" for op in operations if op.id not in succeeded]
    assert not uncalled, (
        "operations of the OpenAPI document that tests/fixtures/typed_client_every_operation.py "
        "does not call with success; add a call there: " + "; ".join(uncalled)
    )
    assert not unkeyed, f"keyed operations called without the bearer credential: {unkeyed}"
