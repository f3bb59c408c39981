"""A message as it goes out, built with `email.message.EmailMessage`: the standard library
encodes every header and refuses a line break in one, so text a participant chose (a handle,
a challenge's title) can only ever be text. Subjects are made one line and cut at
`MAX_SUBJECT_CHARS`; a body longer than `MAX_TEXT_CHARS` is refused. Bodies are plain text
(no HTML to sanitise), sent quoted-printable, so the whole message is ASCII and any server
takes it.

A message carrying a notification has an unsubscribe link in its text and in the headers mail
programs show as a button (RFC 2369 `List-Unsubscribe`; RFC 8058 `List-Unsubscribe-Post`: the
program POSTs `List-Unsubscribe=One-Click` to that address, with no cookie and no form).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, make_msgid

from app.outbound.smtp import one_address

MAX_SUBJECT_CHARS = 200
MAX_TEXT_CHARS = 50_000
# Characters a URL between angle brackets may hold (RFC 3986's, no space, no '<' or '>').
_URL = re.compile(r"^https?://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+$")
# Control characters but the line break and the tab.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BLANKS = re.compile(r"\s+")


class MailRefused(ValueError):
    """A message that cannot be built as asked (too long, a bad address or link)."""


@dataclass(frozen=True)
class Mail:
    """What a caller says: to whom, about what, the text, and (a notification) the link that
    stops such messages."""

    recipient: str
    subject: str
    text: str
    unsubscribe_url: str | None = None


def one_line(subject: str) -> str:
    """The subject as a header holds it: one line, whitespace runs as one space, at most
    `MAX_SUBJECT_CHARS` characters (cut with an ellipsis)."""
    line = _BLANKS.sub(" ", _CONTROL.sub(" ", subject)).strip()
    if len(line) > MAX_SUBJECT_CHARS:
        line = line[: MAX_SUBJECT_CHARS - 1].rstrip() + "…"
    return line


def compose(mail: Mail, sender: str, now: datetime) -> str:
    """The whole message (ASCII, CRLF line ends), ready for an SMTP server or an .eml file."""
    if len(mail.text) > MAX_TEXT_CHARS:
        raise MailRefused(f"a message's text is at most {MAX_TEXT_CHARS} characters")
    try:
        to = one_address(mail.recipient)
        sender_address = one_address(sender)
    except ValueError as exc:
        raise MailRefused(f"not an address: {exc}") from None
    message = EmailMessage(policy=SMTP)
    message["From"] = sender_address
    message["To"] = to
    message["Subject"] = one_line(mail.subject)
    message["Date"] = format_datetime(now)
    message["Message-ID"] = make_msgid(domain=sender_address.domain)
    # RFC 3834: no out-of-office replies to a machine.
    message["Auto-Submitted"] = "auto-generated"
    if mail.unsubscribe_url is not None:
        if not _URL.match(mail.unsubscribe_url):
            raise MailRefused("the unsubscribe link is not an http(s) URL")
        message["List-Unsubscribe"] = f"<{mail.unsubscribe_url}>"
        message["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    text = _CONTROL.sub("", mail.text.replace("\r\n", "\n").replace("\r", "\n"))
    message.set_content(text, charset="utf-8", cte="quoted-printable")
    return message.as_string()
