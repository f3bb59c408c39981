"""A typed Python client generated from the OpenAPI document the API serves (openapi-python-client,
a dev dependency) is complete and typed: generation warns of nothing, an integrator's journey
written against it passes mypy with no expression of type `Any`, and it plays a challenge
against the live API and a worker."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, ROOT, Worker

pytestmark = pytest.mark.integration

PACKAGE = "gauntlet_client"
JOURNEY = ROOT / "tests" / "fixtures" / "typed_client_journey.py"
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


@pytest.fixture
def generated(api_url: str, tmp_path: Path) -> Iterator[Path]:
    """The client, generated from the document the running API serves, importable."""
    document = httpx.get(f"{api_url}/openapi.json", timeout=30).json()
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
    sys.path.insert(0, str(tmp_path))
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]
        sys.modules.pop("tests.fixtures.typed_client_journey", None)


def test_the_journeys_operations_take_and_answer_named_models(api_url: str) -> None:
    document = httpx.get(f"{api_url}/openapi.json", timeout=30).json()
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
            str(generated / ".mypy_cache"),
            str(JOURNEY),
        ],
        capture_output=True,
        text=True,
        cwd=generated,
        env={"MYPYPATH": str(generated), "PATH": str(Path(sys.executable).parent)},
        timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr

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
