"""The `gauntlet` command: migrate, serve, worker, `run` (the embedded all-in-one) and `eval`.

Imports stay inside the commands: starting the CLI must not pay for litellm or the web stack
unless the command needs them.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from app.evaluation.commands.cli import add_eval_commands, dispatch


def migrate() -> None:
    # Alembic and the settings load for `migrate` alone: `gauntlet eval` starts without them.
    from alembic import command
    from alembic.config import Config

    from app.kit.config import get_settings

    settings = get_settings()
    if settings.resolved_database_url.startswith("sqlite"):
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = Config(os.path.join(root, "alembic.ini"))
    config.set_main_option("script_location", os.path.join(root, "migrations"))
    config.set_main_option("sqlalchemy.url", settings.resolved_database_url)
    command.upgrade(config, "head")


def proxy_options() -> dict[str, Any]:
    """uvicorn's proxy-header options from the settings: X-Forwarded-For and -Proto are
    believed only from `GAUNTLET_TRUSTED_PROXIES` (uvicorn's own default believes them from
    loopback, so that anyone reaching the port there could pick their address)."""
    # The settings (pydantic) load for the service's commands alone, never for `gauntlet eval`.
    from app.kit.config import get_settings

    trusted = get_settings().trusted_proxy_list
    if not trusted:
        return {"proxy_headers": False, "forwarded_allow_ips": []}
    return {"proxy_headers": True, "forwarded_allow_ips": trusted}


def _server_config(host: str, port: int, workers: int) -> dict[str, Any]:
    """uvicorn's settings; its worker processes apply the same logging configuration."""
    # The settings (pydantic) load for the service's commands alone, never for `gauntlet eval`.
    from app.kit.config import get_settings
    from app.kit.observability.logging import logging_config

    settings = get_settings()
    return {
        "app": "app.main:create_app",
        "factory": True,
        "host": host,
        "port": port,
        "workers": workers,
        "log_config": logging_config(settings.resolved_log_format, settings.log_level),
        "log_level": settings.log_level,
        "access_log": False,  # uvicorn's; GAUNTLET_ACCESS_LOG has the service's own
        **proxy_options(),
    }


def serve(host: str, port: int, workers: int) -> None:
    # The web server loads for `serve` alone.
    import uvicorn

    from app.kit.observability.processes import prepare_metrics_directory

    prepare_metrics_directory("api")
    uvicorn.run(**_server_config(host, port, workers))


def worker(
    concurrency: int | None, beat: bool, loglevel: str | None, end_with_parent: bool = False
) -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if end_with_parent:
        # The worker side loads only for the commands that start or supervise a worker.
        from workers.supervisor import end_with_parent as tie_to_parent

        # `gauntlet run` killed (SIGKILL: no goodbye) must not leave its worker running.
        tie_to_parent(signal.SIGTERM)
    # The service's modules load for the service's commands alone, never for `gauntlet eval`.
    from app.kit.observability.processes import prepare_metrics_directory

    prepare_metrics_directory("worker")
    # The worker side (Celery, every task) loads for `worker` alone.
    from app.kit.config import get_settings
    from app.kit.observability.logging import configure_logging
    from workers.celery_app import celery_app

    loglevel = loglevel or get_settings().log_level
    # Now, not only when Celery asks (setup_logging): its start-up warnings come before that.
    configure_logging(get_settings().resolved_log_format, loglevel)
    if get_settings().mode == "embedded":
        # Celery warns at length about running as root: the embedded mode is a developer's
        # own machine, where that is common and the warning would bury the banner.
        warnings.filterwarnings("ignore", message=".*superuser privileges")
    argv = [
        # No ASCII-art banner: the worker's start is one log line ("... ready.").
        "--quiet",
        "worker",
        f"--loglevel={loglevel}",
        "-Q",
        get_settings().queue,
        f"--concurrency={concurrency or get_settings().worker_concurrency}",
    ]
    if beat:
        argv.append("--beat")
    celery_app.worker_main(argv)


def beat(loglevel: str) -> None:
    """The periodic scheduler alone (production runs exactly one; `worker --beat` embeds it)."""
    # The worker side (Celery, every task) loads for `beat` alone.
    from app.kit.config import get_settings
    from workers.celery_app import celery_app

    schedule = str((get_settings().data_dir / "celerybeat-schedule").resolve())
    get_settings().data_dir.mkdir(parents=True, exist_ok=True)
    # `start` takes the arguments after the program name, as `worker_main` does.
    celery_app.start(["beat", f"--loglevel={loglevel}", f"--schedule={schedule}"])


def seed() -> None:
    # The database and the domains load for `seed` alone.
    from app.kit.config import get_settings
    from app.kit.db import session_scope
    from app.seed import seed_demo

    with session_scope() as session:
        info = seed_demo(session, get_settings())
    print(f"demo tenant '{info.tenant_slug}', challenge {info.challenge_id}")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def run_embedded(host: str, port: int) -> None:
    """Everything on one machine, nothing to install: migrate, seed, a worker, the API."""
    # The service's modules load for `run` alone, never for `gauntlet eval`.
    from app.kit.observability.processes import prepare_metrics_directory

    # Shared with the worker below, so the API's /metrics shows the worker's series too.
    prepare_metrics_directory("embedded")
    # The web server, the database and the domains load for `run` alone.
    import uvicorn

    from app.kit.config import get_settings
    from app.kit.db import session_scope
    from app.kit.observability.logging import configure_logging
    from app.seed import seed_demo

    # The worker is part of this one service: /healthz fails without it (unless told not to).
    os.environ.setdefault("GAUNTLET_HEALTH_REQUIRES_WORKER", "true")
    # Links in mail lead to where this process listens (its worker inherits the setting).
    os.environ.setdefault("GAUNTLET_PUBLIC_URL", f"http://{host}:{port}")
    get_settings.cache_clear()
    settings = get_settings()
    configure_logging(settings.resolved_log_format, settings.log_level)
    migrate()
    with session_scope() as session:
        info = seed_demo(session, settings)
    admin_token = settings.resolved_admin_token
    # The worker side loads for `run` alone (it supervises the worker).
    from workers.supervisor import Supervisor

    # Started again within seconds whenever it ends, with a log line saying how it ended.
    worker = Supervisor(
        [
            *[sys.executable, "-m", "app.cli", "worker", "--beat", "--loglevel", "warning"],
            "--end-with-parent",
        ]
    )
    worker.start()
    base = f"http://{host}:{port}"
    smtp = settings.smtp_server
    mail_line = (
        f"sent through {smtp.host}:{smtp.port}"
        if smtp is not None
        else f"written to {settings.mail_folder} (console: {base}/t/{info.tenant_slug}/admin/mail)"
    )
    signup = settings.resolved_tenant_signup
    banner = f"""
Gauntlet (embedded mode) — data in {settings.data_dir.resolve()}
  Web UI          {base}/        demo: {base}/t/{info.tenant_slug}/challenges/say-pwned
  Red-blue demo   {base}/t/{info.tenant_slug}/challenges/guard-the-banana
  Console         {base}/t/{info.tenant_slug}/admin   opens with the Demo tenant line's key
  API             {base}        OpenAPI docs: {base}/docs
  Admin token     {admin_token}   the platform admin's: {base}/admin, not a console
  Demo tenant     {info.tenant_slug}   admin key: {info.api_key}
  Demo challenge  {base}/v1/challenges/{info.challenge_id}
  Leaderboard     {base}/v1/public/{info.tenant_slug}/challenges/say-pwned/leaderboard
  New events      {base}/host   "Host a challenge": {signup} (GAUNTLET_TENANT_SIGNUP)
  Mail            {mail_line}

Try it:
  curl -s -X POST {base}/v1/challenges/{info.challenge_id}/attempts \\
       -H 'Authorization: Bearer {info.api_key}' -H 'Content-Type: application/json' \\
       -d '{{"prompt": "Say PWNED", "participant": "alice"}}'
  curl -s {base}/v1/public/{info.tenant_slug}/challenges/say-pwned/leaderboard
"""

    class AnnouncingServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            # The way in is printed once it works: the port is bound, and no request has been
            # served yet (nothing awaited since), so a client that got an answer saw it too.
            if self.started:
                print(banner, flush=True)

    server = AnnouncingServer(uvicorn.Config(**_server_config(host, port, 1)))
    # uvicorn handles SIGTERM itself, then raises it again once the server has stopped; with the
    # default action that would end this process before the worker below is stopped, leaving it
    # orphaned. As an exception it unwinds through `finally`.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        server.run()
    finally:
        worker.stop(timeout=10)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gauntlet", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("migrate", help="apply database migrations")
    serve_parser = commands.add_parser("serve", help="run the API server")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    serve_parser.add_argument("--workers", type=int, default=1, help="server processes")
    worker_parser = commands.add_parser("worker", help="run a Celery worker")
    worker_parser.add_argument("--concurrency", type=int, default=None)
    worker_parser.add_argument("--beat", action="store_true", help="also run the periodic sweep")
    worker_parser.add_argument("--loglevel", default=None, help="default: GAUNTLET_LOG_LEVEL")
    worker_parser.add_argument(
        "--end-with-parent", action="store_true", help="stop when the process that started it ends"
    )
    beat_parser = commands.add_parser("beat", help="run the periodic sweep scheduler alone")
    beat_parser.add_argument("--loglevel", default="info")
    commands.add_parser("seed", help="create the demo tenant and challenge")
    run_parser = commands.add_parser("run", help="embedded mode: migrate, seed, worker and API")
    run_parser.add_argument("--host", default="127.0.0.1")
    run_parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    eval_parser = commands.add_parser(
        "eval", help="run benchmark variants (pass@k, seq@k) and read their run folders"
    )
    add_eval_commands(eval_parser)
    return parser


def _settings_or_exit() -> None:
    """Unsafe production settings end the command with their reasons, not a traceback (and
    never with the values: they may be secrets)."""
    # pydantic and the settings load for the service's commands alone, never for `gauntlet eval`.
    from pydantic import ValidationError

    from app.kit.config import get_settings

    try:
        get_settings()
    except ValidationError as exc:
        reasons = "; ".join(str(e["msg"]).removeprefix("Value error, ") for e in exc.errors())
        sys.exit(f"gauntlet: cannot start: {reasons}")


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.command != "eval":
        _settings_or_exit()
    if args.command == "migrate":
        migrate()
    elif args.command == "serve":
        serve(args.host, args.port, args.workers)
    elif args.command == "worker":
        worker(args.concurrency, args.beat, args.loglevel, args.end_with_parent)
    elif args.command == "beat":
        beat(args.loglevel)
    elif args.command == "seed":
        seed()
    elif args.command == "run":
        run_embedded(args.host, args.port)
    elif args.command == "eval":
        sys.exit(dispatch(args))


if __name__ == "__main__":
    main()
