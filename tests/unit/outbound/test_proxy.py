"""The operator's proxy settings (app.outbound.proxy): read as curl and httpx read them, and
given only to the operator's own runs."""

from __future__ import annotations

import pytest

from app.evaluation.commands.cli import CliError, _operator_policy
from app.outbound.proxy import Proxy, ProxySettings, parse_proxy
from app.outbound.urls import parse_url


def test_proxy_urls_are_parsed_with_their_credentials_kept_out_of_their_text() -> None:
    proxy = parse_proxy("http://us%40er:p%3Ass@proxy.corp:3128/")
    assert proxy == Proxy("proxy.corp", 3128, "Basic dXNAZXI6cDpzcw==")  # us@er:p:ss
    assert str(proxy) == "http://proxy.corp:3128"
    assert parse_proxy("proxy.corp") == Proxy("proxy.corp", 8080, None)
    assert parse_proxy("http://[fd00::1]:3128").netloc == "[fd00::1]:3128"
    for refused in ("https://proxy.corp", "socks5://proxy.corp:1080", "http://p:1/x", "http://"):
        with pytest.raises(ValueError):
            parse_proxy(refused)


def test_each_scheme_takes_its_variable_and_no_proxy_names_what_goes_directly() -> None:
    settings = ProxySettings.from_environ(
        {
            "HTTPS_PROXY": "http://upper:1",
            "https_proxy": "http://lower:1",  # the lowercase name wins, as in curl
            "ALL_PROXY": "http://every:1",
            "NO_PROXY": " .internal.corp, 10.0.0.0/8 ,models.test:8443,[::1]",
        }
    )

    def proxy_host(url: str) -> str | None:
        proxy = settings.for_url(parse_url(url))
        return None if proxy is None else proxy.host

    assert proxy_host("https://api.example.com/v1") == "lower"
    assert proxy_host("http://api.example.com/v1") == "every"  # no HTTP_PROXY: ALL_PROXY
    assert proxy_host("https://vllm.internal.corp/v1") is None
    assert proxy_host("https://internal.corp/v1") is None
    assert proxy_host("https://notinternal.corp/v1") == "lower"
    assert proxy_host("http://10.2.3.4:8000/v1") is None
    assert proxy_host("http://11.2.3.4:8000/v1") == "every"
    assert proxy_host("https://models.test:8443/v1") is None
    assert proxy_host("https://models.test/v1") == "lower"  # another port
    assert proxy_host("http://[::1]:8000/v1") is None
    assert (
        ProxySettings.from_environ({"NO_PROXY": "*", "HTTP_PROXY": "p:1"}).for_url(
            parse_url("http://a.example/v1")
        )
        is None
    )
    assert ProxySettings.from_environ({}) == ProxySettings()


def test_the_cli_reads_the_proxy_from_its_environment_and_refuses_a_bad_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GAUNTLET_ALLOWED_API_BASES", raising=False)
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTPS_PROXY", "http://egress.corp:3128")
    monkeypatch.delenv("https_proxy", raising=False)
    policy = _operator_policy()
    assert policy.route("https://api.example.com/v1").proxy == Proxy("egress.corp", 3128, None)
    assert policy.route("http://127.0.0.1:8000/v1").proxy is None  # HTTP_PROXY unset
    monkeypatch.setenv("HTTPS_PROXY", "socks5://egress.corp:1080")
    with pytest.raises(CliError, match="HTTPS_PROXY: proxy socks5:// is not supported"):
        _operator_policy()
