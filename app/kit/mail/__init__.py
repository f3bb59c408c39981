"""Mail: messages to people, sent off the request path, never lost while a server is down.

A service that has something to say asks `service.queue` within its transaction: the message
is built there (`message.compose`: headers through `email.message.EmailMessage`, sizes
bounded) and stored in the outbox (`models.OutboundMail`), and its id is sent to a worker once
the transaction commits. The worker (`delivery`) claims the row under a lease (app.kit.lease, as
attempts are claimed) and hands the message over (`transport`): to the operator's SMTP server
(`GAUNTLET_SMTP_URL`), or, without one, into `<data dir>/mail/` as an .eml file. A message the
server did not take waits and is tried again, the wait doubling each time
(`GAUNTLET_MAIL_RETRY_BASE_SECONDS`, up to an hour); after `GAUNTLET_MAIL_MAX_TRIES` tries, or
at once when the server refuses it for good (a 5xx answer to the recipient or the content),
it is recorded as failed with the server's answer. The periodic sweep (`delivery.sweep`) sends
the messages whose wait is over, those whose task never reached a worker, and those whose
worker died. A delivered message keeps its envelope (recipient, subject, status) for the
console; its text, which may carry a single-use link, is dropped from the database.

This package knows no domain: who gets which message is the callers' (app.tenant's account
mail). docs/mail.md describes it for operators.
"""
