"""The outbound policy enforced on the wire, against a loopback OpenAI-compatible server and a
TLS one: credentials reach only their own base, the transport connects to the address it
checked, host names are verified, a rebound name is refused before any connection (the
policy's rules are tests/unit/outbound/test_policy.py)."""

from __future__ import annotations

import ipaddress
import os
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.outbound.addresses import IPAddress
from tests.unit.outbound.test_policy import _call, policy, resolver

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.engine.llm import LLMClient
from app.evaluation.engine.types import InfrastructureError, ModelSpec, RetryPolicy
from app.outbound import transport
from tests.fixtures.fake_openai import FakeOpenAIServer

PROVIDER_KEY = "sk-operator-openai-key-must-stay-home"
BASE_KEY = "sk-the-key-of-this-base"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as running:
        yield running


def test_an_unkeyed_base_receives_no_credential_at_all(server: FakeOpenAIServer) -> None:
    client = LLMClient(outbound=policy("http://127.0.0.1:*/v1", environ=dict(os.environ)))
    assert _call(client, ModelSpec("openai/fake-model", api_base=server.base_url)) == "hello"
    [received] = server.received
    assert received.path == "/v1/chat/completions"
    assert received.authorization is None
    assert not any(PROVIDER_KEY in value for value in received.headers.values())
    assert "openai-organization" not in received.headers
    assert "openai-project" not in received.headers
    assert "x-operator-secret" not in received.headers
    assert server.requests[0]["model"] == "fake-model"  # the provider prefix is litellm's


def test_a_keyed_base_receives_its_own_key_only(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIS_BASE_KEY", BASE_KEY)
    keyed = {"url": "http://127.0.0.1:*/keyed/v1", "api_key_env": "THIS_BASE_KEY"}
    client = LLMClient(outbound=policy(keyed, environ=dict(os.environ)))
    spec = ModelSpec("openai/fake-model", api_base=f"http://127.0.0.1:{server.port}/keyed/v1")
    _call(client, spec)
    [received] = server.received
    assert received.path == "/keyed/v1/chat/completions"
    assert received.authorization == f"Bearer {BASE_KEY}"


def test_the_engine_refuses_a_base_the_allow_list_no_longer_has(server: FakeOpenAIServer) -> None:
    client = LLMClient(outbound=policy("http://127.0.0.1:*/other"))
    with pytest.raises(InfrastructureError) as caught:
        _call(client, ModelSpec("openai/fake-model", api_base=server.base_url))
    assert str(caught.value) == "model openai/fake-model unreachable"
    assert "not allowed" in caught.value.detail
    assert server.received == []


def test_the_transport_connects_to_the_address_it_checked(server: FakeOpenAIServer) -> None:
    # "models.test" exists in no DNS: the request reaches the server only because the transport
    # connects to the address its resolver checked, with the Host header kept.
    entry = {"url": "http://models.test:*/v1", "allow_private": True}
    client = LLMClient(outbound=policy(entry), resolve=async_resolver([["127.0.0.1"]]))
    _call(client, ModelSpec("openai/fake-model", api_base=f"http://models.test:{server.port}/v1"))
    [received] = server.received
    assert received.headers["host"] == f"models.test:{server.port}"


def _self_signed(host: str, folder: Path) -> tuple[Path, Path]:
    """A certificate for `host` (its own issuer) and its key, as PEM files."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.now(UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


def test_a_pinned_https_request_verifies_the_host_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Connected to 127.0.0.1, yet the TLS server name and the certificate check are the host
    # name's: a certificate for models.test is accepted, one for another name is not.
    cert, key = _self_signed("models.test", tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust this certificate only
    entry = {"url": "https://models.test:*/v1", "allow_private": True}
    with FakeOpenAIServer(tls=context) as server:
        base = f"https://models.test:{server.port}/v1"
        client = LLMClient(outbound=policy(entry), resolve=async_resolver([["127.0.0.1"]]))
        assert _call(client, ModelSpec("openai/fake-model", api_base=base)) == "hello"
        assert server.received[0].headers["host"] == f"models.test:{server.port}"

        other = {"url": "https://other.test:*/v1", "allow_private": True}
        client = LLMClient(
            outbound=policy(other),
            resolve=async_resolver([["127.0.0.1"]]),
            retry=RetryPolicy(max_attempts=1),
        )
        with pytest.raises(InfrastructureError) as caught:
            _call(
                client,
                ModelSpec("openai/fake-model", api_base=f"https://other.test:{server.port}/v1"),
            )
        assert "CERTIFICATE_VERIFY_FAILED" in caught.value.detail
        assert len(server.received) == 1


def test_an_untrusted_certificate_is_not_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same certificate fails the same way on every try: the first failure is final.
    cert, key = _self_signed("models.test", tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)  # certifi's bundle: not this issuer
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    transport.tls_context.cache_clear()
    entry = {"url": "https://models.test:*/v1", "allow_private": True}
    with FakeOpenAIServer(tls=context) as server:
        client = LLMClient(
            outbound=policy(entry),
            resolve=async_resolver([["127.0.0.1"]]),
            retry=RetryPolicy(max_attempts=4),
        )
        with pytest.raises(InfrastructureError) as caught:
            _call(
                client,
                ModelSpec("openai/fake-model", api_base=f"https://models.test:{server.port}/v1"),
            )
    assert "(not retried)" in str(caught.value)
    assert "certificate not trusted" in caught.value.detail
    assert "CERTIFICATE_VERIFY_FAILED" in caught.value.detail


def test_a_rebound_name_is_refused_before_any_connection(server: FakeOpenAIServer) -> None:
    # Public when the challenge was saved, loopback when the worker calls: the request never
    # leaves, because the worker resolves again and connects only to what it checked.
    checked = policy("http://models.test:*/v1")
    base = f"http://models.test:{server.port}/v1"
    assert checked.checked_base(base, resolve=resolver({"models.test": ["93.184.216.34"]}))
    client = LLMClient(outbound=checked, resolve=async_resolver([["127.0.0.1"]]))
    with pytest.raises(InfrastructureError) as caught:
        _call(client, ModelSpec("openai/fake-model", api_base=base))
    assert str(caught.value) == "model openai/fake-model unreachable"
    assert "127.0.0.1, a loopback address" in caught.value.detail
    assert server.received == []


def test_a_connection_failure_names_no_address_or_port(server: FakeOpenAIServer) -> None:
    port = server.port
    server.stop()
    client = LLMClient(
        outbound=policy("http://127.0.0.1:*/v1"),
        retry=RetryPolicy(max_attempts=2, base_delay_s=0.0),
    )
    with pytest.raises(InfrastructureError) as caught:
        _call(client, ModelSpec("openai/fake-model", api_base=f"http://127.0.0.1:{port}/v1"))
    assert str(caught.value) == "model openai/fake-model unreachable after 2 tries"
    assert "127.0.0.1" not in str(caught.value) and str(port) not in str(caught.value)
    assert "APIConnectionError" in caught.value.detail


def async_resolver(answers: list[list[str]]):  # type: ignore[no-untyped-def]
    """A DNS server whose answers change from one lookup to the next (rebinding)."""
    remaining = list(answers)

    async def resolve(host: str, port: int) -> list[IPAddress]:
        current = remaining.pop(0) if len(remaining) > 1 else remaining[0]
        return [ipaddress.ip_address(text) for text in current]

    return resolve
