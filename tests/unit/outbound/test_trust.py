"""The certificate authorities outbound TLS trusts (app.outbound.trust): `SSL_CERT_FILE` or
`SSL_CERT_DIR` naming nothing stops the service and `gauntlet eval run` at start-up, naming the
variable, instead of trusting certifi's bundle in their place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from app.evaluation.commands.cli import CliError, _operator_policy
from app.kit.config import Settings
from app.outbound import transport
from app.outbound.policy import OutboundPolicy
from app.outbound.trust import TrustedAuthorities


def _trust_environment(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    for name in ("SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_the_authorities_are_the_file_or_folder_named_else_certifi(tmp_path: Path) -> None:
    bundle = tmp_path / "private-ca.pem"
    bundle.write_text("")
    assert TrustedAuthorities.from_environ({}) == TrustedAuthorities(None, None)
    assert TrustedAuthorities.from_environ({"SSL_CERT_FILE": "", "SSL_CERT_DIR": ""}) == (
        TrustedAuthorities(None, None)
    )
    assert TrustedAuthorities.from_environ({"SSL_CERT_FILE": str(bundle)}) == (
        TrustedAuthorities(str(bundle), None)
    )
    assert TrustedAuthorities.from_environ({"SSL_CERT_DIR": str(tmp_path)}) == (
        TrustedAuthorities(None, str(tmp_path))
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SSL_CERT_FILE", "missing.pem"),
        ("SSL_CERT_FILE", "."),  # a folder is not a file of certificates
        ("SSL_CERT_DIR", "missing-folder"),
    ],
)
def test_a_variable_naming_nothing_is_an_error_naming_it(
    tmp_path: Path, name: str, value: str
) -> None:
    path = str(tmp_path / value)
    with pytest.raises(ValueError, match=re.escape(f"{name} names '{path}', which is not a")):
        TrustedAuthorities.from_environ({name: path})


def test_the_service_does_not_start_with_a_missing_certificate_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _trust_environment(monkeypatch, SSL_CERT_FILE=str(tmp_path / "private-ca.pem"))
    with pytest.raises(ValidationError, match=r"SSL_CERT_FILE names .*private-ca\.pem"):
        Settings(_env_file=None)  # type: ignore[call-arg]
    (tmp_path / "private-ca.pem").write_text("")
    assert Settings(_env_file=None)  # type: ignore[call-arg]


def test_an_eval_run_does_not_start_with_a_missing_certificate_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GAUNTLET_ALLOWED_API_BASES", raising=False)
    _trust_environment(monkeypatch, SSL_CERT_DIR=str(tmp_path / "cas"))
    with pytest.raises(CliError, match="SSL_CERT_DIR names"):
        _operator_policy()
    (tmp_path / "cas").mkdir()
    assert _operator_policy()


def test_an_https_client_made_after_the_file_went_away_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _trust_environment(monkeypatch, SSL_CERT_FILE=str(tmp_path / "gone.pem"))
    route = OutboundPolicy.unrestricted().route("https://models.example.com/v1")
    with pytest.raises(ValueError, match="SSL_CERT_FILE names"):
        transport.GuardedClient(route)
