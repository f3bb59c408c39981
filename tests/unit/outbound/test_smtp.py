"""The SMTP server's URL and the sender address, parsed and refused as the settings load."""

from __future__ import annotations

import pytest

from app.kit.config import Settings
from app.outbound.smtp import SmtpServer, one_address


def test_smtp_urls_name_the_server_its_tls_and_its_login() -> None:
    plain = SmtpServer.parse("smtp://127.0.0.1:2525")
    assert (plain.host, plain.port, plain.implicit_tls, plain.username) == (
        "127.0.0.1",
        2525,
        False,
        None,
    )
    assert plain.loopback
    tls = SmtpServer.parse("smtps://us%40er:p%3Ass%2Fw@Mail.Example.org")
    assert (tls.host, tls.port, tls.implicit_tls) == ("mail.example.org", 465, True)
    assert (tls.username, tls.password) == ("us@er", "p:ss/w")
    assert not tls.loopback
    assert SmtpServer.parse("smtp://relay.example.org").port == 25
    assert SmtpServer.parse("smtp://u:p@[::1]:587").loopback
    assert SmtpServer.parse("smtp://localhost").loopback


def test_the_password_never_shows_in_the_server_s_repr() -> None:
    assert "hunter2" not in repr(SmtpServer.parse("smtps://me:hunter2@mail.example.org"))


@pytest.mark.parametrize(
    "url",
    [
        "http://mail.example.org",
        "smtp://",
        "smtp://mail.example.org/path",
        "smtp://mail.example.org?starttls=no",
        "smtp://mail.example.org:99999",
        "smtp://mail.example.org:port",
        "smtp://:secret@mail.example.org",
        "smtp://mail example.org",
        "smtp://mail.example.org\r\n",
        "smtp://m_a_i_l!.example.org",
    ],
)
def test_malformed_smtp_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError):
        SmtpServer.parse(url)


def test_a_refused_url_s_message_does_not_repeat_its_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GAUNTLET_SMTP_URL", "smtp://me:hunter2@mail.example.org/oops")
    with pytest.raises(ValueError) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert "GAUNTLET_SMTP_URL" in str(raised.value) and "hunter2" not in str(raised.value)


@pytest.mark.parametrize(
    ("value", "address"),
    [
        ("Gauntlet <gauntlet@example.org>", "gauntlet@example.org"),
        ("gauntlet@localhost", "gauntlet@localhost"),
        ('"Gauntlet, the service" <g@example.org>', "g@example.org"),
    ],
)
def test_one_address_reads_a_name_and_an_address(value: str, address: str) -> None:
    assert one_address(value).addr_spec == address


@pytest.mark.parametrize(
    "value",
    ["a@example.org, b@example.org", "gauntlet", "g@example.org\r\nBcc: v@example.org", ""],
)
def test_one_address_refuses_anything_else(value: str) -> None:
    with pytest.raises(ValueError):
        one_address(value)


def test_production_with_smtp_needs_the_public_address_and_a_sender(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GAUNTLET_MODE", "production")
    monkeypatch.setenv("GAUNTLET_SMTP_URL", "smtps://me:pw@mail.example.org")
    monkeypatch.delenv("GAUNTLET_PUBLIC_URL", raising=False)
    monkeypatch.delenv("GAUNTLET_MAIL_FROM", raising=False)
    with pytest.raises(ValueError) as raised:
        Settings(_env_file=None)  # type: ignore[call-arg]
    assert "GAUNTLET_PUBLIC_URL" in str(raised.value)
    assert "GAUNTLET_MAIL_FROM" in str(raised.value)


@pytest.mark.parametrize("value", ["gauntlet.example.org", "ftp://x", "https://x/?a=1", "https://"])
def test_the_public_address_must_be_an_http_url(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GAUNTLET_PUBLIC_URL", value)
    with pytest.raises(ValueError, match="GAUNTLET_PUBLIC_URL"):
        Settings(_env_file=None)  # type: ignore[call-arg]


def test_an_empty_setting_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GAUNTLET_SMTP_URL", "GAUNTLET_MAIL_FROM", "GAUNTLET_PUBLIC_URL"):
        monkeypatch.setenv(name, "")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.smtp_server is None
    assert settings.resolved_public_url == "http://127.0.0.1:8000"
    monkeypatch.setenv("GAUNTLET_PUBLIC_URL", "https://gauntlet.example.org/")
    assert Settings(_env_file=None).resolved_public_url == "https://gauntlet.example.org"  # type: ignore[call-arg]
