"""pass@k and seq@k estimators."""

from __future__ import annotations

from collections.abc import Sequence


def _check_counts(n: int, c: int, k: int) -> None:
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{name} must not be negative, got {value}")
    if c > n:
        raise ValueError(f"c (correct samples, {c}) cannot exceed n (samples, {n})")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if k > n:
        raise ValueError(f"k ({k}) cannot exceed n (samples, {n})")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct (Chen et al. 2021).

    1 - C(n-c, k) / C(n, k), computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which stays exact in
    floating point where the binomials would overflow.
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    product = 1.0
    for i in range(n - c + 1, n + 1):
        product *= 1.0 - k / i
    return 1.0 - product


def pass_curve(n: int, c: int, k: int) -> list[float]:
    """pass@t for t = 1..k."""
    _check_counts(n, c, k)
    return [pass_at_k(n, c, t) for t in range(1, k + 1)]


def seq_at_t(first_success_indices: Sequence[int | None], t: int) -> float:
    """Share of tasks solved within their first t attempts.

    `first_success_indices` holds, per task, the 1-based attempt that first succeeded, or None
    for a task never solved. No tasks gives 0.0.
    """
    if isinstance(t, bool) or not isinstance(t, int) or t < 1:
        raise ValueError(f"t must be an int of at least 1, got {t!r}")
    if not first_success_indices:
        return 0.0
    solved = 0
    for index in first_success_indices:
        if index is None:
            continue
        if isinstance(index, bool) or not isinstance(index, int) or index < 1:
            raise ValueError(f"attempt indices are 1-based ints, got {index!r}")
        if index <= t:
            solved += 1
    return solved / len(first_success_indices)
