"""What passwords and production secrets must be, and the settings for proxies, cookies and
limits: pure logic, edge cases included."""

from __future__ import annotations

import secrets
import string

import pytest

from app.kit.config import Settings
from app.kit.strength import password_problem, secret_problem

STRONG_TOKEN = secrets.token_urlsafe(32)
STRONG_KEY = secrets.token_urlsafe(32)


@pytest.mark.parametrize(
    ("password", "expected"),
    [
        ("password", "most common passwords"),
        ("PASSWORD", "most common passwords"),
        ("12345678", "most common passwords"),
        ("iloveyou2", "most common passwords"),
        ("", "must not be blank"),
        (" " * 8, "must not be blank"),
        ("\u3000" * 8, "must not be blank"),  # ideographic spaces
        ("\x00" * 8, "control characters (U+0000"),
        ("line\nbreak here", "control characters (U+000A"),
        ("escape\x1b[0m code", "control characters (U+001B"),
        ("lone \ud800 surrogate", "control characters (U+D800"),
        ("seven c", "at least 8 characters"),
        ("x" * 257, "at most 256 characters"),
        ("aaaaaaaaaa", "too easy to guess"),
        ("abcdefghij", "too easy to guess"),
        ("qwertyuiop[]", "too easy to guess"),
        ("dana.scully1", "too easy to guess"),  # the handle and a digit
        ("Dana.Scully", "must not be your handle"),
    ],
)
def test_weak_passwords_are_refused_with_their_reason(password: str, expected: str) -> None:
    problem = password_problem(password, "dana.scully")
    assert problem is not None and expected in problem


@pytest.mark.parametrize(
    "password",
    [
        "correct horse battery",
        "seven purple otters sing",
        "ünïcödé wörds ärë fïnë",
        "パスワードは長い文です",
        "family 👨‍👩‍👧 emoji join",  # zero-width joiners are format characters, allowed
        pytest.param(secrets.token_urlsafe(12), id="random-urlsafe-12"),
        pytest.param(  # judged by a prefix
            "".join(secrets.choice(string.printable[:94]) for _ in range(256)),
            id="random-printable-256",
        ),
    ],
)
def test_good_passwords_pass(password: str) -> None:
    assert password_problem(password, "dana") is None


@pytest.mark.parametrize(
    ("secret", "expected"),
    [
        (None, "must be set"),
        ("", "must be set"),
        ("a" * 24, "at least 32 characters"),
        ("a" * 40, "too easy to guess"),
        ("test-admin-token-" + "x" * 24, "too easy to guess"),
        ("abcd" * 10, "too easy to guess"),
        ("0123456789" * 4, "too easy to guess"),
        ("correct horse battery staple and more", "too easy to guess"),
        pytest.param(" " + secrets.token_urlsafe(32), "spaces at its ends", id="leading-space"),
        pytest.param(secrets.token_urlsafe(32) + "\n", "spaces at its ends", id="trailing-newline"),
        pytest.param(secrets.token_urlsafe(1000), "at most 1024 characters", id="urlsafe-1000"),
    ],
)
def test_weak_secrets_are_refused(secret: str | None, expected: str) -> None:
    problem = secret_problem("GAUNTLET_SECRET_KEY", secret)
    assert problem is not None and expected in problem
    assert problem.startswith("GAUNTLET_SECRET_KEY")


@pytest.mark.parametrize(
    "secret",
    [
        # Named by their shape: parallel test processes must collect the same ids.
        pytest.param(secrets.token_urlsafe(32), id="urlsafe-32"),
        pytest.param(secrets.token_hex(32), id="hex-32"),
        pytest.param("gadm_" + secrets.token_urlsafe(32), id="gadm-urlsafe-32"),
        pytest.param(secrets.token_urlsafe(700), id="urlsafe-700"),
    ],
)
def test_random_secrets_pass(secret: str) -> None:
    assert secret_problem("GAUNTLET_ADMIN_TOKEN", secret) is None


def _production(monkeypatch: pytest.MonkeyPatch, **values: str) -> Settings:
    settings = {
        "GAUNTLET_MODE": "production",
        "GAUNTLET_DATABASE_URL": "postgresql+psycopg://u:p@db:5432/g",
        "GAUNTLET_BROKER_URL": "redis://redis:6379/0",
        "GAUNTLET_ADMIN_TOKEN": STRONG_TOKEN,
        "GAUNTLET_SECRET_KEY": STRONG_KEY,
        **values,
    }
    for name in ("GAUNTLET_TRUSTED_PROXIES", "GAUNTLET_SECURE_COOKIES", "GAUNTLET_RATE_LIMIT_URL"):
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_production_settings_refuse_weak_or_shared_secrets_without_echoing_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ValueError) as raised:
        _production(monkeypatch, GAUNTLET_ADMIN_TOKEN="a" * 24, GAUNTLET_SECRET_KEY="a" * 24)
    message = str(raised.value)
    assert "GAUNTLET_ADMIN_TOKEN must be at least 32" in message
    assert "GAUNTLET_SECRET_KEY must be at least 32" in message
    assert "a" * 24 not in message
    with pytest.raises(ValueError, match="must differ"):
        _production(monkeypatch, GAUNTLET_SECRET_KEY=STRONG_TOKEN)


def test_production_defaults_to_secure_cookies_and_shared_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = _production(monkeypatch)
    assert settings.resolved_secure_cookies is True
    assert settings.resolved_rate_limit_url == "redis://redis:6379/0"
    assert settings.trusted_proxy_list == []
    assert (
        _production(monkeypatch, GAUNTLET_SECURE_COOKIES="false").resolved_secure_cookies is False
    )
    other = _production(monkeypatch, GAUNTLET_RATE_LIMIT_URL="redis://limits:6379/3")
    assert other.resolved_rate_limit_url == "redis://limits:6379/3"
    with pytest.raises(ValueError, match="GAUNTLET_RATE_LIMIT_URL must name a Redis"):
        _production(monkeypatch, GAUNTLET_RATE_LIMIT_URL="memory://")


def test_embedded_mode_counts_in_memory_over_plain_http(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GAUNTLET_MODE", "GAUNTLET_BROKER_URL", "GAUNTLET_SECURE_COOKIES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("GAUNTLET_RATE_LIMIT_URL", raising=False)
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.resolved_rate_limit_url == "memory://"
    assert settings.resolved_secure_cookies is False


def test_trusted_proxies_are_addresses_or_networks(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _production(monkeypatch, GAUNTLET_TRUSTED_PROXIES="10.0.0.5, 10.1.0.0/16,::1,")
    assert settings.trusted_proxy_list == ["10.0.0.5", "10.1.0.0/16", "::1"]
    with pytest.raises(ValueError, match="'\\*' would believe any client"):
        _production(monkeypatch, GAUNTLET_TRUSTED_PROXIES="*")
    with pytest.raises(ValueError, match="not an IP address or network"):
        _production(monkeypatch, GAUNTLET_TRUSTED_PROXIES="proxy.internal")


def test_uvicorn_believes_proxy_headers_only_from_the_trusted_proxies(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from app import cli
    from app.kit import config

    monkeypatch.setattr(config, "get_settings", lambda: _production(monkeypatch))
    assert cli.proxy_options() == {"proxy_headers": False, "forwarded_allow_ips": []}
    monkeypatch.setattr(
        config,
        "get_settings",
        lambda: _production(monkeypatch, GAUNTLET_TRUSTED_PROXIES="10.0.0.5,10.2.0.0/24"),
    )
    assert cli.proxy_options() == {
        "proxy_headers": True,
        "forwarded_allow_ips": ["10.0.0.5", "10.2.0.0/24"],
    }
