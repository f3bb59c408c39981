"""Pure logic of the web UI, no services needed: reasoning folding, sign-in limits (in memory),
client addresses, session cookies and CSRF tokens."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from limits.storage import MemoryStorage
from starlette.requests import Request
from starlette.responses import Response

from app.auth.rate_limits import AccountLimits
from app.web import auth
from app.web.attempts.service import split_reasoning


@pytest.mark.parametrize(
    ("text", "answer", "reasoning"),
    [
        ("", "", []),
        ("plain answer", "plain answer", []),
        ("<think>plan</think>answer", "answer", ["plan"]),
        ("<THINK>\n  plan \n</Think>\n\nanswer", "answer", ["plan"]),
        ("<think>a</think>x<think>b</think>y", "xy", ["a", "b"]),
        ("<think></think>answer", "answer", []),
        ("answer <think>cut off mid-thou", "answer", ["cut off mid-thou"]),
        ("opened in the prompt</think>answer", "answer", ["opened in the prompt"]),
        ("<think>ünïcode 思考</think>答え", "答え", ["ünïcode 思考"]),
        ("<thinking>not a tag we fold</thinking>", "<thinking>not a tag we fold</thinking>", []),
    ],
)
def test_reasoning_is_split_from_the_answer(text: str, answer: str, reasoning: list[str]) -> None:
    assert split_reasoning(text) == (answer, reasoning)


def _limits(**tiers: str) -> AccountLimits:
    return AccountLimits(storage=MemoryStorage(), **tiers)


def test_lockouts_are_per_handle_and_address_ignoring_handle_case() -> None:
    limits = _limits(account_failures="2/minute", address_failures="100/minute")
    tenant = uuid.uuid4()
    limits.sign_in_failed(tenant, "Alice", "10.0.0.1")
    limits.sign_in_failed(tenant, "alice", "10.0.0.1")
    refusal = limits.check_sign_in(tenant, "ALICE", "10.0.0.1")
    assert refusal is not None and "for this handle" in refusal.message
    assert 0 < refusal.retry_after_seconds <= 60
    assert limits.check_sign_in(tenant, "alice", "10.0.0.2") is None  # the owner elsewhere
    assert limits.check_sign_in(uuid.uuid4(), "alice", "10.0.0.1") is None  # another tenant
    limits.sign_in_succeeded(tenant, "alice", "10.0.0.1")
    assert limits.check_sign_in(tenant, "alice", "10.0.0.1") is None


def test_lockouts_back_off_as_failures_pile_up() -> None:
    limits = _limits(account_failures="2/minute;3/hour", address_failures="100/minute")
    tenant = uuid.uuid4()
    for _ in range(2):
        limits.sign_in_failed(tenant, "bob", "10.0.0.1")
    first = limits.check_sign_in(tenant, "bob", "10.0.0.1")
    assert first is not None and first.retry_after_seconds <= 60
    limits.sign_in_failed(tenant, "bob", "10.0.0.1")  # a third after the first lockout
    second = limits.check_sign_in(tenant, "bob", "10.0.0.1")
    assert second is not None and second.retry_after_seconds > 60
    assert "Try again in 60 minutes" in second.message


def test_an_address_failing_across_handles_is_refused() -> None:
    limits = _limits(address_failures="3/minute")
    tenant = uuid.uuid4()
    for number in range(3):
        assert limits.check_sign_in(tenant, f"h{number}", "10.0.0.9") is None
        limits.sign_in_failed(tenant, f"h{number}", "10.0.0.9")
    refusal = limits.check_sign_in(tenant, "someone-else", "10.0.0.9")
    assert refusal is not None and "from your network" in refusal.message
    assert limits.check_address("10.0.0.9") is not None
    assert limits.check_address("10.0.0.10") is None


def test_sign_ups_are_counted_per_address() -> None:
    limits = _limits(address_sign_ups="2/minute")
    limits.signed_up("10.0.0.1")
    assert limits.check_sign_up("10.0.0.1") is None
    limits.signed_up("10.0.0.1")
    refusal = limits.check_sign_up("10.0.0.1")
    assert refusal is not None and "new accounts" in refusal.message
    assert limits.check_sign_up("10.0.0.2") is None
    limits.reset()
    assert limits.check_sign_up("10.0.0.1") is None


@pytest.mark.parametrize(
    ("peer", "address"),
    [
        ("203.0.113.7", "203.0.113.7"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
        ("testclient", "testclient"),
    ],
)
def test_client_addresses_count_ipv6_by_network(peer: str, address: str) -> None:
    request = Request({"type": "http", "headers": [], "path": "/", "client": (peer, 1234)})
    assert auth.client_address(request) == address


def _request(cookie: str | None = None) -> Request:
    headers = [(b"cookie", f"{auth.SESSION_COOKIE}={cookie}".encode())] if cookie else []
    return Request({"type": "http", "scheme": "http", "headers": headers, "path": "/"})


def _issued_cookie(session: auth.WebSession) -> str:
    response = Response()
    auth.store_session(_request(), response, session)
    header = response.headers["set-cookie"]
    return header.split(";", 1)[0].split("=", 1)[1]


def test_a_session_survives_the_round_trip_and_tampering_does_not() -> None:
    session = auth.load_session(_request())
    assert session.changed and not session.signed_in and session.server_token is None
    token = "t" + uuid.uuid4().hex
    session.sign_in(token)
    cookie = _issued_cookie(session)
    loaded = auth.load_session(_request(cookie))
    assert (loaded.session_id, loaded.signed_in, loaded.server_token) == (token, True, token)
    assert not loaded.changed
    assert auth.csrf_valid(loaded, session.csrf_token)
    # Not the last character: base64 ignores some of its bits (same bytes, same signature).
    for index in (2, len(cookie) // 2, len(cookie) - 3):
        forged = cookie[:index] + ("A" if cookie[index] != "A" else "B") + cookie[index + 1 :]
        anonymous = auth.load_session(_request(forged))
        assert not anonymous.signed_in and anonymous.changed
        assert not auth.csrf_valid(anonymous, session.csrf_token)


def test_csrf_tokens_belong_to_one_session_and_change_on_sign_in() -> None:
    session = auth.load_session(_request())
    token = session.csrf_token
    assert auth.csrf_valid(session, token)
    for wrong in ("", token[:-1], token.upper(), "ü" * 64, auth.csrf_token_for("x" * 32)):
        assert not auth.csrf_valid(session, wrong)
    session.sign_in("t" + uuid.uuid4().hex)
    assert not auth.csrf_valid(session, token)


def test_passwords_are_hashed_with_argon2_and_checked() -> None:
    hashed = auth.hash_password("correct horse battery")
    assert hashed.startswith("$argon2id$")
    assert auth.verify_password(hashed, "correct horse battery")
    assert not auth.verify_password(hashed, "Correct horse battery")
    assert not auth.verify_password(None, "")
    assert not auth.verify_password("not a hash", "x")
    assert auth.password_problem("short") is not None
    assert auth.password_problem("x" * 1000) is not None
    assert auth.password_problem("eight ch") is not None  # too easy to guess now
    assert auth.password_problem("correct horse battery") is None


# Benchmark challenges: the curve chart, progress, the model-spec form -----------------------------


def test_percentages_are_rounded_and_unknowns_shown_as_dashes() -> None:
    from app.web.charts import percent

    assert [percent(v) for v in (0.0, 1 / 3, 2 / 3, 1.0, 0.12345)] == [
        "0%",
        "33.3%",
        "66.7%",
        "100%",
        "12.3%",
    ]
    assert percent(None) == percent(float("nan")) == percent(float("inf")) == "—"


def test_the_curve_chart_places_points_on_shared_axes() -> None:
    from app.web import charts

    chart = charts.curve_chart(
        [
            charts.CurveInput("ada", "offline/solver-sim", [0.5, 1.0], rank=1, is_you=True),
            charts.CurveInput("bob", "offline/echo", [0.0], rank=2),
        ],
        metric="seq@k",
        k=2,
        element_id="c",
        heading="Curves",
    )
    assert chart.metric_t == "seq@t" and chart.metric_at(2) == "seq@2" and chart.ranked
    ada, bob = chart.series
    left, right = chart.plot_left, chart.plot_right
    top, bottom = chart.plot_top, chart.plot_bottom
    assert [(m.x, m.y) for m in ada.markers] == [(left, (top + bottom) / 2), (right, top)]
    assert ada.points == f"{left:g},{(top + bottom) / 2:g} {right:g},{top:g}"
    assert [(m.x, m.y) for m in bob.markers] == [(left, bottom)]
    assert ada.cells == ["50%", "100%"] and bob.cells == ["0%", "—"]
    assert bob.final == "0%" and (ada.palette, bob.palette) == (0, 1)
    assert [tick.label for tick in chart.y_ticks] == ["0%", "25%", "50%", "75%", "100%"]
    assert "#1 ada (offline/solver-sim): 50% at t = 1, 100% at t = 2" in chart.description
    assert "#2 bob (offline/echo): 0% at t = 1, 0% at t = 1" in chart.description


@pytest.mark.parametrize(
    ("values", "k", "cells"),
    [
        ([], 3, ["—", "—", "—"]),  # nothing yet
        ([0.4], 1, ["40%"]),  # k = 1: one point, mid-width
        ([1.5, -0.2], 2, ["100%", "0%"]),  # out of range: clamped
        ([float("nan"), None, 0.5], 3, ["—", "—", "50%"]),  # unknowns skipped
        ([0.1, 0.2, 0.3, 0.4], 2, ["10%", "20%", "30%", "40%"]),  # longer than k: k grows
    ],
)
def test_the_curve_chart_survives_odd_curves(
    values: list[float | None], k: int, cells: list[str]
) -> None:
    from app.web import charts

    chart = charts.curve_chart(
        [charts.CurveInput("ünïcode <b>", "m", values)],
        metric="pass@k",
        k=k,
        element_id="c",
        heading="h",
    )
    (series,) = chart.series
    assert series.cells == cells and chart.k == len(cells)
    assert len(series.markers) == sum(cell != "—" for cell in cells)
    for marker in series.markers:
        assert chart.plot_left <= marker.x <= chart.plot_right
        assert chart.plot_top <= marker.y <= chart.plot_bottom
    if k == 1:
        assert series.markers[0].x == (chart.plot_left + chart.plot_right) / 2


def test_the_curve_chart_keeps_eight_curves_and_thins_long_axes() -> None:
    from app.web import charts

    curves = [charts.CurveInput(f"p{i}", "m", [i / 10] * 20, rank=i + 1) for i in range(12)]
    chart = charts.curve_chart(curves, metric="pass@k", k=20, element_id="c", heading="h")
    assert len(chart.series) == charts.PALETTE_SIZE == 8
    assert [tick.label for tick in chart.x_ticks] == [
        "1", "3", "5", "7", "9", "11", "13", "15", "17", "19", "20"
    ]  # fmt: skip
    empty = charts.curve_chart([], metric="pass@k", k=3, element_id="c", heading="h")
    assert empty.series == [] and empty.k == 3 and "No curves yet" in empty.description


def _benchmark_view(status: str, **fields: Any) -> Any:
    from datetime import UTC, datetime

    from app.attempt.schemas import AttemptRead

    values: dict[str, Any] = {
        "id": uuid.uuid4(),
        "challenge_id": uuid.uuid4(),
        "participant_id": uuid.uuid4(),
        "participant": "ada",
        "submitted_by": None,
        "status": status,
        "prompt": None,
        "model_spec": {"model": "offline/solver-sim", "temperature": 0.7, "system_prompt": None},
        "created_at": datetime.now(UTC),
        "started_at": None,
        "finished_at": None,
        "error": None,
        "metrics": None,
        "score": None,
        "score_details": None,
    }
    return AttemptRead(**{**values, **fields})


RUNNING_PROGRESS = {
    "metric": "pass@k",
    "k": 2,
    "attempts": 4,
    "cost_usd": 0.0042,
    "curves": {"tasks_complete": 2, "tasks_solved": 1, "pass_at": [0.5, 0.75]},
    "usage": {"actor": {"offline/solver-sim": {"input_tokens": 100, "output_tokens": 20}}},
}


def test_a_running_benchmark_attempt_shows_tasks_done_and_the_curve_so_far() -> None:
    from app.kinds.benchmark import KIND
    from app.kinds.benchmark.web import BenchmarkContext, benchmark_progress
    from app.web.attempts.service import AttemptCard
    from app.web.rendering import render_macro

    context = BenchmarkContext(metric="pass@k", k=2, tasks_total=3)
    progress = benchmark_progress(_benchmark_view("running", progress=RUNNING_PROGRESS), context)
    assert (progress.tasks_done, progress.tasks_total, progress.percent_done) == (2, 3, 67)
    assert progress.curve_points == [("pass@1", "50%"), ("pass@2", "75%")]
    assert (progress.tokens_total, progress.cost_usd, progress.metric_at_k) == (120, 0.0042, 0.75)
    card = AttemptCard(_benchmark_view("running"), [], [], extra=progress, macros=KIND.macros)
    html = render_macro("macros.html", "attempt_card", card, "/t/x/")
    assert "Tasks done" in html and "2 of 3" in html and "$0.0042" in html
    assert '<progress max="3" value="2"' in html and "temperature 0.7" in html

    later = dict(RUNNING_PROGRESS, curves={"tasks_complete": 3, "pass_at": [0.5, 0.5]})
    moved = benchmark_progress(_benchmark_view("running", progress=later), context)
    assert moved.version != progress.version  # the live page swaps the card in
    unknown_total = benchmark_progress(_benchmark_view("running", progress=RUNNING_PROGRESS), None)
    assert unknown_total.tasks_total is None and unknown_total.percent_done is None
    nothing_yet = benchmark_progress(_benchmark_view("queued"), context)
    assert (nothing_yet.tasks_done, nothing_yet.curve, nothing_yet.k) == (0, [], 2)


def test_a_completed_benchmark_attempt_shows_its_final_metrics() -> None:
    from app.kinds.benchmark.web import BenchmarkContext, benchmark_progress
    from app.scoring.measures import AttemptMetrics

    metrics = AttemptMetrics(
        succeeded=True,
        tokens_total=900,
        elapsed_ms=40,
        rating=None,
        created_at=0,
        cost_usd=0.0,
        trials=6,
        metric_at=[0.2, 0.4],
        metric_at_k=0.4,
        tasks_total=5,  # the budget ran out before two tasks: they count as unsolved
        tasks_solved=2,
    )
    view = _benchmark_view("completed", progress=RUNNING_PROGRESS, metrics=metrics)
    final = benchmark_progress(view, BenchmarkContext("pass@k", 2, tasks_total=3))
    assert (final.tasks_total, final.tasks_solved, final.metric_at_k) == (5, 2, 0.4)
    assert final.curve == [0.2, 0.4] and final.tokens_total == 900 and final.trials == 6


def test_the_model_spec_form_is_checked_as_the_api_checks_it() -> None:
    from app.kinds.benchmark.web import ModelSpecForm, model_spec_attempt
    from app.web.forms import FormError

    body = model_spec_attempt(
        ModelSpecForm(model="  offline/echo ", temperature="1,5", system_prompt="  "), "ada"
    )
    # The benchmark kind's fields, a blank system prompt not given.
    assert body.kind_fields == {"model": "offline/echo", "temperature": 1.5}
    assert body.participant == "ada"
    bare = model_spec_attempt(ModelSpecForm(model="offline/echo"), "ada")
    assert bare.kind_fields == {"model": "offline/echo"}
    for form, field, text in (
        (ModelSpecForm(), "model", "Name a model first"),
        (ModelSpecForm(model="offline/nope"), "model", "unknown offline model"),
        (ModelSpecForm(model="has space"), "model", "without spaces"),
        (ModelSpecForm(model="offline/echo", temperature="2.01"), "temperature", "0 to 2"),
        (ModelSpecForm(model="offline/echo", temperature="inf"), "temperature", "0 to 2"),
        (ModelSpecForm(model="offline/echo", temperature="1e999"), "temperature", "0 to 2"),
        (ModelSpecForm(model="offline/echo", system_prompt="a\x00b"), "system_prompt", "NUL"),
    ):
        with pytest.raises(FormError) as refused:
            model_spec_attempt(form, "ada")
        assert refused.value.field == field and text in refused.value.message, form


@pytest.mark.parametrize(
    ("spec", "tasks", "text"),
    [
        ({}, 10, "Every task · 10 tasks"),
        ({}, None, "Every task"),
        ({"max_tasks": 3}, 3, "The first 3 tasks"),
        ({"max_tasks": 20}, 10, "The first 20 tasks · 10 tasks"),
        ({"task_indices": [2]}, 1, "Task 2 · 1 task"),
        ({"task_indices": [1, 4], "max_tasks": 1}, 1, "Tasks 1, 4 (the first 1) · 1 task"),
        ({"task_indices": list(range(1, 15))}, 14, "Tasks 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, "
         "11, 12 and 2 more · 14 tasks"),
    ],
)  # fmt: skip
def test_the_task_selection_is_described(
    spec: dict[str, Any], tasks: int | None, text: str
) -> None:
    from app.kinds.benchmark.web_fragments import _selection_text

    assert _selection_text(spec, tasks) == text


@pytest.mark.parametrize("missing", [True, False])
def test_a_queued_attempt_says_when_no_worker_is_running(
    monkeypatch: pytest.MonkeyPatch, missing: bool
) -> None:
    from types import SimpleNamespace

    from app.web import rendering

    monkeypatch.setattr(rendering, "workers_missing", lambda settings: missing)
    queued = SimpleNamespace(status="queued", error=None)
    html = rendering.render_macro("macros.html", "attempt_waiting", queued)
    assert ("No worker is running right now" in html) is missing
    assert ("Queued, waiting for a worker" in html) is not missing
    running = SimpleNamespace(status="running", error=None)
    assert "Running on a worker" in rendering.render_macro(
        "macros.html", "attempt_waiting", running
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2 * 86_400 + 3 * 3_600 + 300, "in 2 days 3 h"),
        (86_400 + 30, "in 1 day"),
        (3 * 3_600 + 5 * 60 + 9, "in 3 h 5 min"),
        (5 * 60 + 20, "in 5 min 20 s"),
        (40, "in 40 s"),
        (0, "now"),
        (-5, "now"),
    ],
)
def test_countdowns_read_in_two_units_and_end_at_now(seconds: int, text: str) -> None:
    from datetime import UTC, datetime, timedelta

    from app.web.formatting import format_until

    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert format_until(now + timedelta(seconds=seconds), now) == text


def test_a_misspelt_field_comes_first_naming_what_it_probably_meant() -> None:
    from app.kit.errors import telling_first

    errors = [
        {"loc": ("target", "model"), "msg": "Field required", "type": "missing"},
        {
            "loc": ("target", "modle"),
            "msg": "Extra inputs are not permitted",
            "type": "extra_forbidden",
        },
        {"loc": ("verifier",), "msg": "Field required", "type": "missing"},
    ]
    first, *rest = telling_first(errors)
    assert first["loc"] == ("target", "modle")
    assert first["msg"] == "unknown field; did you mean 'model'?"
    # The field it meant is not reported missing too: one mistake, one message.
    assert [e["loc"] for e in rest] == [("verifier",)]
    unrelated = [
        {"loc": ("x", "zzz"), "msg": "Extra inputs are not permitted", "type": "extra_forbidden"}
    ]
    assert telling_first(unrelated)[0]["msg"] == "Extra inputs are not permitted"
    assert errors[1]["msg"] == "Extra inputs are not permitted"  # the caller's list untouched


def test_the_leaderboard_panel_marks_a_freeze_the_live_result_and_baselines() -> None:
    from datetime import UTC, datetime

    from app.leaderboard.schemas import LeaderboardItem
    from app.web.leaderboards.service import LeaderboardRow, LeaderboardView
    from app.web.rendering import render_macro
    from app.web.web_kind import StrategyText

    since = datetime(2030, 1, 1, 12, tzinfo=UTC)

    def row(handle: str, rank: int, *, baseline: bool = False, you: bool = False) -> Any:
        item = LeaderboardItem(
            rank=rank,
            participant=handle,
            baseline=baseline,
            attempt_id=uuid.uuid4(),
            score=None,
            succeeded=True,
            tokens_total=3,
            elapsed_ms=1,
            rating=None,
            created_at=since,
        )
        return LeaderboardRow(item, "3", you)

    strategy = StrategyText("fewest_tokens", "Fewest tokens", "Tokens", "Fewest first.")
    rows = [row("reference", 1, baseline=True), row("alice", 1), row("bob", 2)]

    def panel(**freeze: Any) -> str:
        own = row("carol", 7, you=True)
        board = LeaderboardView(strategy, rows, 3, own, False, **freeze)
        return render_macro("macros.html", "leaderboard_panel", board, "/full")

    frozen = panel(frozen_at=since)
    assert "<strong>Frozen</strong>" in frozen and "frozen</strong>" not in frozen
    # The participant's own row is their live result, without a rank among hidden ones.
    assert "live-result" in frozen and 'title="Your live result' in frozen
    assert frozen.count('class="baseline-tag"') == 1 and "(1)" in frozen
    admins = panel(live_in_freeze_since=since)
    assert (
        "as an admin you see the live board" in admins and "<strong>Frozen</strong>" not in admins
    )
    assert "live-result" not in admins
    live = panel()
    assert "rozen" not in live and "live-result" not in live


def test_the_page_links_keep_the_lists_parameters_and_show_only_the_pages_there_are() -> None:
    from app.web.rendering import render_macro

    middle = render_macro(
        "macros.html", "pager", 2, 3, "Tenant pages", link="?status=a b&page=", ends=True
    )
    assert 'aria-label="Tenant pages"' in middle
    assert '<a href="?status=a b&amp;page=1">« First</a>' in middle
    assert '<a href="?status=a b&amp;page=1" rel="prev">← Previous</a>' in middle
    assert "<span>Page 2 of 3</span>" in middle
    assert '<a href="?status=a b&amp;page=3" rel="next">Next →</a>' in middle
    assert '<a href="?status=a b&amp;page=3">Last »</a>' in middle
    first = render_macro(
        "macros.html",
        "pager",
        1,
        1200,
        "Attempt pages",
        anchor="#list",
        labels=("← Newer", "Older →"),
        note=" · 5 shown",
    )
    assert 'rel="prev"' not in first and "« First" not in first
    assert "<span>Page 1 of 1,200 · 5 shown</span>" in first
    assert '<a href="?page=2#list" rel="next">Older →</a>' in first
    assert "Last »" not in first
