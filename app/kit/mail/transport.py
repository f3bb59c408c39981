"""Handing a message over: to the operator's SMTP server with the standard library's
`smtplib`, or, without one, into a folder as an .eml file.

Sending runs on a worker (a Celery task), never in a request, so the blocking client costs
no request anything. Every network step has a timeout. A failure is `MailNotSent`, transient
(the server could not be reached, answered 4xx, dropped the connection: tried again later) or
permanent (`permanent`: a 5xx answer to the recipient or to the message itself, which a later
try would get too).
"""

from __future__ import annotations

import os
import smtplib
import ssl
import uuid
from datetime import datetime
from functools import lru_cache
from pathlib import Path

from app.outbound.smtp import SmtpServer
from app.outbound.trust import TrustedAuthorities

# Seconds each network step (connect, every command) may take; a task's time limit bounds
# the whole send.
SMTP_TIMEOUT_SECONDS = 30.0
# How much of a server's answer is kept as the reason of a failure.
REASON_CHARS = 400


class MailNotSent(Exception):
    """The message was not handed over; `permanent` when trying again cannot help."""

    def __init__(self, reason: str, *, permanent: bool = False) -> None:
        super().__init__(reason[:REASON_CHARS])
        self.reason = reason[:REASON_CHARS]
        self.permanent = permanent


@lru_cache(maxsize=4)
def _tls(authorities: TrustedAuthorities) -> ssl.SSLContext:
    """Certificates checked against the host name, with the authorities every outbound TLS
    connection trusts (`SSL_CERT_FILE` / `SSL_CERT_DIR`, else certifi's bundle)."""
    if authorities.cert_file is not None:
        return ssl.create_default_context(cafile=authorities.cert_file)
    if authorities.cert_dir is not None:
        return ssl.create_default_context(capath=authorities.cert_dir)
    # certifi loads only where the system gives no CA file or folder.
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


def _answer(code: int, text: bytes | str) -> str:
    said = text.decode(errors="replace") if isinstance(text, bytes) else text
    return f"{code} {' '.join(said.split())}"


def send_smtp(
    server: SmtpServer, sender: str, recipient: str, message: str, local_hostname: str
) -> str:
    """Hands the message to the server (envelope: `sender` to `recipient`); returns where it
    went. Raises `MailNotSent`."""
    context = _tls(TrustedAuthorities.from_environ(os.environ))
    try:
        client: smtplib.SMTP
        if server.implicit_tls:
            client = smtplib.SMTP_SSL(
                server.host,
                server.port,
                local_hostname=local_hostname,
                timeout=SMTP_TIMEOUT_SECONDS,
                context=context,
            )
        else:
            client = smtplib.SMTP(
                server.host,
                server.port,
                local_hostname=local_hostname,
                timeout=SMTP_TIMEOUT_SECONDS,
            )
        with client:
            client.ehlo()
            if not server.implicit_tls:
                if client.has_extn("starttls"):
                    client.starttls(context=context)
                    client.ehlo()
                elif server.username is not None and not server.loopback:
                    raise MailNotSent(
                        f"{server.host} offers no STARTTLS: the credentials of "
                        "GAUNTLET_SMTP_URL are sent only over TLS (use smtps:// or a server "
                        "that offers STARTTLS)"
                    )
            if server.username is not None:
                client.login(server.username, server.password or "")
            client.sendmail(sender, [recipient], message.encode("ascii"))
    except smtplib.SMTPRecipientsRefused as exc:
        code, text = next(iter(exc.recipients.values()))
        raise MailNotSent(
            f"recipient refused: {_answer(code, text)}", permanent=code >= 500
        ) from None
    except smtplib.SMTPDataError as exc:
        raise MailNotSent(
            f"message refused: {_answer(exc.smtp_code, exc.smtp_error)}",
            permanent=exc.smtp_code >= 500,
        ) from None
    except smtplib.SMTPResponseException as exc:
        # The sender refused, a failed login, a command the server would not take: the
        # operator's settings, which may be fixed before the next try.
        raise MailNotSent(f"{_answer(exc.smtp_code, exc.smtp_error)}") from None
    except ssl.SSLError as exc:
        raise MailNotSent(f"TLS with {server.host}:{server.port} failed: {exc}") from None
    except (smtplib.SMTPException, OSError) as exc:
        reason = str(exc) or type(exc).__name__
        raise MailNotSent(f"{server.host}:{server.port}: {reason}") from None
    return f"smtp {server.host}:{server.port}"


def write_to_folder(folder: Path, mail_id: uuid.UUID, created_at: datetime, message: str) -> str:
    """Writes the message as `<folder>/<time>-<id>.eml` (readable by its owner only: it may
    hold a single-use link), atomically: a reader sees the whole file or none. Returns the
    file's name."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{created_at:%Y%m%dT%H%M%S}-{mail_id}.eml"
    final = folder / name
    partial = folder / f".{name}.writing"
    with open(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
        file.write(message)
    os.replace(partial, final)
    return name
