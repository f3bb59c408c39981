"""The scorer sandbox as the service configures it (app/scoring/sandbox/pool.py does the work)."""

from __future__ import annotations

import logging

from app.kit.config import get_settings
from app.scoring.sandbox.pool import Sandbox, SandboxSettings, describe_isolation, get_sandbox

log = logging.getLogger(__name__)


def sandbox_settings() -> SandboxSettings:
    settings = get_settings()
    return SandboxSettings(
        isolation=settings.resolved_scorer_sandbox,
        allowed_modules=settings.scorer_module_prefixes,
        pool_size=settings.scorer_pool_size,
    )


def scorer_sandbox() -> Sandbox:
    """This process's sandbox; a refusing stand-in where the required one cannot run."""
    return get_sandbox(sandbox_settings())


def describe_scorer_sandbox() -> tuple[str, str]:
    """(level, message): what isolates scorer plugins here. Probing starts one real sandbox
    (a few tens of milliseconds), once per process."""
    return describe_isolation(sandbox_settings())


def log_scorer_sandbox(logger: logging.Logger = log) -> None:
    """The start-up line saying what isolates scorer plugins here, or that plugin scoring is
    refused (a warning when the sandbox is weaker than bubblewrap, an error when refused)."""
    level, message = describe_scorer_sandbox()
    logger.log(
        {"info": logging.INFO, "warning": logging.WARNING}.get(level, logging.ERROR), message
    )
