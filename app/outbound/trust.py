"""The certificate authorities outbound TLS trusts: the file of PEM certificates that
`SSL_CERT_FILE` names, else the folder of hashed ones that `SSL_CERT_DIR` names, else certifi's
bundle (the variables OpenSSL, curl and httpx read).

httpx falls back to certifi's bundle when either variable names nothing that exists, so a typo
in a deployment's path would silently trust the public authorities instead of the operator's
(and fail every call to a server with a private certificate, far from the cause). Here a
variable that names no such file or folder is an error naming it: at start-up of the service
(app.kit.config) and of `gauntlet eval run`, and in the transport if the environment changed since.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TrustedAuthorities:
    """Where the authorities come from: a file, a folder, or (both None) certifi's bundle."""

    cert_file: str | None = None
    cert_dir: str | None = None

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> TrustedAuthorities:
        """The authorities `SSL_CERT_FILE` and `SSL_CERT_DIR` name (an empty one is unset);
        ValueError, naming the variable, when one names no file (no folder)."""
        cert_file = environ.get("SSL_CERT_FILE") or None
        cert_dir = environ.get("SSL_CERT_DIR") or None
        if cert_file is not None and not os.path.isfile(cert_file):
            raise ValueError(
                f"SSL_CERT_FILE names {cert_file!r}, which is not a file: point it at a file of "
                "PEM certificates or unset it (certifi's bundle is trusted then)"
            )
        if cert_dir is not None and not os.path.isdir(cert_dir):
            raise ValueError(
                f"SSL_CERT_DIR names {cert_dir!r}, which is not a folder: point it at a folder "
                "of hashed certificates or unset it (certifi's bundle is trusted then)"
            )
        return cls(cert_file=cert_file, cert_dir=cert_dir)
