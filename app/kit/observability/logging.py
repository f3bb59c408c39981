"""Logging for every process: JSON lines (production) or readable lines (`make run`).

The standard library's loggers stay the interface (`logging.getLogger(__name__)` everywhere,
uvicorn's and Celery's included); structlog's `ProcessorFormatter` renders their records.
Each line carries the current request id and attempt id (see `context`). The configuration is
a `logging.config.dictConfig` dictionary, so uvicorn can apply it in each of its worker
processes, and Celery through its `setup_logging` signal.
"""

from __future__ import annotations

import logging
import logging.config
import os
import sys
from collections.abc import MutableMapping
from typing import Any, Literal

import structlog

from app.kit.observability import context

LogFormat = Literal["json", "console"]

# Libraries that log at INFO about every call or connection: quiet unless asked.
_CHATTY_LOGGERS = (
    "LiteLLM",
    "LiteLLM Router",
    "LiteLLM Proxy",
    "httpx",
    "httpcore",
    "alembic",
)
# Fields the service passes as `extra={...}` that become JSON keys; others' extras (uvicorn's
# `color_message`, litellm's markers) are left out.
EXTRA_FIELDS = ("method", "route", "status", "duration_ms")


def _add_ids(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    for key, value in context.current().items():
        event.setdefault(key, value)
    return event


def _add_process(_: Any, __: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    event.setdefault("pid", os.getpid())
    return event


def build_formatter(log_format: LogFormat = "json") -> structlog.stdlib.ProcessorFormatter:
    """The formatter of every handler (named in `logging_config` as a factory)."""
    pre_chain: list[Any] = [
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        # Fields given as `extra={...}` to a standard-library logging call.
        structlog.stdlib.ExtraAdder(allow=EXTRA_FIELDS),
        _add_ids,
    ]
    renderer: Any
    if log_format == "json":
        pre_chain.append(_add_process)
        final: list[Any] = [
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ]
        return structlog.stdlib.ProcessorFormatter(processors=final, foreign_pre_chain=pre_chain)
    renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    return structlog.stdlib.ProcessorFormatter(
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        foreign_pre_chain=pre_chain,
    )


def logging_config(log_format: LogFormat, level: str = "INFO") -> dict[str, Any]:
    """A `dictConfig` dictionary: one stderr handler on the root logger, in `log_format`."""
    level = level.upper()
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"gauntlet": {"()": f"{__name__}.build_formatter", "log_format": log_format}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "formatter": "gauntlet",
                "stream": "ext://sys.stderr",
            }
        },
        "root": {"handlers": ["stderr"], "level": level},
        "loggers": {
            # uvicorn's own handlers would print its lines a second time, unformatted.
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": True},
            **{name: {"level": "WARNING"} for name in _CHATTY_LOGGERS},
        },
    }


def configure_logging(log_format: LogFormat, level: str = "INFO") -> None:
    logging.config.dictConfig(logging_config(log_format, level))
    # Python warnings (a library's deprecation notice) become log lines in the same format.
    logging.captureWarnings(True)
