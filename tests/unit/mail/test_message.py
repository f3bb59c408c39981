"""A message as it goes out: participant-chosen text never becomes a header, sizes are bounded,
the unsubscribe headers are RFC 8058's, and the whole message is ASCII."""

from __future__ import annotations

from datetime import UTC, datetime
from email import message_from_string
from email.message import EmailMessage
from email.policy import default

import pytest

from app.kit.mail.message import (
    MAX_SUBJECT_CHARS,
    MAX_TEXT_CHARS,
    Mail,
    MailRefused,
    compose,
    one_line,
)

NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
SENDER = "Gauntlet <gauntlet@example.org>"


def _parsed(text: str) -> EmailMessage:
    message = message_from_string(text, policy=default)
    assert isinstance(message, EmailMessage)
    return message


def _text(message: EmailMessage) -> str:
    """The plain text as a reader sees it (mail's line ends are CRLF)."""
    plain = message.get_body(preferencelist=("plain",))
    assert plain is not None
    return str(plain.get_content()).replace("\r\n", "\n")


def test_a_line_break_in_the_subject_cannot_add_a_header() -> None:
    hostile = "Welcome\r\nBcc: victim@example.com\nX-Injected: yes"
    text = compose(Mail("ann@example.com", hostile, "hi"), SENDER, NOW)
    message = _parsed(text)
    assert message["Bcc"] is None and message["X-Injected"] is None
    assert message["Subject"] == "Welcome Bcc: victim@example.com X-Injected: yes"
    assert message.get_all("To") == ["ann@example.com"]


@pytest.mark.parametrize(
    "recipient",
    [
        "ann@example.com\r\nBcc: victim@example.com",
        "ann@example.com, victim@example.com",
        "ann",
        "",
    ],
)
def test_a_recipient_must_be_exactly_one_address(recipient: str) -> None:
    with pytest.raises(MailRefused):
        compose(Mail(recipient, "Hello", "hi"), SENDER, NOW)


def test_subjects_are_one_line_and_cut_with_an_ellipsis() -> None:
    assert one_line("  a\t\tb\x00c\n\nd  ") == "a b c d"
    long = one_line("x" * 1000)
    assert len(long) == MAX_SUBJECT_CHARS and long.endswith("…")
    assert one_line("") == ""


def test_a_text_beyond_the_bound_is_refused() -> None:
    compose(Mail("ann@example.com", "s", "x" * MAX_TEXT_CHARS), SENDER, NOW)
    with pytest.raises(MailRefused, match="at most"):
        compose(Mail("ann@example.com", "s", "x" * (MAX_TEXT_CHARS + 1)), SENDER, NOW)


def test_unicode_text_and_subject_travel_as_ascii_and_read_back_the_same() -> None:
    subject = "Résultats 🏆 de « Garde la banane »"
    body = "Bonjour Zoë,\nvoici le lien : https://gauntlet.example.org/t/x/confirm-email/abc\n"
    text = compose(Mail("zoe@example.com", subject, body), SENDER, NOW)
    text.encode("ascii")  # every server takes it, with or without 8BITMIME or SMTPUTF8
    message = _parsed(text)
    assert message["Subject"] == subject
    assert _text(message) == body
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["From"] == SENDER and message["Message-ID"].endswith("@example.org>")


def test_control_characters_are_dropped_from_the_text() -> None:
    text = compose(Mail("ann@example.com", "s", "a\x1b[31mb\x00c\r\nd"), SENDER, NOW)
    assert _text(_parsed(text)) == "a[31mbc\nd\n"


def test_a_notification_carries_one_click_unsubscribe_headers() -> None:
    link = "https://gauntlet.example.org/t/acme/unsubscribe/eyJ.abc-_"
    message = _parsed(compose(Mail("ann@example.com", "News", "hi", link), SENDER, NOW))
    assert message["List-Unsubscribe"] == f"<{link}>"
    assert message["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    plain = _parsed(compose(Mail("ann@example.com", "News", "hi"), SENDER, NOW))
    assert plain["List-Unsubscribe"] is None and plain["List-Unsubscribe-Post"] is None


@pytest.mark.parametrize(
    "link", ["javascript:alert(1)", "https://x/a b", "https://x/a>\r\nBcc: v@example.com", ""]
)
def test_an_unsubscribe_link_must_be_a_plain_http_url(link: str) -> None:
    with pytest.raises(MailRefused):
        compose(Mail("ann@example.com", "News", "hi", link), SENDER, NOW)
