"""A pytest plugin: where the result counts, a test that cannot run fails instead of skipping.

`make test` and CI set GAUNTLET_TEST_STRICT (CI services also set CI); then every skip (no
browser, no service, a missing tool) is reported as a failure that keeps its reason, so a run
cannot be green with part of the suite left out. tests/conftest.py loads it.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

STRICT_VARIABLES = ("GAUNTLET_TEST_STRICT", "CI")


def strict() -> bool:
    return any(
        os.environ.get(name, "").lower() not in ("", "0", "false") for name in STRICT_VARIABLES
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and strict():
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = (
            f"skipped, but skips are not allowed here (GAUNTLET_TEST_STRICT): {reason}"
        )
    return report
