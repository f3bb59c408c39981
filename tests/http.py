"""HTTP clients for the servers the tests start on loopback.

httpx builds a TLS context for every client it makes (the system's CA certificates loaded:
~30 ms of CPU), and `httpx.get` makes a client for every call, so a test polling /healthz five
times a second spent most of its CPU there. The tests speak plain HTTP to their own servers;
every client made here shares one context, made once a process (0.1 ms a client)."""

from __future__ import annotations

import ssl
from typing import Any

import httpx

_TLS = ssl.create_default_context()


# A connection idle this long is not used again: the servers close theirs after 5 s idle
# (uvicorn's default), and a request sent on a connection as the server closes it gets no
# answer ("Server disconnected without sending a response").
KEEPALIVE_SECONDS = 2.0


def client(**options: Any) -> httpx.Client:
    """An `httpx.Client` (the same options, httpx's default limits) with the shared context,
    dropping idle connections before the server does."""
    options.setdefault(
        "limits",
        httpx.Limits(
            max_connections=100, max_keepalive_connections=20, keepalive_expiry=KEEPALIVE_SECONDS
        ),
    )
    return httpx.Client(verify=_TLS, **options)


def request(method: str, url: str, **options: Any) -> httpx.Response:
    """One request from a client of its own, as `httpx.request` sends it (5 s timeout unless
    given)."""
    timeout = options.pop("timeout", 5.0)
    with client(timeout=timeout) as http:
        return http.request(method, url, **options)


def get(url: str, **options: Any) -> httpx.Response:
    return request("GET", url, **options)


def post(url: str, **options: Any) -> httpx.Response:
    return request("POST", url, **options)
