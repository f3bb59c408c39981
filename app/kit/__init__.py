"""Shared infrastructure: settings, the database and the unit of work, errors and their codes,
routing and middleware, observability, the broker, leased runs, the outbox, each tenant's
share of the API. It imports no domain; below it lie the engine and the outbound policy."""
