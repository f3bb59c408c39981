"""Handing a message to an SMTP server, against a real one on loopback (aiosmtpd): STARTTLS
and implicit TLS with a login, certificates checked, and each failure said as transient (tried
again later) or permanent (recorded as failed at once)."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from app.kit.mail.message import Mail, compose
from app.kit.mail.transport import MailNotSent, send_smtp
from app.outbound.smtp import SmtpServer
from tests.fixtures.mail_server import MailServer
from tests.fixtures.tls import private_authority
from tests.services import free_port

pytestmark = pytest.mark.integration

SENDER = "gauntlet@example.org"
LOGIN = ("mailer", "s3cret pass")


def _message(recipient: str = "ann@example.org") -> str:
    return compose(Mail(recipient, "Hello", "A test message."), SENDER, datetime.now(UTC))


@pytest.fixture
def authority(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ssl.SSLContext]:
    """The server's TLS context; clients trust its authority (SSL_CERT_FILE)."""
    ca_file, server_tls = private_authority(tmp_path)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    yield server_tls


def _running(server: MailServer) -> MailServer:
    server.start()
    return server


def test_starttls_then_login_then_the_message(authority: ssl.SSLContext) -> None:
    server = _running(MailServer(free_port(), starttls=authority, login=LOGIN))
    try:
        url = f"smtp://{LOGIN[0]}:{LOGIN[1].replace(' ', '%20')}@127.0.0.1:{server.port}"
        went = send_smtp(SmtpServer.parse(url), SENDER, "ann@example.org", _message(), "test")
        assert went == f"smtp 127.0.0.1:{server.port}"
        received = server.inbox.wait_for("ann@example.org")[0]
        assert received.sender == SENDER and received.text == "A test message.\n"
    finally:
        server.stop()


def test_implicit_tls_then_login_then_the_message(authority: ssl.SSLContext) -> None:
    server = _running(MailServer(free_port(), implicit_tls=authority, login=LOGIN))
    try:
        url = f"smtps://{LOGIN[0]}:{LOGIN[1].replace(' ', '%20')}@127.0.0.1:{server.port}"
        send_smtp(SmtpServer.parse(url), SENDER, "ann@example.org", _message(), "test")
        assert server.inbox.wait_for("ann@example.org")
    finally:
        server.stop()


def test_a_certificate_no_trusted_authority_signed_is_refused_and_tried_again_later(
    authority: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE")  # certifi's bundle: the test authority is unknown
    server = _running(MailServer(free_port(), implicit_tls=authority))
    try:
        with pytest.raises(MailNotSent) as raised:
            send_smtp(
                SmtpServer.parse(f"smtps://127.0.0.1:{server.port}"),
                SENDER,
                "ann@example.org",
                _message(),
                "test",
            )
        assert not raised.value.permanent and "TLS" in raised.value.reason
        assert server.inbox.received == []
    finally:
        server.stop()


def test_a_wrong_login_is_said_and_tried_again_later(authority: ssl.SSLContext) -> None:
    server = _running(MailServer(free_port(), starttls=authority, login=LOGIN))
    try:
        url = f"smtp://{LOGIN[0]}:wrong@127.0.0.1:{server.port}"
        with pytest.raises(MailNotSent) as raised:
            send_smtp(SmtpServer.parse(url), SENDER, "ann@example.org", _message(), "test")
        assert not raised.value.permanent and raised.value.reason.startswith("535")
    finally:
        server.stop()


def test_a_recipient_refused_for_good_is_permanent() -> None:
    server = _running(MailServer(free_port()))
    server.inbox.refused.add("gone@example.org")
    try:
        with pytest.raises(MailNotSent) as raised:
            send_smtp(
                SmtpServer.parse(f"smtp://127.0.0.1:{server.port}"),
                SENDER,
                "gone@example.org",
                _message("gone@example.org"),
                "test",
            )
        assert raised.value.permanent and "550" in raised.value.reason
    finally:
        server.stop()


def test_a_server_that_is_down_is_tried_again_later() -> None:
    with pytest.raises(MailNotSent) as raised:
        send_smtp(
            SmtpServer.parse(f"smtp://127.0.0.1:{free_port()}"),
            SENDER,
            "ann@example.org",
            _message(),
            "test",
        )
    assert not raised.value.permanent and "127.0.0.1" in raised.value.reason
