"""The public event as a bench: a crowd of participants (locust, open-loop arrivals) against a
layout of the service, processes killed along the way, then the invariants checked from the
database and the figures printed.

    .venv/bin/python bench/event.py --rate 20 --duration 300 --kill-every 120
    .venv/bin/python bench/event.py --find-rate                  # the highest rate held
    .venv/bin/python bench/event.py --smoke                      # 20 s, low rate, no kills
    .venv/bin/python bench/event.py --checkout ../other-worktree  # the same bench, another commit
    .venv/bin/python bench/event.py --layout embedded             # `gauntlet run` (SQLite)

The layout is started from the checkout under test exactly as docker-compose.yml runs it
(bench/event_layout.py), against the local PostgreSQL (a database of its own, created and
dropped here) and Redis (a queue and key prefix of its own). bench/README.md explains the
figures. Exit status: 0 when every invariant held, 1 when one did not.
"""

# locust runs on gevent: the standard library is patched before anything else is imported.
from gevent import monkey

monkey.patch_all()

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gevent  # noqa: E402
import gevent.event  # noqa: E402
from locust.env import Environment  # noqa: E402
from locust.user.wait_time import poisson  # noqa: E402
from sqlalchemy import Engine, create_engine, text  # noqa: E402

from bench import common  # noqa: E402
from bench.event_checks import (  # noqa: E402
    Invariant,
    Request,
    backlog,
    database_invariants,
    errors_by_reason,
    finished_per_minute,
    http_invariants,
    judge_requests,
    summarize_counts,
    wait_drained,
    within,
)
from bench.event_crowd import (  # noqa: E402
    DEFAULT_MIX,
    KINDS,
    TRIALS,
    Crowd,
    Participant,
    opening,
    seed,
    warm_up,
)
from bench.event_layout import (  # noqa: E402
    CpuMeter,
    EmbeddedLayout,
    Kill,
    Layout,
    ProductionLayout,
)

ROOT = Path(__file__).resolve().parent.parent
RECOMPUTE_TASK = "gauntlet.redblue.recompute"
ATTEMPT_TASKS = ("gauntlet.run_attempt",)
MATCH_TASKS = ("gauntlet.redblue.run_matches", "gauntlet.redblue.run_match")
# A smoke run exercises every kind of request and entry in a short time.
SMOKE_MIX = {
    "attempt": 40.0,
    "poll": 15.0,
    "board-public": 10.0,
    "board-keyed": 10.0,
    "defense": 8.0,
    "attack": 10.0,
    "hostile": 7.0,
}


def parse_mix(text_value: str) -> dict[str, float]:
    mix = dict(DEFAULT_MIX)
    for part in filter(None, text_value.split(",")):
        name, _, weight = part.partition("=")
        if name.strip() not in KINDS:
            raise argparse.ArgumentTypeError(f"unknown request kind {name!r} (kinds: {KINDS})")
        mix[name.strip()] = float(weight)
    return mix


def parse_settings(values: Sequence[str]) -> dict[str, str]:
    settings = {}
    for value in values:
        name, equals, setting = value.partition("=")
        if not equals or not name.startswith("GAUNTLET_"):
            raise SystemExit(f"--set takes GAUNTLET_NAME=VALUE, not {value!r}")
        settings[name] = setting
    return settings


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    layout = parser.add_argument_group("the layout under test")
    layout.add_argument("--layout", choices=("production", "embedded"), default="production")
    layout.add_argument(
        "--checkout",
        type=Path,
        default=ROOT,
        help="a checkout with its own .venv (default: this one)",
    )
    layout.add_argument(
        "--api-processes", type=int, default=2, help="production: `serve --workers N` (Compose: 2)"
    )
    layout.add_argument(
        "--worker-concurrency",
        type=int,
        default=None,
        help="`worker --concurrency N` (Compose: 4; embedded: the setting's default)",
    )
    layout.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="GAUNTLET_NAME=VALUE",
        help="a setting for every service (repeatable)",
    )
    layout.add_argument(
        "--pg-admin-url",
        default=common.admin_dsn(),
        help="PostgreSQL (libpq URL) allowed to create databases",
    )
    # Not db 10: the other benchmarks flush it.
    layout.add_argument("--redis-url", default="redis://127.0.0.1:6379/11")
    load = parser.add_argument_group("the crowd")
    load.add_argument("--rate", type=float, default=20.0, help="offered requests per second")
    load.add_argument("--duration", type=float, default=300.0, help="seconds of load")
    load.add_argument("--tenants", type=int, default=3)
    load.add_argument("--participants", type=int, default=3000)
    load.add_argument("--prompt-challenges", type=int, default=2, help="per tenant")
    load.add_argument(
        "--matches-per-entry",
        type=int,
        default=50,
        help="red-blue pairing's max_matches_per_submission",
    )
    load.add_argument(
        "--mix",
        type=parse_mix,
        default=dict(DEFAULT_MIX),
        help=f"kind=weight,... (kinds {', '.join(KINDS)})",
    )
    load.add_argument(
        "--user-rate", type=float, default=0.5, help="arrivals per second of one locust user"
    )
    load.add_argument(
        "--warm-entries",
        type=int,
        default=0,
        help="defenses and attacks per tenant entered (and played) before the load starts, "
        "so that red-blue work per request is steady from the first minute",
    )
    faults = parser.add_argument_group("faults")
    faults.add_argument(
        "--kill-every", type=float, default=0.0, help="seconds between SIGKILLs (0: none)"
    )
    faults.add_argument("--kill-order", default="api,worker,beat", help="roles killed in turn")
    faults.add_argument(
        "--embedded-worker-wait",
        type=float,
        default=30.0,
        help="embedded: seconds a killed worker has to come back by itself",
    )
    after = parser.add_argument_group("after the load")
    after.add_argument(
        "--drain-timeout",
        type=float,
        default=600.0,
        help="seconds to wait for the backlog to drain",
    )
    find = parser.add_argument_group("finding the sustainable rate")
    find.add_argument(
        "--find-rate",
        action="store_true",
        help="step the rate up until the backlog grows or p99 exceeds its bound",
    )
    find.add_argument("--start-rate", type=float, default=10.0)
    find.add_argument("--rate-step", type=float, default=5.0)
    find.add_argument("--step-seconds", type=float, default=90.0)
    find.add_argument("--max-rate", type=float, default=120.0)
    find.add_argument("--p99-bound-ms", type=float, default=500.0)
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="20 s at 4 requests/s, 2 tenants, 40 participants, no kills (options given "
        "explicitly still apply)",
    )
    parser.add_argument(
        "--report", type=Path, help="also write the figures and invariants as JSON here"
    )
    parser.add_argument("--keep-logs", type=Path, help="copy the services' logs into this folder")
    return parser


# Sampling during the run ----------------------------------------------------------------------


@dataclass(frozen=True)
class Timeline:
    """When the load started and ended (time.time()), and how the drain went."""

    load_started: float
    load_ended: float
    drain_ended: float
    drained: bool
    drain_seconds: float
    left: dict[str, int] | None


@dataclass
class Samples:
    backlog: list[tuple[float, dict[str, int], int | None]] = field(default_factory=list)
    kills: list[Kill] = field(default_factory=list)


def sample_forever(meter: CpuMeter, engine: Engine, layout: Layout, samples: Samples) -> None:
    last_backlog = 0.0
    while True:
        meter.sample()
        if time.time() - last_backlog >= 10:
            last_backlog = time.time()
            found = backlog(engine)
            if found is not None:
                samples.backlog.append((last_backlog, found, layout.broker_depth()))
        gevent.sleep(2)


def kill_in_turn(
    layout: Layout, every: float, order: list[str], samples: Samples, stopping: gevent.event.Event
) -> None:
    """SIGKILLs the roles in turn every `every` seconds until `stopping` is set (a kill under
    way is seen through: its role is back when this returns)."""
    turn = 0
    while not stopping.wait(timeout=every):
        role = order[turn % len(order)]
        turn += 1
        print(f"   {time.strftime('%H:%M:%S')} SIGKILL {role}", flush=True)
        kill = Kill(role, time.time())
        samples.kills.append(kill)
        layout.kill(kill)
        back = "never" if kill.back_at is None else f"after {kill.back_at - kill.killed_at:.1f} s"
        print(
            f"   {time.strftime('%H:%M:%S')} {role} back {back} ({kill.restarted_by})", flush=True
        )


def api_down_windows(kills: Sequence[Kill]) -> list[tuple[float, float]]:
    """When a killed API was down: from its kill (or, embedded, from the restart of a whole
    `gauntlet run` whose worker did not come back) until it answered again."""
    return [
        (kill.api_down_from, kill.back_at or math.inf)
        for kill in kills
        if kill.api_down_from is not None
    ]


# Figures --------------------------------------------------------------------------------------


def ms(values: Sequence[float], p: float) -> str:
    return "-" if not values else f"{common.percentile(values, p) * 1000:.0f}"


def request_table(
    crowd: Crowd,
    requests: Sequence[Request],
    seconds: float,
    api_down: Sequence[tuple[float, float]],
) -> list[dict[str, Any]]:
    """Per kind of request; latencies of first sends answered outside a killed API's down
    time (one that waited for a restart measures the restart: the kills are listed apart,
    with how long each role was gone)."""
    rows = []
    for kind in (*KINDS, "all"):
        chosen = [r for r in requests if kind in ("all", r.kind)]
        answered = [
            r.ended - r.started
            for r in chosen
            if not r.retry and r.status and not within(api_down, r, 1.0)
        ]
        arrivals = sum(crowd.arrivals.values()) if kind == "all" else crowd.arrivals[kind]
        achieved = sum(crowd.achieved.values()) if kind == "all" else crowd.achieved[kind]
        rows.append(
            {
                "kind": kind,
                "offered_per_s": arrivals / seconds,
                "achieved_per_s": achieved / seconds,
                "sent": len(chosen),
                "retries": sum(r.retry for r in chosen),
                "2xx": sum(200 <= r.status < 300 for r in chosen),
                "4xx": sum(400 <= r.status < 500 for r in chosen),
                "5xx": sum(r.status >= 500 for r in chosen),
                "no_answer": sum(r.status == 0 for r in chosen),
                "p50_ms": ms(answered, 50),
                "p95_ms": ms(answered, 95),
                "p99_ms": ms(answered, 99),
                "dropped": sum(crowd.dropped.values()) if kind == "all" else crowd.dropped[kind],
            }
        )
    return rows


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    def cell(value: Any) -> str:
        return f"{value:.2f}" if isinstance(value, float) else str(value)

    widths = {c: max(len(c), *(len(cell(r[c])) for r in rows)) for c in columns}
    print("   " + "  ".join(c.rjust(widths[c]) for c in columns))
    for row in rows:
        print("   " + "  ".join(cell(row[c]).rjust(widths[c]) for c in columns))


def task_minutes(layout: Layout, since: float) -> dict[int, dict[str, tuple[int, float, float]]]:
    """Per minute after `since`: task name → (runs, seconds, longest run)."""
    start = datetime.fromtimestamp(since, UTC)
    minutes: dict[int, dict[str, list[float]]] = defaultdict(
        lambda: defaultdict(lambda: [0, 0.0, 0.0])
    )
    for when, name, seconds in layout.task_log():
        minute = int((when - start).total_seconds() // 60)
        if minute < 0:
            continue
        entry = minutes[minute][name]
        entry[0] += 1
        entry[1] += seconds
        entry[2] = max(entry[2], seconds)
    return {
        minute: {name: (int(v[0]), v[1], v[2]) for name, v in names.items()}
        for minute, names in sorted(minutes.items())
    }


def cpu_per_minute(meter: CpuMeter, role: str, since: float, minutes: int) -> list[float]:
    return [
        meter.used_between(since + 60 * m, since + 60 * (m + 1)).get(role, 0.0)
        for m in range(minutes)
    ]


# Running --------------------------------------------------------------------------------------


def make_layout(args: argparse.Namespace, folder: Path) -> Layout:
    settings = parse_settings(args.set)
    checkout = args.checkout.resolve()
    if args.layout == "embedded":
        return EmbeddedLayout(
            checkout=checkout,
            folder=folder,
            worker_concurrency=args.worker_concurrency,
            settings=settings,
            worker_back_within=args.embedded_worker_wait,
        )
    return ProductionLayout(
        checkout=checkout,
        admin_url=args.pg_admin_url,
        redis_url=args.redis_url,
        folder=folder,
        api_processes=args.api_processes,
        worker_concurrency=args.worker_concurrency or 4,
        settings=settings,
    )


def set_rate(runner: Any, rate: float, user_rate: float) -> int:
    users = max(1, round(rate / user_rate))
    runner.start(users, spawn_rate=max(users, 1))
    return users


def requests_between(crowd: Crowd, start: float, end: float) -> list[Request]:
    return [r for r in crowd.requests if start <= r.started < end]


def find_rate(
    args: argparse.Namespace, runner: Any, crowd: Crowd, engine: Engine
) -> tuple[list[dict[str, Any]], float | None]:
    """Steps the offered rate up; a step holds when the unfinished work did not grow (beyond a
    small tolerance), its p99 (last two thirds of the step, answered legitimate requests) is
    within the bound, and nothing failed. Stops at the first step that does not hold."""
    steps: list[dict[str, Any]] = []
    held: float | None = None
    rate = args.start_rate
    while rate <= args.max_rate + 1e-9:
        before = _work(engine)
        started = time.time()
        users = set_rate(runner, rate, args.user_rate)
        gevent.sleep(args.step_seconds)
        ended = time.time()
        after = _work(engine)
        window = requests_between(crowd, started, ended)
        late = [r for r in window if r.started >= started + args.step_seconds / 3]
        latencies = [
            r.ended - r.started for r in late if r.kind != "hostile" and r.status and not r.retry
        ]
        p99 = common.percentile(latencies, 99) * 1000 if latencies else math.nan
        failures = sum(r.status == 0 or r.status >= 500 for r in window)
        accepted = sum(r.kind == "attempt" and r.status == 202 for r in window)
        created = after["matches total"] - before["matches total"]
        attempt_growth = after["attempts open"] - before["attempts open"]
        match_growth = after["red-blue open"] - before["red-blue open"]
        holds = (
            attempt_growth <= max(10, 0.05 * accepted)
            and match_growth <= max(100, 0.10 * created)
            and p99 <= args.p99_bound_ms
            and failures == 0
        )
        step = {
            "rate": rate,
            "users": users,
            "offered_per_s": round(len([r for r in window if not r.retry]) / (ended - started), 1),
            "p99_ms": round(p99, 1),
            "failures": failures,
            "attempts_accepted": accepted,
            "attempts_open_growth": attempt_growth,
            "matches_created": created,
            "red_blue_open_growth": match_growth,
            "held": holds,
        }
        steps.append(step)
        print(f"   {time.strftime('%H:%M:%S')} step {json.dumps(step)}", flush=True)
        if not holds:
            break
        held = rate
        rate += args.rate_step
    return steps, held


def _work(engine: Engine) -> dict[str, int]:
    found = backlog(engine) or {}
    with engine.connect() as connection:
        total = int(connection.execute(text("SELECT count(*) FROM redblue_matches")).scalar_one())
    return {
        "attempts open": found.get("attempts queued", 0) + found.get("attempts running", 0),
        "red-blue open": found.get("matches queued", 0)
        + found.get("matches running", 0)
        + found.get("defenses pending", 0)
        + found.get("attacks unpaired", 0),
        "matches total": total,
    }


def run(args: argparse.Namespace) -> int:
    if args.find_rate and args.kill_every:
        raise SystemExit("--find-rate steps the rate on a layout left alone: no --kill-every")
    common.print_machine_info("event bench")
    folder = Path(tempfile.mkdtemp(prefix="gauntlet-event-"))
    layout = make_layout(args, folder)
    print(f"   layout: {layout.kind}: {layout.describe()}", flush=True)
    report: dict[str, Any] = {"arguments": {k: str(v) for k, v in vars(args).items()}}
    engine: Engine | None = None
    try:
        layout.start()
        engine = create_engine(layout.database_url)
        tenants = seed(
            layout.base_url,
            layout.admin_token,
            tenants=args.tenants,
            participants=args.participants,
            prompt_challenges=args.prompt_challenges,
            matches_per_entry=args.matches_per_entry,
        )
        crowd = Crowd(tenants, args.mix)
        Participant.crowd = crowd
        Participant.host = layout.base_url
        Participant.rate = args.user_rate
        Participant.wait_time = poisson(args.user_rate)
        environment = Environment(user_classes=[Participant])
        runner = environment.create_local_runner()
        opening(Participant(environment))
        if args.warm_entries:
            warmed = time.time()
            warm_up(Participant(environment), args.warm_entries)
            drained, waited, left = wait_drained(engine, args.drain_timeout)
            if not drained:
                raise SystemExit(f"the warm-up's work did not drain in {waited:.0f} s: {left}")
            print(
                f"   {time.strftime('%H:%M:%S')} warm-up: {args.warm_entries} defenses and "
                f"attacks per tenant, played in {time.time() - warmed:.0f} s",
                flush=True,
            )
        if not args.smoke:
            # A steady state from the first second (a smoke run overlaps the worker's start
            # with its load: its figures do not matter, its invariants do).
            layout.wait_ready()
        meter = CpuMeter(layout)
        samples = Samples()
        sampler = gevent.spawn(sample_forever, meter, engine, layout, samples)
        gevent.sleep(0.5)
        load_started = time.time()
        killer = None
        stopping = gevent.event.Event()
        if args.kill_every > 0:
            order = [role for role in args.kill_order.split(",") if role in layout.killable]
            killer = gevent.spawn(kill_in_turn, layout, args.kill_every, order, samples, stopping)
        steps: list[dict[str, Any]] = []
        held: float | None = None
        if args.find_rate:
            steps, held = find_rate(args, runner, crowd, engine)
        else:
            users = set_rate(runner, args.rate, args.user_rate)
            print(
                f"   {time.strftime('%H:%M:%S')} load: {args.rate:g} requests/s offered "
                f"by {users} users for {args.duration:g} s",
                flush=True,
            )
            gevent.sleep(args.duration)
        load_ended = time.time()
        runner.stop()
        stopping.set()
        if killer is not None:
            killer.join()
        layout.wait_ready()
        crowd.group.join(timeout=args.drain_timeout)
        runner.quit()
        print(
            f"   {time.strftime('%H:%M:%S')} load stopped; waiting for the backlog to drain",
            flush=True,
        )
        drained, waited, left = wait_drained(engine, args.drain_timeout)
        timeline = Timeline(load_started, load_ended, time.time(), drained, waited, left)
        gevent.sleep(2.5)  # one more CPU sample after the last work
        sampler.kill(block=True)
        meter.sample()
        report.update(figures(args, layout, crowd, meter, samples, engine, timeline, steps, held))
        invariants = check(args, layout, crowd, samples, engine, drained)
        report["invariants"] = [vars(invariant) for invariant in invariants]
        print("\n== invariants")
        for invariant in invariants:
            print(
                f"   {'held  ' if invariant.held else 'BROKEN'} "
                f"{invariant.name}: {invariant.detail}"
            )
        common.print_end_load()
        if args.report:
            args.report.write_text(json.dumps(report, indent=2, default=str))
        return 0 if all(invariant.held for invariant in invariants) else 1
    finally:
        if engine is not None:
            engine.dispose()
        if args.keep_logs:
            args.keep_logs.mkdir(parents=True, exist_ok=True)
            for log in folder.glob("*.log"):
                shutil.copy(log, args.keep_logs / log.name)
        layout.stop()
        shutil.rmtree(folder, ignore_errors=True)


def check(
    args: argparse.Namespace,
    layout: Layout,
    crowd: Crowd,
    samples: Samples,
    engine: Engine,
    drained: bool,
) -> list[Invariant]:
    windows = api_down_windows(samples.kills)
    found = [Invariant("the backlog drained", drained, f"within {args.drain_timeout:g} s")]
    found += http_invariants(judge_requests(crowd.requests, windows))
    found.append(
        Invariant(
            "every killed process came back"
            + (" (the embedded worker by itself)" if layout.kind == "embedded" else ""),
            all(
                k.back_at is not None and k.restarted_by != "bench restarted gauntlet run"
                for k in samples.kills
            ),
            ", ".join(f"{k.role}: {k.restarted_by}" for k in samples.kills) or "no kills",
        )
    )
    found += database_invariants(engine, crowd.accepted, TRIALS)
    return found


def figures(
    args: argparse.Namespace,
    layout: Layout,
    crowd: Crowd,
    meter: CpuMeter,
    samples: Samples,
    engine: Engine,
    timeline: Timeline,
    steps: list[dict[str, Any]],
    held: float | None,
) -> dict[str, Any]:
    load_started, load_ended = timeline.load_started, timeline.load_ended
    drain_ended, drained, waited, left = (
        timeline.drain_ended,
        timeline.drained,
        timeline.drain_seconds,
        timeline.left,
    )
    seconds = load_ended - load_started
    load_requests = [r for r in crowd.requests if load_started <= r.started < load_ended]
    print(
        f"\n== requests during the load ({seconds:.0f} s; offered = arrivals, "
        "achieved = arrivals answered as expected)"
    )
    table = request_table(crowd, load_requests, seconds, api_down_windows(samples.kills))
    print_table(
        table,
        [
            "kind",
            "offered_per_s",
            "achieved_per_s",
            "sent",
            "retries",
            "2xx",
            "4xx",
            "5xx",
            "no_answer",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "dropped",
        ],
    )
    hostile = Counter((r.variant, r.status) for r in crowd.requests if r.kind == "hostile")
    print(
        "   hostile requests by kind and answer: "
        + ", ".join(f"{v} {s}: {n}" for (v, s), n in sorted(hostile.items()))
    )

    counts = summarize_counts(engine)
    print(f"\n== work (drained: {drained}, after {waited:.0f} s; left: {left})")
    for name, value in counts.items():
        print(f"   {name}: {value}")
    reasons = errors_by_reason(engine)
    if reasons:
        print(
            "   errors by reason: "
            + "; ".join(f"{n} x {reason}" for reason, n in reasons.most_common(8))
        )

    print("\n== kills")
    for kill in samples.kills:
        back = "never" if kill.back_at is None else f"{kill.back_at - kill.killed_at:.1f} s"
        print(
            f"   {time.strftime('%H:%M:%S', time.localtime(kill.killed_at))} {kill.role}: "
            f"back after {back} ({kill.restarted_by})"
        )
    if not samples.kills:
        print("   none")

    minutes = max(1, math.ceil((drain_ended - load_started) / 60))
    print("\n== backlog each minute (the last sample of the minute)")
    backlog_rows = []
    for minute in range(minutes):
        inside = [
            s
            for s in samples.backlog
            if load_started + 60 * minute <= s[0] < load_started + 60 * (minute + 1)
        ]
        if inside:
            _when, found, depth = inside[-1]
            backlog_rows.append(
                {"minute": minute, **found, "broker messages": "-" if depth is None else depth}
            )
    if backlog_rows:
        print_table(backlog_rows, list(backlog_rows[0]))

    finished = finished_per_minute(engine, load_started)
    tasks = task_minutes(layout, load_started)
    worker_cpu = cpu_per_minute(meter, "worker", load_started, minutes)
    print("\n== each minute: work finished, worker CPU, the red-blue recompute's share")
    minute_rows = []
    for minute in range(minutes):
        names = tasks.get(minute, {})
        recompute = names.get(RECOMPUTE_TASK, (0, 0.0, 0.0))
        all_tasks = sum(v[1] for v in names.values())
        minute_rows.append(
            {
                "minute": minute,
                "attempts done": finished.get(minute, (0, 0))[0],
                "matches done": finished.get(minute, (0, 0))[1],
                "worker CPU s": round(worker_cpu[minute], 1),
                "task s": round(float(all_tasks), 1),
                "recomputes": recompute[0],
                "recompute s": round(recompute[1], 2),
                "longest": round(recompute[2], 2),
                # The recompute's share of the worker's task time, and so (shared out by
                # task time) of the worker's CPU.
                "share": "-" if not all_tasks else f"{100 * recompute[1] / all_tasks:.0f}%",
                "recompute CPU s": "-"
                if not all_tasks
                else round(worker_cpu[minute] * recompute[1] / all_tasks, 1),
            }
        )
    print_table(minute_rows, list(minute_rows[0]))
    if layout.kind == "embedded":
        print("   (embedded: the worker logs at warning level, so no task runtimes)")

    cpu = meter.used_between(load_started, drain_ended)
    # Seconds, not counts: a dict of floats (a Counter's values are ints).
    task_seconds: dict[str, float] = {}
    for names in tasks.values():
        for name, (_runs, spent, _longest) in names.items():
            task_seconds[name] = task_seconds.get(name, 0.0) + spent
    total_task = sum(task_seconds.values())
    worker = cpu.get("worker", 0.0)
    attempt_cpu = (
        worker * sum(task_seconds.get(n, 0.0) for n in ATTEMPT_TASKS) / total_task
        if total_task
        else math.nan
    )
    match_cpu = (
        worker * sum(task_seconds.get(n, 0.0) for n in MATCH_TASKS) / total_task
        if total_task
        else math.nan
    )
    completed = counts["attempts completed"] + counts["attempts errored"]
    matches = counts["matches completed"] + counts["matches errored"]
    print(
        "\n== CPU seconds from the start of the load to the end of the drain "
        f"({drain_ended - load_started:.0f} s)"
    )
    cpu_waits = meter.waited_between(load_started, drain_ended)
    for role, used in sorted(cpu.items(), key=lambda item: -item[1]):
        print(
            f"   {role}: {used:.1f} s "
            f"({100 * used / (drain_ended - load_started):.0f}% of one core); "
            f"{cpu_waits.get(role, 0.0):.1f} s more runnable, waiting for a CPU"
        )
    print(
        "   worker task time by task: "
        + ", ".join(
            f"{n.removeprefix('gauntlet.')} {s:.0f} s"
            for n, s in sorted(task_seconds.items(), key=lambda item: -item[1])
        )
    )
    per_attempt = attempt_cpu / completed * 1000 if completed else math.nan
    per_match = match_cpu / matches * 1000 if matches else math.nan
    if total_task:
        print(
            f"   worker CPU per finished attempt: {per_attempt:.1f} ms; per finished match: "
            f"{per_match:.1f} ms (worker CPU shared out by task time)"
        )
    else:
        print("   worker CPU per attempt and per match: n/a (no task runtimes in the log)")
    api_requests = len([r for r in crowd.requests if load_started <= r.started < drain_ended])
    if api_requests:
        print(f"   API CPU per request: {cpu.get('api', 0.0) / api_requests * 1000:.1f} ms")
    offered = sum(crowd.arrivals.values()) / seconds
    achieved = sum(crowd.achieved.values()) / seconds
    target = "steps" if args.find_rate else f"{args.rate:g}"
    print(f"\n== offered {offered:.1f} requests/s (target {target}), achieved {achieved:.1f}/s")
    if steps:
        print("\n== steps")
        print_table(steps, list(steps[0]))
    if args.find_rate:
        print(
            f"== sustainable rate: {held if held is not None else 'none held'} requests/s "
            f"(p99 bound {args.p99_bound_ms:g} ms)"
        )
    hostile_answers: dict[str, dict[int, int]] = defaultdict(dict)
    for (variant, status), count in hostile.items():
        hostile_answers[variant][status] = count
    return {
        "seconds": seconds,
        "hostile_answers": hostile_answers,
        "requests": table,
        "counts": counts,
        "kills": [vars(k) for k in samples.kills],
        "backlog": backlog_rows,
        "minutes": minute_rows,
        "cpu_seconds": cpu,
        "cpu_wait_seconds": cpu_waits,
        "worker_cpu_ms_per_attempt": per_attempt,
        "worker_cpu_ms_per_match": per_match,
        "drained": drained,
        "drain_seconds": waited,
        "steps": steps,
        "sustainable_rate": held,
    }


# What --smoke changes (options given explicitly still win).
SMOKE = {
    "rate": 4.0,
    "duration": 20.0,
    "tenants": 2,
    "participants": 40,
    "mix": SMOKE_MIX,
    "drain_timeout": 120.0,
}


def main() -> None:
    common.exit_on_sigterm()
    parser = build_parser()
    if "--smoke" in sys.argv[1:]:
        parser.set_defaults(**SMOKE)
    sys.exit(run(parser.parse_args()))


if __name__ == "__main__":
    main()
