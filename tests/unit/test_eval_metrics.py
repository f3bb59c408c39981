from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest

from app.evaluation.metrics import pass_at_k, pass_curve, seq_at_t


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
