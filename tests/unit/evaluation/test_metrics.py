from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from app.evaluation.engine.metrics import pass_at_k, pass_curve, seq_at_t


def exact_pass_at_k(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def test_estimator_matches_exact_combinatorics_for_all_small_cases() -> None:
    for n in range(1, 16):
        for c in range(n + 1):
            for k in range(1, n + 1):
                expected = float(exact_pass_at_k(n, c, k))
                assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12), (n, c, k)


def test_no_correct_sample_gives_zero_and_all_correct_gives_one() -> None:
    assert pass_at_k(10, 0, 3) == 0.0
    assert pass_at_k(10, 10, 1) == 1.0


def test_too_few_failures_to_fill_k_draws_is_certain_success() -> None:
    # n - c < k: every draw of k samples must contain a correct one.
    assert pass_at_k(5, 3, 3) == 1.0
    assert pass_at_k(5, 1, 5) == 1.0


def test_pass_at_1_is_the_share_correct() -> None:
    assert pass_at_k(8, 3, 1) == pytest.approx(3 / 8)


def test_huge_sample_counts_stay_finite_and_accurate() -> None:
    n, c, k = 100_000, 37, 1_000
    value = pass_at_k(n, c, k)
    expected = 1 - math.exp(
        math.lgamma(n - c + 1)
        - math.lgamma(n - c - k + 1)
        - math.lgamma(n + 1)
        + math.lgamma(n - k + 1)
    )
    assert math.isfinite(value)
    assert value == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "c", "k"),
    [(-1, 0, 1), (5, -1, 1), (5, 2, -1), (5, 6, 1), (5, 2, 6), (5, 2, 0), (0, 0, 1)],
)
def test_invalid_arguments_are_rejected(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)


def test_non_integer_arguments_are_rejected() -> None:
    with pytest.raises(TypeError):
        pass_at_k(5.0, 2, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        pass_at_k(5, True, 1)


def test_pass_curve_lists_every_t_and_never_decreases() -> None:
    curve = pass_curve(10, 2, 10)
    assert len(curve) == 10
    assert curve == [pass_at_k(10, 2, t) for t in range(1, 11)]
    assert all(earlier <= later for earlier, later in itertools.pairwise(curve))
    assert curve[-1] == 1.0


def test_pass_curve_validates_like_the_estimator() -> None:
    with pytest.raises(ValueError):
        pass_curve(3, 1, 4)


def test_seq_at_t_counts_tasks_solved_within_t_attempts() -> None:
    first_successes = [1, 3, None, 2, 5]
    assert seq_at_t(first_successes, 1) == pytest.approx(1 / 5)
    assert seq_at_t(first_successes, 2) == pytest.approx(2 / 5)
    assert seq_at_t(first_successes, 3) == pytest.approx(3 / 5)
    assert seq_at_t(first_successes, 10) == pytest.approx(4 / 5)


def test_seq_at_t_of_no_tasks_is_zero() -> None:
    assert seq_at_t([], 3) == 0.0
    assert seq_at_t([None, None], 3) == 0.0


@pytest.mark.parametrize("t", [0, -1])
def test_seq_at_t_rejects_t_below_one(t: int) -> None:
    with pytest.raises(ValueError):
        seq_at_t([1], t)


def test_seq_at_t_rejects_zero_based_indices() -> None:
    with pytest.raises(ValueError):
        seq_at_t([0, 1], 2)


# best-score curves, standard errors, run curves, usage and cost

from app.evaluation.engine.metrics import (  # noqa: E402
    AttemptOutcome,
    Price,
    TaskOutcome,
    TaskStats,
    UsageTotals,
    apply_prices,
    expected_best_of,
    parse_prices,
    prefix_best_curve,
    run_curves,
    run_summary,
    standard_error,
    total_cost,
)


def outcome(index: int, *results: tuple[bool, float]) -> TaskOutcome:
    return TaskOutcome(
        task_index=index,
        task_id=f"t{index}",
        attempts=[
            AttemptOutcome(attempt_index=position, success=success, score=score)
            for position, (success, score) in enumerate(results, start=1)
        ],
    )


def test_expected_best_of_matches_enumerating_every_subset() -> None:
    scores = [0.1, 0.7, 0.7, 0.0, 0.4, 1.0, 0.25]
    for t in range(1, len(scores) + 1):
        subsets = list(itertools.combinations(scores, t))
        exact = sum(Fraction(max(subset)).limit_denominator(1000) for subset in subsets) / len(
            subsets
        )
        assert expected_best_of(scores, t) == pytest.approx(float(exact), abs=1e-12), t


def test_expected_best_of_binary_scores_is_pass_at_k() -> None:
    for n, c in [(10, 0), (10, 3), (7, 7), (200, 13)]:
        scores = [1.0] * c + [0.0] * (n - c)
        for t in (1, 2, 5, n):
            assert expected_best_of(scores, t) == pytest.approx(pass_at_k(n, c, t), abs=1e-12)


def test_expected_best_of_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        expected_best_of([0.5], 2)
    with pytest.raises(ValueError):
        expected_best_of([0.5, math.nan], 1)


def test_prefix_best_curve_holds_after_the_last_attempt() -> None:
    assert prefix_best_curve([0.2, 0.1, 0.6], 5) == [0.2, 0.2, 0.6, 0.6, 0.6]
    assert prefix_best_curve([], 2) == [0.0, 0.0]


def test_standard_error() -> None:
    assert standard_error([1.0, 0.0, 1.0, 0.0]) == pytest.approx(math.sqrt(1 / 3 / 4))
    assert standard_error([0.5]) is None
    assert standard_error([]) is None


def test_seq_run_curves_with_incomplete_tasks_and_the_gain() -> None:
    tasks = [
        outcome(1, (True, 1.0)),
        outcome(2, (False, 0.2), (True, 1.0)),
        outcome(3, (False, 0.0), (False, 0.5), (False, 0.1)),
        outcome(4, (False, 0.3)),  # one attempt of three: incomplete
    ]
    curves = run_curves(tasks, "seq@k", 3)
    assert (curves.tasks_complete, curves.tasks_incomplete, curves.tasks_solved) == (3, 1, 2)
    assert [point.value for point in curves.metric_at] == pytest.approx([1 / 3, 2 / 3, 2 / 3])
    assert [point.value for point in curves.best_score_at] == pytest.approx([0.4, 2.5 / 3, 2.5 / 3])
    assert curves.gain is not None
    assert curves.gain.value == pytest.approx(1 / 3)
    assert curves.gain.stderr == pytest.approx(standard_error([0.0, 1.0, 0.0]))
    # At a smaller k the fourth task is complete too.
    assert run_curves(tasks, "seq@k", 1).tasks_complete == 4


def test_pass_run_curves_use_every_sample() -> None:
    tasks = [outcome(1, (True, 1.0), (False, 0.0), (False, 0.5)), outcome(2, (False, 0.0))]
    curves = run_curves(tasks, "pass@k", 1)
    assert curves.tasks_complete == 2
    assert curves.metric_at[0].value == pytest.approx((1 / 3 + 0) / 2)
    assert curves.to_dict()["pass_at"] == [pytest.approx(1 / 6)]
    assert run_curves(tasks, "pass@k", 2).tasks_incomplete == 1
    assert run_curves([], "pass@k", 2).metric_at[0].value is None


def test_price_cost_counts_cached_input_at_its_own_price() -> None:
    price = Price(
        input_cost_per_token=2.0, output_cost_per_token=5.0, cache_read_input_token_cost=0.5
    )
    assert price.cost(input_tokens=10, cached_tokens=4, output_tokens=3) == 6 * 2 + 4 * 0.5 + 15
    plain = Price(input_cost_per_token=2.0, output_cost_per_token=5.0)
    assert plain.cost(input_tokens=10, cached_tokens=4, output_tokens=3) == 35


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"m": {"input_cost_per_token": 1}}, "missing output_cost_per_token"),
        ({"m": {"input_cost_per_token": -1, "output_cost_per_token": 1}}, "price >= 0"),
        ({"m": {"input_cost_per_token": 1, "output_cost_per_token": 1, "x": 2}}, "unknown"),
        (["m"], "mapping"),
    ],
)
def test_bad_price_files_are_refused(data: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_prices(data)


def test_usage_sums_tokens_and_an_unknown_price_makes_the_cost_null() -> None:
    totals = UsageTotals()
    totals.add_call(
        {
            "input_tokens": 10,
            "cached_tokens": 2,
            "thinking_tokens": 1,
            "output_tokens": 4,
            "cost_usd": 0.5,
        }
    )
    totals.add_call({"input_tokens": 5, "output_tokens": 1, "cost_usd": None})
    assert (totals.calls, totals.input_tokens, totals.output_tokens) == (2, 15, 5)
    assert totals.cost_usd is None
    usage = {"actor": {"m": totals}}
    assert total_cost(usage) is None
    priced = apply_prices(usage, {"m": Price(input_cost_per_token=0.1, output_cost_per_token=1.0)})
    assert priced["actor"]["m"].cost_usd == pytest.approx(1.5 + 5.0)
    assert totals.cost_usd is None  # the original is untouched


def test_task_stats_round_trip_through_their_summary() -> None:
    trial = {
        "attempt_index": 1,
        "actor": {"model": "a", "input_tokens": 3, "output_tokens": 2, "cost_usd": 0.25},
        "judge": {
            "success": True,
            "score": 1.0,
            "calls": [{"model": "j", "input_tokens": 7, "cost_usd": 0.5}],
        },
        "critic": {"calls": []},
    }
    stats = TaskStats.from_trials(4, "t4", [trial])
    stats.status = "done"
    summary = stats.to_summary("seq@k", 3)
    assert summary["metric_at"] == [1.0, 1.0, 1.0]
    assert summary["cost_usd"] == 0.75 and summary["calls"] == 2
    again = TaskStats.from_summary(summary)
    assert again.outcome == stats.outcome
    assert again.status == "done"
    document = run_summary([again], metric="seq@k", k=3)
    assert document["usage"]["judge"]["j"]["input_tokens"] == 7
    assert document["cost_usd"] == 0.75
