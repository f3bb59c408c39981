"""The outbound policy: addresses, credentials bound to destinations and providers (enforced on
the wire, against loopback servers, in tests/process/outbound/test_policy.py)."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.types import InfrastructureError, Message, ModelSpec
from app.outbound.addresses import IPAddress, ResolutionFailed, non_public_reason
from app.outbound.policy import OutboundPolicy, OutboundRefused, parse_allowed_bases
from app.outbound.providers import ProviderPolicy, bundled_catalog, model_id_problem

USER: list[Message] = [{"role": "user", "content": "hello"}]
PROVIDER_KEY = "sk-operator-openai-key-must-stay-home"
BASE_KEY = "sk-the-key-of-this-base"
OFFLINE = ("offline/echo", "offline/judge")


def resolver(table: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    def resolve(host: str, port: int) -> list[IPAddress]:
        return [ipaddress.ip_address(text) for text in table[host]]

    return resolve


def policy(*entries: object, environ: dict[str, str] | None = None) -> OutboundPolicy:
    return OutboundPolicy(
        bases=parse_allowed_bases(list(entries)),  # type: ignore[arg-type]
        providers=ProviderPolicy(),
        environ=environ or {},
    )


@pytest.fixture(autouse=True)
def operator_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operator's provider key and the openai SDK's other environment settings (litellm
    reads them; the direct transport must not send them)."""
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-operator")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-operator")
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Operator-Secret: hunter2")


# Addresses


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.1", "private"),
        ("172.16.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("100.64.0.1", "not globally routable"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        # 6to4 and Teredo carry an IPv4 address a relay delivers to: judged by it first.
        ("2002:7f00:1::", "loopback (embedded 127.0.0.1)"),
        ("2002:a9fe:a9fe::1", "link-local (embedded 169.254.169.254)"),
        ("2002:a00:1::", "private (embedded 10.0.0.1)"),
        ("2002:5db8:d822::1", None),
        ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback (embedded 127.0.0.1)"),
        ("2001:0:4136:e378:8000:63bf:f5ff:fff7", "private (embedded 10.0.0.8)"),
        ("93.184.216.34", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
    ],
)
def test_non_public_addresses_are_named(address: str, reason: str | None) -> None:
    assert non_public_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize(
    "answer",
    [["10.0.0.5"], ["169.254.169.254"], ["93.184.216.34", "127.0.0.1"], ["::1"], ["::ffff:7f00:1"]],
)
def test_a_host_name_resolving_to_a_non_public_address_is_refused(answer: list[str]) -> None:
    checked = policy("http://models.example.com/v1")
    with pytest.raises(OutboundRefused, match="resolves to"):
        checked.checked_base(
            "http://models.example.com/v1", resolve=resolver({"models.example.com": answer})
        )


def test_unresolvable_hosts_are_refused_at_save_time() -> None:
    checked = policy("http://models.example.com/v1")

    def nothing(host: str, port: int) -> list[IPAddress]:
        return []

    with pytest.raises(OutboundRefused, match="no address"):
        checked.checked_base("http://models.example.com/v1", resolve=nothing)


@pytest.mark.parametrize(
    ("failure", "raised"),
    [
        (
            socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution"),
            ResolutionFailed,
        ),
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), OutboundRefused),
    ],
    ids=["resolver-cannot-answer-now", "no-such-name"],
)
def test_a_name_that_does_not_exist_is_refused_at_save_time_but_a_resolver_failure_is_not(
    monkeypatch: pytest.MonkeyPatch, failure: socket.gaierror, raised: type[Exception]
) -> None:
    def system_resolver(host: str, *_: object, **__: object) -> object:
        assert host == "models.example.com"
        raise failure

    monkeypatch.setattr(socket, "getaddrinfo", system_resolver)
    with pytest.raises(raised, match=r"models\.example\.com cannot be resolved") as caught:
        policy("http://models.example.com/v1").checked_base("http://models.example.com/v1")
    # A temporary failure is no refusal: another try may succeed.
    assert isinstance(caught.value, OutboundRefused) == (raised is OutboundRefused)


def test_a_resolver_failure_passes_through_the_save_time_check() -> None:
    def unavailable(host: str, port: int) -> list[IPAddress]:
        raise ResolutionFailed(f"{host} cannot be resolved now")

    with pytest.raises(ResolutionFailed):
        policy("http://models.example.com/v1").checked_base(
            "http://models.example.com/v1", resolve=unavailable
        )


def test_private_destinations_need_the_operator_to_name_them() -> None:
    private = resolver({"vllm.internal": ["10.0.0.7"], "localhost": ["127.0.0.1", "::1"]})
    explicit = policy(
        {"url": "http://vllm.internal/v1", "allow_private": True},
        "http://localhost:8000/v1",
        "http://10.0.0.8/v1",
    )
    assert explicit.checked_base("http://vllm.internal/v1", resolve=private)
    assert explicit.checked_base("http://localhost:8000/v1", resolve=private)
    assert explicit.checked_base("http://10.0.0.8/v1/", resolve=private) == "http://10.0.0.8/v1"
    with pytest.raises(OutboundRefused):
        policy("http://vllm.internal/v1").checked_base("http://vllm.internal/v1", resolve=private)


# Credentials


def test_a_base_gets_the_key_configured_for_it_or_none() -> None:
    environ = {"BASE_KEY": BASE_KEY, "OPENAI_API_KEY": PROVIDER_KEY}
    checked = policy(
        {"url": "http://127.0.0.1:*/keyed/v1", "api_key_env": "BASE_KEY"},
        {"url": "http://127.0.0.1:*/unset/v1", "api_key_env": "NOT_SET_ANYWHERE"},
        "http://127.0.0.1:*/v1",
        environ=environ,
    )
    assert checked.route("http://127.0.0.1:1234/keyed/v1").api_key == BASE_KEY
    assert checked.route("http://127.0.0.1:1234/unset/v1").api_key is None
    assert checked.route("http://127.0.0.1:1234/v1").api_key is None
    # The operator's own runs: any base, still no provider key.
    assert OutboundPolicy.unrestricted(environ=environ).route("http://10.0.0.1/v1").api_key is None


def test_an_unlisted_base_is_refused_even_for_the_call() -> None:
    with pytest.raises(OutboundRefused, match="not allowed"):
        policy("http://127.0.0.1:*/v1").route("http://127.0.0.1:1234/internal")


# Providers


@pytest.mark.parametrize(
    "model", ["ollama/x", "ollama_chat/x", "lemonade/x", "llamafile/x", "vllm/x"]
)
def test_providers_whose_default_base_is_local_are_refused_by_default(model: str) -> None:
    problem = model_id_problem(model, offline_models=OFFLINE, policy=ProviderPolicy())
    assert problem is not None and "not allowed on this server" in problem


@pytest.mark.parametrize(
    "model",
    ["openai/gpt-4o", "anthropic/claude-3-5-sonnet-20240620", "gpt-4o-mini", "offline/echo"],
)
def test_remote_providers_are_allowed_by_default(model: str) -> None:
    assert model_id_problem(model, offline_models=OFFLINE, policy=ProviderPolicy()) is None


def test_the_operator_chooses_the_providers() -> None:
    only_openai = ProviderPolicy(allowed=("openai",))
    assert model_id_problem("openai/gpt-4o", offline_models=OFFLINE, policy=only_openai) is None
    assert model_id_problem("gpt-4o-mini", offline_models=OFFLINE, policy=only_openai) is None
    assert model_id_problem("anthropic/claude", offline_models=OFFLINE, policy=only_openai)
    assert model_id_problem("offline/echo", offline_models=OFFLINE, policy=only_openai) is None
    with_ollama = ProviderPolicy(allowed=("*", "ollama"))
    assert model_id_problem("ollama/llama3", offline_models=OFFLINE, policy=with_ollama) is None
    assert model_id_problem("lemonade/x", offline_models=OFFLINE, policy=with_ollama)


@pytest.mark.parametrize(
    "model",
    [
        "azure/../../deployments/other",
        "openai//gpt-4o",
        "openai/gpt-4o%2F..",
        "huggingface/https://evil.example/model",
        "openai/a?b",
        "openai/a#b",
        "openai/a\\b",
        "openai/",
        "openai/.hidden",
        "x" * 201,
    ],
)
def test_model_ids_that_could_steer_a_url_are_refused(model: str) -> None:
    assert model_id_problem(model, offline_models=OFFLINE) is not None


def test_the_engine_refuses_a_provider_the_operator_does_not_allow() -> None:
    client = LLMClient(outbound=OutboundPolicy(providers=ProviderPolicy()))
    with pytest.raises(InfrastructureError) as caught:
        _call(client, ModelSpec("ollama/llama3"))
    assert str(caught.value) == "model ollama/llama3 is not allowed on this server"
    assert client.calls_made == 0


def test_the_catalog_knows_the_local_providers() -> None:
    local = bundled_catalog().local_providers
    assert {"ollama", "ollama_chat", "lemonade", "llamafile", "vllm"} <= set(local)
    assert "openai" not in local and "anthropic" not in local


def test_openai_compatible_model_ids_are_accepted_under_any_provider_policy() -> None:
    # The prefix names no litellm provider: where such a model is reached is the base URL's
    # policy, so a policy that allows no provider still accepts it.
    nothing_allowed = ProviderPolicy(allowed=())
    for model in ("openai-compatible/llama-3.1-8b", "openai-compatible/Qwen/Qwen2.5-7B"):
        assert model_id_problem(model, offline_models=OFFLINE, policy=nothing_allowed) is None
    for model in ("openai-compatible/", "openai-compatible/../x", "openai-compatible/a b"):
        assert model_id_problem(model, offline_models=OFFLINE) is not None
    problem = model_id_problem("openai_compatible/x", offline_models=OFFLINE)
    assert problem is not None and "'openai-compatible/'" in problem


def test_a_provider_key_is_missing_until_one_of_its_alternatives_is_set() -> None:
    catalog = bundled_catalog()
    OutboundPolicy(environ={}).check_key("offline/echo")
    with pytest.raises(OutboundRefused, match=r"provider 'openai'.*OPENAI_API_KEY"):
        OutboundPolicy(environ={}).check_key("openai/gpt-4o-mini")
    with pytest.raises(OutboundRefused, match="provider 'openai'"):
        OutboundPolicy(environ={"OPENAI_API_KEY": ""}).check_key("gpt-4o-mini")
    OutboundPolicy(environ={"OPENAI_API_KEY": "sk-x"}).check_key("openai/gpt-4o-mini")
    # Either of Gemini's variables is enough.
    message = catalog.missing_key("gemini", {})
    assert message is not None and "GEMINI_API_KEY or GOOGLE_API_KEY" in message
    assert catalog.missing_key("gemini", {"GOOGLE_API_KEY": "g"}) is None
    # A provider that can take credentials from elsewhere (a cloud identity) is not judged.
    assert catalog.missing_key("bedrock", {}) is None


def _call(client: LLMClient, spec: ModelSpec) -> str:
    return asyncio.run(client.complete(spec, USER)).output
