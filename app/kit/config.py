"""Settings, read from the environment with the prefix GAUNTLET_ (and from a `.env` file).

Two modes: `embedded` (the default for `make run`: SQLite under the data dir, a filesystem broker,
offline models, a generated admin token) and `production` (PostgreSQL and Redis). Production
refuses the embedded defaults: a service must not start with a guessable admin token or a
throwaway database by accident.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from app.evaluation.engine.bounds import DEFAULT_MAX_OUTPUT_CHARS, MIN_OUTPUT_CHARS
from app.evaluation.engine.storable import STORED_VALUE_CHARS
from app.kit.strength import secret_problem
from app.outbound.policy import OutboundPolicy, parse_allowed_bases
from app.outbound.providers import ProviderPolicy, validate_provider_names
from app.outbound.smtp import SmtpServer, one_address
from app.outbound.trust import TrustedAuthorities


class Settings(BaseSettings):
    # Errors never echo the input: it holds secrets.
    model_config = SettingsConfigDict(
        env_prefix="GAUNTLET_", env_file=".env", extra="ignore", hide_input_in_errors=True
    )

    mode: Literal["embedded", "production"] = "embedded"
    data_dir: Path = Path(".gauntlet")
    database_url: str | None = None
    broker_url: str | None = None
    admin_token: str | None = None
    # Signs web-UI session cookies and CSRF tokens.
    secret_key: str | None = None

    # How long a worker may hold an attempt (a self-test, a match chunk) without a sign of life
    # before another takes it over. Renewed every third of it; with the sweep's interval it
    # bounds how long a dead worker's work waits: at most 10 + 5 s (docs/capacity.md).
    attempt_lease_seconds: int = Field(default=10, ge=5, le=3600)
    # An attempt still queued this long after its last enqueue is sent again by the sweep (its
    # message was lost); a dead worker's attempt is sent again as soon as its lease ran out.
    queued_requeue_seconds: int = Field(default=60, ge=1, le=86400)
    sweep_interval_seconds: float = Field(default=5.0, gt=0, le=3600)
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
    # The most characters of a model's answer any call keeps (stored, served, verified); a
    # call with max_tokens keeps fewer (app.evaluation.engine.bounds, docs/engine.md).
    max_output_chars: int = Field(
        default=DEFAULT_MAX_OUTPUT_CHARS, ge=MIN_OUTPUT_CHARS, le=STORED_VALUE_CHARS // 4
    )
    # The Celery queue of this deployment; deployments (or test runs) sharing one Redis keep
    # their tasks apart by using different queue names.
    queue: str = Field(default="attempts", pattern=r"^[A-Za-z0-9_.-]{1,100}$")
    # Prepended to every Redis key the broker writes (kombu's `global_keyprefix`), so that
    # deployments or test runs sharing one Redis database never touch each other's keys.
    redis_key_prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_.:-]{0,100}$")
    # Threads per API process for blocking request work (database calls). Few: each thread
    # fights the others for the GIL (bench/README.md: p99 at 500 submissions/s, 4 against 8).
    api_threads: int = Field(default=4, ge=1, le=256)
    # Requests one API process works on at once; more get 503 with Retry-After at once, so an
    # admitted request waits behind at most this many for a thread (docs/capacity.md).
    api_max_in_flight: int = Field(default=64, ge=1, le=100_000)
    # Requests one client (address) may have in flight at one API process; more get 429, so
    # one client's burst cannot take every place from the others.
    api_max_in_flight_per_client: int = Field(default=16, ge=1, le=100_000)
    # Requests one tenant (its API keys and signed-in web sessions) has in flight across every
    # API process; more get 429 at once, so a tenant's flood cannot take the others' places.
    # The anonymous readers of one tenant's public pages and boards have a share of this size
    # of their own. Counted in the rate limits' Redis. As many as the default layout's threads
    # (two processes of 4): docs/capacity.md.
    api_max_in_flight_per_tenant: int = Field(default=8, ge=1, le=100_000)
    # Attempts one tenant may have queued or running at once (entries, practice and test runs);
    # a submission past it gets 429 with Retry-After, so a tenant cannot fill the workers'
    # queue. Workers serve tenants in turn whatever the share (docs/capacity.md).
    max_queued_per_tenant: int = Field(default=500, ge=1, le=1_000_000)
    # Anonymous reads of public boards (`/v1/public/...`) are served from a copy this young
    # (one database read per URL and interval, however large the crowd); 0 turns it off.
    public_cache_seconds: float = Field(default=1.0, ge=0, le=60)
    # Pooled database connections per process (and as many more on demand). A request holds
    # one only while a thread works on it, so an API process uses at most `api_threads`.
    database_pool_size: int = Field(default=10, ge=1, le=1000)
    # How long a process waits for a pooled connection before the request fails with 503.
    database_pool_timeout_seconds: float = Field(default=10.0, gt=0, le=300)
    worker_concurrency: int = Field(default=2, ge=1, le=512)
    # Whether a worker imports litellm and makes its warm-up calls before its pool forks, so
    # that no attempt's first model call is timed with litellm's imports in it (~5 s of CPU at
    # each worker start). Off, the first call through litellm in each pool process pays them
    # inside its attempt: for workers that serve only offline models and servers named by base
    # URL (the direct transport), such as a test deployment.
    worker_warm_up: bool = True
    # Red-blue boards (docs/redblue.md): the share of one worker process that a board's ratings
    # recomputes, and its interval refreshes, may each take at most. After one that took t
    # seconds, the next waits t · (1 - share) / share (and at least 0.25 s), so the share
    # holds however many matches the board has.
    redblue_recompute_share: float = Field(default=0.1, gt=0, le=1)
    redblue_intervals_share: float = Field(default=0.05, gt=0, le=1)

    # Base URLs (OpenAI-compatible servers) a challenge's `target.api_base` or
    # `benchmark.actor_api_base` may name, matched on parsed parts (docs/outbound.md): a JSON
    # list of URLs or of {"url", "api_key_env", "allow_private"}. Empty: no custom base URLs,
    # since a base URL makes the worker send requests wherever a tenant admin points it.
    allowed_api_bases: list[str | dict[str, Any]] = Field(default_factory=list)
    # litellm provider prefixes models may use; "*" is every provider whose default base URL is
    # not local (docs/outbound.md). `offline/` models are always allowed.
    allowed_providers: list[str] = Field(default_factory=lambda: ["*"])
    # Model spend: no call starts once an attempt, or a tenant in one UTC day, has spent this.
    attempt_cost_budget_usd: float = Field(default=1.0, gt=0, le=1_000_000)
    tenant_daily_cost_budget_usd: float = Field(default=20.0, gt=0, le=1_000_000_000)
    # What a call whose price litellm does not know is charged to the budgets, per million
    # input and output tokens (it is not free just because it is unpriced).
    unpriced_usd_per_million_tokens: float = Field(default=10.0, ge=0, le=1_000_000)
    # The only folder (besides the data bundled with each benchmark) whose files tenant
    # benchmarks may read (`jsonl` `options.path`, `arcagi2` `options.data_dir`).
    benchmark_data_dir: Path | None = None
    # Comma-separated module prefixes scorer entrypoints may come from. The sandbox reads the
    # same variable, so the API's check and the sandbox's agree.
    scorer_allowed_modules: str = "scorers."
    # Pre-started scorer processes per worker process (the sandbox reads this variable itself).
    scorer_pool_size: int = Field(default=2, ge=1, le=64)
    scorer_max_timeout_ms: int = Field(default=30_000, ge=1, le=600_000)
    # How scorer plugins are isolated (docs/sandbox.md): "bubblewrap" (namespaces; plugin
    # scoring is refused where it cannot run), "process" (a weaker sandbox, accepted knowingly)
    # or "auto" (bubblewrap where it runs, else "process" with a warning). Unset: "bubblewrap"
    # in production, "auto" in embedded mode.
    scorer_sandbox: Literal["auto", "bubblewrap", "process"] | None = None

    seed_demo: bool = True

    # Who makes tenants (docs/accounts.md, "Hosting"): `open`, anyone from the web ("Host a
    # challenge"), active at once; `approval`, anyone from the web, pending until a platform
    # admin approves it; `closed`, the platform admin alone (`POST /v1/tenants`). Unset:
    # `open` in embedded mode (`make run` listens on 127.0.0.1), `approval` in production.
    tenant_signup: Literal["open", "approval", "closed"] | None = None

    # No longer read: kinds beyond the built-in ones are installed packages declaring an entry
    # point (app.challenge.registry). Kept so that a deployment still setting it is told so at
    # start-up, instead of losing its kinds without a word.
    extra_challenge_kinds: str = ""

    # Reverse proxies (addresses or networks, comma-separated) whose X-Forwarded-For and
    # X-Forwarded-Proto headers are believed; uvicorn gets them as `forwarded_allow_ips`.
    # Empty: none, so the address a connection comes from is the client's, whatever it sends.
    trusted_proxies: str = ""
    # Session cookies carry the Secure flag (browsers send them over HTTPS only). Unset: on in
    # production, off in embedded mode (plain HTTP on 127.0.0.1); on for HTTPS requests always.
    secure_cookies: bool | None = None
    # Where sign-in limits and lockouts, and each tenant's requests in flight, are counted,
    # shared by every API process: a Redis URL. Unset: the broker's Redis; in embedded mode
    # (one API process) this process's memory.
    rate_limit_url: str | None = None

    # Mail (docs/mail.md): the SMTP server as one URL, `smtp://[user:pass@]host[:port]`
    # (STARTTLS when the server offers it) or `smtps://...` (TLS from the start). Unset: mail is
    # written to `<data dir>/mail/` as .eml files and listed on the tenant's console.
    smtp_url: str | None = None
    # The From of every message: `Name <address>` or an address.
    mail_from: str | None = None
    # The address participants reach the web UI at: the links in mail (confirmation, password
    # reset, unsubscribe) start with it, never with a Host header a request sent. Unset: the
    # address `gauntlet run` listens on (embedded mode).
    public_url: str | None = None
    # A message the SMTP server did not take is tried again after this many seconds, doubling
    # each time up to an hour, and recorded as failed after `mail_max_tries` tries.
    mail_retry_base_seconds: float = Field(default=30.0, gt=0, le=3600)
    mail_max_tries: int = Field(default=10, ge=1, le=100)

    @field_validator("smtp_url", "mail_from", "public_url", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        # Compose passes `${GAUNTLET_SMTP_URL:-}`: an empty value means not configured.
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("smtp_url")
    @classmethod
    def _smtp_server(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                SmtpServer.parse(value)
            except ValueError as exc:
                raise ValueError(f"GAUNTLET_SMTP_URL {exc}") from None
        return value

    @field_validator("mail_from")
    @classmethod
    def _sender(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                one_address(value)
            except ValueError as exc:
                raise ValueError(f"GAUNTLET_MAIL_FROM {exc}") from None
        return value

    @field_validator("public_url")
    @classmethod
    def _public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        scheme, _, rest = value.partition("://")
        host = rest.split("/", 1)[0]
        if scheme not in ("http", "https") or not host or re.search(r"[\s?#\\]", value):
            raise ValueError(
                "GAUNTLET_PUBLIC_URL must be the web UI's address, such as "
                "https://gauntlet.example.org (no query or fragment)"
            )
        return value.rstrip("/")

    @field_validator("trusted_proxies")
    @classmethod
    def _proxy_addresses(cls, value: str) -> str:
        for entry in (part.strip() for part in value.split(",")):
            if not entry:
                continue
            if entry == "*":
                raise ValueError(
                    "'*' would believe any client's X-Forwarded-For; list the proxies' "
                    "addresses or networks"
                )
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError as exc:
                raise ValueError(f"{entry!r} is not an IP address or network") from exc
        return value

    _outbound_policy: OutboundPolicy | None = PrivateAttr(default=None)

    @field_validator("allowed_api_bases")
    @classmethod
    def _parse_api_bases(cls, value: list[str | dict[str, Any]]) -> list[str | dict[str, Any]]:
        parse_allowed_bases(value)  # refuses a malformed entry at start-up, naming it
        return value

    @field_validator("extra_challenge_kinds")
    @classmethod
    def _kinds_are_entry_points(cls, value: str) -> str:
        if value.strip():
            raise ValueError(
                "GAUNTLET_EXTRA_CHALLENGE_KINDS is no longer read: a challenge kind outside the "
                "service is found through the entry point its package declares in the group "
                "gauntlet.challenge_kinds (docs/architecture.md, 'Adding a kind'); "
                "install the package and unset this setting"
            )
        return value

    @field_validator("allowed_providers")
    @classmethod
    def _check_providers(cls, value: list[str]) -> list[str]:
        return list(validate_provider_names(value))

    def outbound_policy(self) -> OutboundPolicy:
        """The outbound policy of the service (the API's checks and the workers' calls)."""
        if self._outbound_policy is None:
            self._outbound_policy = OutboundPolicy(
                bases=parse_allowed_bases(self.allowed_api_bases),
                providers=ProviderPolicy(allowed=tuple(self.allowed_providers)),
            )
        return self._outbound_policy

    # Observability (docs/production.md). Logs: JSON lines or readable ones; by default JSON
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
    # The API's /healthz answers 503 (not 200 "degraded") when no worker was seen: for a
    # deployment whose API is useless without its workers. `gauntlet run` turns it on.
    health_requires_worker: bool = False

    @model_validator(mode="after")
    def _trusted_authorities_exist(self) -> Settings:
        # Outbound TLS reads SSL_CERT_FILE / SSL_CERT_DIR (no GAUNTLET_ prefix) from the
        # process environment, as OpenSSL does; one naming nothing fails start-up, naming the
        # variable, rather than every https call later (app.outbound.trust).
        TrustedAuthorities.from_environ(os.environ)
        return self

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
        for name, value in (
            ("GAUNTLET_ADMIN_TOKEN", self.admin_token),
            ("GAUNTLET_SECRET_KEY", self.secret_key),
        ):
            problem = secret_problem(name, value)
            if problem:
                problems.append(problem)
        if self.admin_token and self.admin_token == self.secret_key:
            problems.append("GAUNTLET_ADMIN_TOKEN and GAUNTLET_SECRET_KEY must differ")
        if self.rate_limit_url and not self.rate_limit_url.startswith(("redis://", "rediss://")):
            problems.append(
                "GAUNTLET_RATE_LIMIT_URL must name a Redis database (limits are shared by "
                "every API process)"
            )
        if self.smtp_url and not self.public_url:
            problems.append(
                "GAUNTLET_PUBLIC_URL must be the web UI's address when GAUNTLET_SMTP_URL is set "
                "(the links in mail start with it)"
            )
        if self.smtp_url and not self.mail_from:
            problems.append("GAUNTLET_MAIL_FROM must be set when GAUNTLET_SMTP_URL is set")
        if problems:
            raise ValueError("unsafe production settings: " + "; ".join(problems))
        return self

    @property
    def trusted_proxy_list(self) -> list[str]:
        return [part.strip() for part in self.trusted_proxies.split(",") if part.strip()]

    @property
    def resolved_secure_cookies(self) -> bool:
        if self.secure_cookies is not None:
            return self.secure_cookies
        return self.mode == "production"

    @property
    def resolved_rate_limit_url(self) -> str:
        if self.rate_limit_url:
            return self.rate_limit_url
        if self.broker_url and self.broker_url.startswith(("redis://", "rediss://")):
            return self.broker_url
        return "memory://"

    @property
    def smtp_server(self) -> SmtpServer | None:
        """The SMTP server mail goes to; None: mail is written to `mail_folder`."""
        return SmtpServer.parse(self.smtp_url) if self.smtp_url else None

    @property
    def mail_folder(self) -> Path:
        return (self.data_dir / "mail").resolve()

    @property
    def resolved_mail_from(self) -> str:
        return self.mail_from or "Gauntlet <gauntlet@localhost>"

    @property
    def resolved_public_url(self) -> str:
        return self.public_url or "http://127.0.0.1:8000"

    @property
    def resolved_tenant_signup(self) -> Literal["open", "approval", "closed"]:
        if self.tenant_signup is not None:
            return self.tenant_signup
        return "approval" if self.mode == "production" else "open"

    @property
    def resolved_scorer_sandbox(self) -> Literal["auto", "bubblewrap", "process"]:
        if self.scorer_sandbox is not None:
            return self.scorer_sandbox
        return "bubblewrap" if self.mode == "production" else "auto"

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
