"""Base URLs are parsed and matched on their parts, never as text: every lookalike is refused."""

from __future__ import annotations

import ipaddress

import pytest

from app.outbound.addresses import IPAddress
from app.outbound.policy import OutboundPolicy, OutboundRefused, parse_allowed_bases
from app.outbound.providers import ProviderPolicy
from app.outbound.urls import (
    AllowedBase,
    UrlRefused,
    matching_base,
    parse_allowed_base,
    parse_url,
)

# An allow-list of a loopback test server and a public host name.
FINDING_BASES = ["http://127.0.0.1:18961/v1", "http://allowed.example.com"]
PUBLIC = ipaddress.ip_address("93.184.216.34")


def public_dns(host: str, port: int) -> list[IPAddress]:
    return [PUBLIC]


def lookalike_policy() -> OutboundPolicy:
    return OutboundPolicy(bases=parse_allowed_bases(FINDING_BASES), providers=ProviderPolicy())


# Base URLs that only look like allowed ones (an earlier text-prefix check accepted 10 of the
# first 16), and more of the same kind.
REFUSED = [
    "http://127.0.0.1:18961/v1/../../internal",
    "http://127.0.0.1:18961/v10",
    "http://allowed.example.com.evil.example/v1",
    "http://allowed.example.comevil.example/",
    "http://allowed.example.com:6379/",
    "http://127.0.0.1:18961/v1/%2e%2e/%2e%2e/internal",
    "http://127.0.0.1:18961/v1/..%2f..%2finternal",
    "http://127.0.0.1:18961/v1/./../internal",
    "http://127.0.0.1:18961/v1/..",
    "http://127.0.0.1:18961/v1\\..\\..\\internal",
    "http://127.0.0.1:18961//v1",
    "http://user:secret@127.0.0.1:18961/v1",
    "http://allowed.example.com@evil.example/",
    "http://allowed.example.com:80@evil.example/",
    "http://127.0.0.1:18962/v1",
    "https://127.0.0.1:18961/v1",
    "http://localhost:18961/v1",
    "http://127.1:18961/v1",
    "http://0x7f000001:18961/v1",
    "http://2130706433:18961/v1",
    "http://0177.0.0.1:18961/v1",
    "http://[::ffff:127.0.0.1]:18961/v1",
    "http://[::1]:18961/v1",
    "http://127.0.0.1:18961/v1?next=../../internal",
    "http://127.0.0.1:18961/v1#fragment",
    " http://127.0.0.1:18961/v1",
    "http://127.0.0.1:18961/v1\n",
    "http://allowed.example.com\t.evil.example/",
    "http://127.0.0.1:18961/V1",
    "gopher://allowed.example.com/",
    "file:///etc/passwd",
    "//allowed.example.com/v1",
    "http:/allowed.example.com/v1",
    "http://allowed.example.com:/v1",
    "http://allowed.example.com:0/",
    "http://allowed.example.com:65536/",
    "http://allowed.example.com:+80/",
    "http://allowed_example.com/",
    "http://allowed.example.com\x00.evil.example/",
    "",
]


@pytest.mark.parametrize("candidate", REFUSED)
def test_base_urls_that_only_look_allowed_are_refused(candidate: str) -> None:
    with pytest.raises(OutboundRefused):
        lookalike_policy().checked_base(candidate, resolve=public_dns)


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("http://127.0.0.1:18961/v1", "http://127.0.0.1:18961/v1"),
        ("http://127.0.0.1:18961/v1/", "http://127.0.0.1:18961/v1"),
        ("HTTP://127.0.0.1:18961/v1/chat", "http://127.0.0.1:18961/v1/chat"),
        ("http://ALLOWED.Example.COM./v1", "http://allowed.example.com/v1"),
        ("http://allowed.example.com:80/x", "http://allowed.example.com/x"),
        ("http://allowed.example.com", "http://allowed.example.com"),
    ],
)
def test_allowed_bases_are_accepted_in_their_normalised_form(given: str, stored: str) -> None:
    assert lookalike_policy().checked_base(given, resolve=public_dns) == stored


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("https://Bücher.Example/v1", "https://xn--bcher-kva.example/v1"),
        # Full-width dots, mapped to dots as the resolver would see them.
        ("http://127\uff0e0\uff0e0\uff0e1/", "http://127.0.0.1"),
        ("http://[0:0:0:0:0:0:0:1]:8080/v1/", "http://[::1]:8080/v1"),
        ("https://h.example:443/", "https://h.example"),
        ("http://h.example:8080/a/b:c@d/", "http://h.example:8080/a/b:c@d"),
    ],
)
def test_urls_are_normalised(text: str, normalised: str) -> None:
    assert str(parse_url(text)) == normalised


@pytest.mark.parametrize(
    "text",
    ["http://[::1%25eth0]/", "http://[::1/", "http://[::1]x/", "http://a:b:c/", "http://h/é"],
)
def test_malformed_urls_are_refused(text: str) -> None:
    with pytest.raises(UrlRefused):
        parse_url(text)


def test_the_path_matches_at_segment_boundaries_only() -> None:
    base = parse_allowed_base("http://h.example/v1")
    assert base.matches(parse_url("http://h.example/v1"))
    assert base.matches(parse_url("http://h.example/v1/chat/completions"))
    assert not base.matches(parse_url("http://h.example/v10"))
    assert not base.matches(parse_url("http://h.example/v"))
    assert not base.matches(parse_url("http://h.example/"))
    root = parse_allowed_base("http://h.example/")
    assert root.matches(parse_url("http://h.example/anything/below"))


def test_a_port_wildcard_matches_any_port_of_that_host_and_path_only() -> None:
    base = parse_allowed_base("http://127.0.0.1:*/v1")
    assert base.port is None
    assert base.matches(parse_url("http://127.0.0.1:1/v1"))
    assert base.matches(parse_url("http://127.0.0.1:65535/v1/x"))
    assert not base.matches(parse_url("http://127.0.0.1:6379/"))
    assert not base.matches(parse_url("http://127.0.0.2:8000/v1"))
    assert str(base) == "http://127.0.0.1:*/v1"
    with pytest.raises(UrlRefused):
        parse_url("http://127.0.0.1:*/v1")  # a wildcard is for the allow-list, never a target


def test_the_most_specific_entry_wins() -> None:
    bases = parse_allowed_bases(
        ["http://h.example/", {"url": "http://h.example/team/v1", "api_key_env": "TEAM_KEY"}]
    )
    found = matching_base(parse_url("http://h.example/team/v1"), bases)
    assert found is not None and found.api_key_env == "TEAM_KEY"
    general = matching_base(parse_url("http://h.example/other"), bases)
    assert general is not None and general.api_key_env is None


@pytest.mark.parametrize(
    "entry",
    [
        "http://h.example/../x",
        {"url": "http://h.example", "api_key_env": "NOT A NAME"},
        {"url": "http://h.example", "allow_private": "yes"},
        {"url": "http://h.example", "password": "x"},
        {"api_key_env": "K"},
        42,
    ],
)
def test_malformed_allow_list_entries_are_refused(entry: object) -> None:
    with pytest.raises(ValueError, match="entry 0"):
        parse_allowed_bases([entry])  # type: ignore[list-item]


def test_entries_name_private_destinations_explicitly() -> None:
    assert parse_allowed_base("http://10.0.0.5/v1").names_private_destination
    assert parse_allowed_base("http://localhost:8000/v1").names_private_destination
    assert parse_allowed_base(
        {"url": "http://vllm.internal/v1", "allow_private": True}
    ).names_private_destination
    assert not parse_allowed_base("http://vllm.internal/v1").names_private_destination
    assert AllowedBase("http", "h", None, "").names_private_destination is False
