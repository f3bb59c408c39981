"""Settings, read from the environment with the prefix GAUNTLET_ (and from a `.env` file).

Two modes: `embedded` (the default for `make run`: SQLite under the data dir, a filesystem broker,
offline models, a generated admin token) and `production` (PostgreSQL and Redis). Production
refuses the embedded defaults: a service must not start with a guessable admin token or a
throwaway database by accident.
"""

from __future__ import annotations

import secrets
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

MIN_ADMIN_TOKEN_LENGTH = 24


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GAUNTLET_", env_file=".env", extra="ignore")

    mode: Literal["embedded", "production"] = "embedded"
    data_dir: Path = Path(".gauntlet")
    database_url: str | None = None
    broker_url: str | None = None
    admin_token: str | None = None
    # Signs web-UI session cookies and CSRF tokens.
    secret_key: str | None = None

    # How long a worker may hold an attempt without a sign of life before another takes it over.
    attempt_lease_seconds: int = Field(default=120, ge=5, le=3600)
    # An attempt still queued this long after its last enqueue is sent again by the sweep.
    queued_requeue_seconds: int = Field(default=60, ge=1, le=86400)
    sweep_interval_seconds: float = Field(default=30.0, gt=0, le=3600)
    # Deliveries after which the sweep gives up and ends the attempt with an error.
    max_attempt_runs: int = Field(default=5, ge=1, le=100)
    attempt_time_limit_seconds: int = Field(default=900, ge=10, le=86400)

    max_prompt_chars: int = Field(default=20_000, ge=1, le=1_000_000)
    max_request_bytes: int = Field(default=1_000_000, ge=1024)
    model_global_concurrency: int = Field(default=50, ge=1, le=10_000)
    model_per_model_concurrency: int = Field(default=20, ge=1, le=10_000)
    model_timeout_seconds: float = Field(default=60.0, gt=0, le=3600)
    model_max_tries: int = Field(default=4, ge=1, le=20)
    model_retry_base_delay_seconds: float = Field(default=0.5, ge=0, le=60)
    # The Celery queue of this deployment; deployments (or test runs) sharing one Redis keep
    # their tasks apart by using different queue names.
    queue: str = Field(default="attempts", pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    # Prepended to every Redis key the broker writes (kombu's `global_keyprefix`), so that
    # deployments or test runs sharing one Redis database never touch each other's keys.
    redis_key_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_.:-]{0,100}$")
    # Threads per API process for blocking request work (database calls). Few: each thread
    # fights the others for the GIL (bench/README.md: p99 at 500 submissions/s, 4 against 8).
    api_threads: int = Field(default=4, ge=1, le=256)
    worker_concurrency: int = Field(default=2, ge=1, le=512)

    # Prefixes a challenge's `target.api_base` may start with. Empty: no custom base URLs, since
    # a base URL makes the worker send requests wherever a tenant admin points it.
    allowed_api_bases: list[str] = Field(default_factory=list)
    # Comma-separated module prefixes scorer entrypoints may come from. The sandbox reads the
    # same variable, so the API's check and the sandbox's agree.
    scorer_allowed_modules: str = "scorers."
    # Pre-started scorer processes per worker process (the sandbox reads this variable itself).
    scorer_pool_size: int = Field(default=2, ge=1, le=64)
    scorer_max_timeout_ms: int = Field(default=30_000, ge=1, le=600_000)

    seed_demo: bool = True

    # Observability (README, "Operations"). Logs: JSON lines or readable ones; by default JSON
    # in production and readable in the embedded mode.
    log_format: Literal["json", "console"] | None = None
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # One log line per HTTP request (off by default: metrics count requests, and the busiest
    # route should not pay for a line each).
    access_log: bool = False
    # Bearer token Prometheus uses for /metrics (the admin token works too).
    metrics_token: str | None = None
    # A worker's own HTTP endpoint (/healthz, /metrics); unset: none.
    worker_http_host: str = "127.0.0.1"
    worker_http_port: int | None = Field(default=None, ge=1, le=65535)
    # How often a worker records that it is alive; /healthz counts workers seen within three
    # of these.
    worker_heartbeat_seconds: float = Field(default=10.0, gt=0, le=600)

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_case_level(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _refuse_unsafe_production(self) -> Settings:
        if self.mode != "production":
            return self
        problems = []
        if not self.database_url or self.database_url.startswith("sqlite"):
            problems.append("GAUNTLET_DATABASE_URL must name a PostgreSQL database")
        if not self.broker_url or not self.broker_url.startswith(("redis://", "rediss://")):
            problems.append("GAUNTLET_BROKER_URL must name a Redis broker")
        if not self.admin_token or len(self.admin_token) < MIN_ADMIN_TOKEN_LENGTH:
            problems.append(
                f"GAUNTLET_ADMIN_TOKEN must be set to a secret of at least "
                f"{MIN_ADMIN_TOKEN_LENGTH} characters"
            )
        if not self.secret_key or len(self.secret_key) < MIN_ADMIN_TOKEN_LENGTH:
            problems.append(
                f"GAUNTLET_SECRET_KEY must be set to a secret of at least "
                f"{MIN_ADMIN_TOKEN_LENGTH} characters"
            )
        if problems:
            raise ValueError("unsafe production settings: " + "; ".join(problems))
        return self

    @property
    def resolved_log_format(self) -> Literal["json", "console"]:
        if self.log_format is not None:
            return self.log_format
        return "json" if self.mode == "production" else "console"

    @property
    def scorer_module_prefixes(self) -> tuple[str, ...]:
        return tuple(p.strip() for p in self.scorer_allowed_modules.split(",") if p.strip())

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'gauntlet.db').resolve()}"

    @property
    def resolved_broker_url(self) -> str:
        # A host name, though the folder transport ignores it: without one kombu warns twice.
        return self.broker_url or "filesystem://localhost/"

    @property
    def broker_folder(self) -> Path:
        return (self.data_dir / "broker").resolve()

    def _generated_secret(self, name: str, prefix: str) -> str:
        """A secret made once and kept in the data dir (embedded mode only: production refuses
        to start without explicit secrets)."""
        path = self.data_dir / name
        if path.exists():
            return path.read_text().strip()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        value = prefix + secrets.token_urlsafe(24)
        path.write_text(value + "\n")
        path.chmod(0o600)
        return value

    @property
    def resolved_admin_token(self) -> str:
        return self.admin_token or self._generated_secret("admin_token", "gadm_")

    @property
    def resolved_secret_key(self) -> str:
        return self.secret_key or self._generated_secret("secret_key", "")


@lru_cache
def get_settings() -> Settings:
    return Settings()
