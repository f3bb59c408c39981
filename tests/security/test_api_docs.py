"""The API's documentation: every operation in the OpenAPI document lists its errors with the one
error schema (it once declared none), and the documentation pages load only the app's own files
(/docs once loaded Swagger UI from a CDN)."""

from __future__ import annotations

import re
import shutil
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest

from tests.conftest import ADMIN_TOKEN, Api
from tests.e2e.conftest import CHROMIUM_ARGS

pytestmark = pytest.mark.integration

_URL_ATTRIBUTE = re.compile(r"""(?:src|href|url|spec-url)\s*[=:]\s*["']([^"']+)["']""")
ERROR_REF = "#/components/schemas/ErrorResponse"


def _document(api: Api) -> dict[str, Any]:
    response = api.request("GET", "/openapi.json")
    assert response.status_code == 200
    return dict(response.json())


def test_docs_pages_reference_only_the_apps_own_files(api: Api) -> None:
    for page, scripts in (("/docs", ["swagger-ui-bundle.js", "swagger-ui.css"]),):
        response = api.request("GET", page)
        assert response.status_code == 200, page
        html = response.text
        urls = _URL_ATTRIBUTE.findall(html)
        assert urls, page
        for url in urls:
            assert urlsplit(url).netloc == "" and url.startswith("/"), (page, url)
        assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html, re.IGNORECASE), page
        for name in scripts:
            asset = api.request("GET", f"/static/api-docs/{name}")
            assert asset.status_code == 200 and len(asset.content) > 10_000, name
            kind = "css" if name.endswith(".css") else "javascript"
            assert kind in asset.headers["content-type"], name


def test_docs_render_in_a_browser_without_leaving_the_app(api_url: str) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Chromium is needed (scripts/ensure-chromium.sh, run by `make test`)"
    from playwright.sync_api import Route, sync_playwright

    origin = urlsplit(api_url).netloc
    elsewhere: list[str] = []

    def only_the_app(route: Route) -> None:
        if urlsplit(route.request.url).netloc == origin or route.request.url.startswith("data:"):
            route.continue_()
        else:
            elsewhere.append(route.request.url)
            route.abort()

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page(base_url=api_url)
            page.set_default_timeout(30_000)
            page.route("**/*", only_the_app)
            page.goto("/docs")
            page.wait_for_selector("#operations-challenges-post_challenge")
            assert page.locator(".opblock").count() >= 30
            # The bearer credential is declared: Swagger UI offers to enter it.
            page.wait_for_selector("button.authorize")
            # An operation unfolds with its error responses.
            page.click("#operations-challenges-post_challenge .opblock-summary")
            page.wait_for_selector("text=ErrorResponse")
        finally:
            browser.close()
    assert elsewhere == []


def test_every_operation_lists_its_errors_with_the_error_schema(api: Api) -> None:
    document = _document(api)
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    # Reads of public challenges (every kind's, red_blue's standings and matches too) take
    # no credential.
    public = {"/healthz"} | {path for path in document["paths"] if path.startswith("/v1/public/")}
    # Any key reads the scorer registry; /metrics takes its own token (or the admin token), so
    # a wrong one is a 401 and no role can be missing.
    any_credential = {
        ("get", "/v1/scorers"),
        ("get", "/v1/scorers/{plugin_id}"),
        ("get", "/metrics"),
    }
    operations = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            operations += 1
            responses = operation["responses"]
            expected = {"422", "503"}
            if path not in public:
                expected.add("401")
                if (method, path) not in any_credential:
                    expected.add("403")
            elif path != "/healthz":
                # A suspended or pending tenant's public reads answer 403.
                expected.add("403")
            if "{" in path:
                expected.add("404")
            if "requestBody" in operation:
                expected.add("413")
            missing = expected - set(responses)
            assert not missing, (method, path, missing)
            for status, response in responses.items():
                if int(status) >= 400:
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": ERROR_REF}, (method, path, status)
                    assert response["description"], (method, path, status)
    assert operations >= 30
    submit = document["paths"]["/v1/challenges/{challenge_id}/attempts"]["post"]["responses"]
    assert {"409", "429"} <= set(submit) and "Retry-After" in submit["429"]["headers"]
    assert "409" in document["paths"]["/v1/challenges"]["post"]["responses"]
    assert "409" in document["paths"]["/v1/tenants"]["post"]["responses"]


def test_the_error_schema_describes_real_errors(api: Api, tenant: dict[str, Any]) -> None:
    document = _document(api)
    schema = {
        "$ref": ERROR_REF,
        "components": {"schemas": document["components"]["schemas"]},
    }
    key = tenant["api_key"]
    errors = [
        api.request("GET", "/v1/challenges"),  # 401
        api.request("GET", "/v1/tenants", key),  # 403
        api.request("GET", f"/v1/attempts/{'0' * 8}-0000-0000-0000-{'0' * 12}", key),  # 404
        api.request("GET", "/v1/challenges?offset=-1", key),  # 422
        api.request("POST", "/v1/tenants", ADMIN_TOKEN, json={"slug": "a\x00", "name": "x"}),
    ]
    assert [response.status_code for response in errors] == [401, 403, 404, 422, 422]
    for response in errors:
        jsonschema.validate(response.json(), schema)


def test_keyed_operations_declare_the_bearer_credential_and_readable_ids(api: Api) -> None:
    """`/docs` has an Authorize button: the document declares the bearer scheme, and every
    operation that takes a key says so (public reads do not); operation ids are the
    endpoints' names, one each."""
    document = _document(api)
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    ids = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            ids.append(operation["operationId"])
            # /metrics takes a bearer token too (the metrics token or the admin token).
            public = path == "/healthz" or path.startswith("/v1/public/")
            if public:
                assert "security" not in operation, (method, path)
            else:
                assert operation["security"] == [{"bearerAuth": []}], (method, path)
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", operation_id) for operation_id in ids), ids
    submit = document["paths"]["/v1/challenges/{challenge_id}/attempts"]["post"]
    assert submit["operationId"] == "post_attempt"


def _success_schema(document: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    success = next(code for code in operation["responses"] if code.startswith("2"))
    content = operation["responses"][success].get("content", {})
    schema = content.get("application/json", {}).get("schema", {})
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return dict(document["components"]["schemas"][ref.rsplit("/", 1)[-1]])
    return dict(schema)


def test_every_list_is_a_page_with_its_total(api: Api) -> None:
    """Every operation that answers a list answers `{items, total, limit, offset}` and takes
    `limit` and `offset`."""
    document = _document(api)
    lists = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            properties = _success_schema(document, operation).get("properties", {})
            if "items" not in properties:
                continue
            lists.append((method, path))
            assert {"items", "total", "limit", "offset"} <= set(properties), (method, path)
            taken = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            assert {"limit", "offset"} <= taken, (method, path)
    assert ("get", "/v1/api-keys") in lists and ("get", "/v1/scorers/installed") in lists


def test_times_are_iso_timestamps_and_durations_name_their_unit(api: Api) -> None:
    """A field named `…_at` is a date-time (`metric_at` is the pass@t curve, no time); a
    number that measures time names its unit (`elapsed_ms`, `within_seconds`)."""
    document = _document(api)
    timed = []
    for name, schema in document["components"]["schemas"].items():
        for field, spec in schema.get("properties", {}).items():
            kinds = [spec, *spec.get("anyOf", [])]
            if field.endswith("_at") and field != "metric_at":
                timed.append(field)
                assert any(k.get("format") == "date-time" for k in kinds), (name, field)
            numeric = any(k.get("type") in ("integer", "number") for k in kinds)
            words = ("time", "elapsed", "duration", "latency", "seconds", "ms")
            if numeric and any(word in field for word in words):
                assert field.endswith(("_ms", "_seconds")), (name, field)
    assert "created_at" in timed


# The reads clients poll: boards, standings, matches, challenges, attempts, red_blue entries and
# a challenge's announcements.
CONDITIONAL_READS = {
    "/v1/challenges/{challenge_id}/leaderboard",
    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/leaderboard",
    "/v1/challenges/{challenge_id}/standings",
    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/standings",
    "/v1/challenges/{challenge_id}/matches",
    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/matches",
    "/v1/matches/{match_id}",
    "/v1/public/{tenant_slug}/challenges/{challenge_slug}/matches/{match_id}",
    "/v1/challenges",
    "/v1/challenges/{challenge_id}",
    "/v1/attempts",
    "/v1/attempts/{attempt_id}",
    "/v1/attempts/{attempt_id}/trials",
    "/v1/challenges/{challenge_id}/attempts",
    "/v1/defenses/{defense_id}",
    "/v1/attacks/{attack_id}",
    "/v1/challenges/{challenge_id}/announcements",
}


def test_the_reads_clients_poll_declare_their_etag_and_304(
    api: Api, tenant: dict[str, Any]
) -> None:
    """Each such read declares the ETag (and Cache-Control) of its 200, the bodiless 304 with
    the same headers and the If-None-Match header it takes; no other operation declares a 304,
    and the operations that declare one answer it."""
    document = _document(api)
    declared = set()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            if "304" not in responses:
                continue
            declared.add(path)
            assert method == "get", path
            for status in ("200", "304"):
                headers = responses[status]["headers"]
                assert {"ETag", "Cache-Control"} <= set(headers), (path, status)
                assert headers["ETag"]["schema"]["type"] == "string", (path, status)
            assert "content" in responses["200"] and "content" not in responses["304"], path
            assert responses["304"]["description"].startswith("Not Modified"), path
            taken = {(p["in"], p["name"]) for p in operation.get("parameters", [])}
            assert ("header", "If-None-Match") in taken, path
    assert declared == CONDITIONAL_READS
    key = tenant["api_key"]
    first = api.request("GET", "/v1/challenges", key)
    again = api.request(
        "GET", "/v1/challenges", key, headers={"If-None-Match": first.headers["etag"]}
    )
    assert (first.status_code, again.status_code) == (200, 304)
    assert "etag" not in api.request("GET", "/v1/tenant", key).headers
