"""The model catalog, prices and token limits the service reads as data are what the installed
litellm says: `python -m app.outbound.catalog_build --check` rebuilds them in a fresh process
(importing litellm, seconds) and compares. Rebuild them with `python -m
app.outbound.catalog_build` after upgrading litellm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_catalog_is_derived_from_the_installed_litellm() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.outbound.catalog_build", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert (ROOT / "app" / "outbound" / "litellm_catalog.json").is_file()
