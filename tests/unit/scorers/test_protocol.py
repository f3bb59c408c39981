"""AttemptMetrics and ScoringContext read both ways: as the original protocol's dicts and by
attribute; odd and hostile keys behave as they would on a plain dict; nothing can be changed.
The built-in scorers take plain dicts as well as the protocol objects."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from app.scoring.sandbox.child import HEADER, encode_frame
from scorers.frugal import FrugalScorer
from scorers.protocol import AttemptMetrics, ScoringContext
from scorers.testing import EchoScorer
from scorers.weighted import WeightedScorer
from tests.fixtures.original_scorers import OriginalExampleScorer

CTX_DATA = {"tenant_id": "t1", "challenge_id": "c1", "participant_id": "p1", "timeout_ms": 5000}
CTX = ScoringContext.from_dict(CTX_DATA)
METRICS = AttemptMetrics(succeeded=True, tokens_total=120, elapsed_ms=900, metric_at=[0.5, 0.75])


class LookalikeKey(str):
    """Hashes and compares like 'succeeded' but holds another text: a dict finds the
    'succeeded' entry with it, and so must the mapping, without reading any other attribute."""

    def __hash__(self) -> int:
        return hash("succeeded")

    def __eq__(self, other: object) -> bool:
        return other == "succeeded" or str.__eq__(self, other)


class ExplodingKey:
    """Collides with 'succeeded' and raises when compared, as a hostile key might."""

    def __hash__(self) -> int:
        return hash("succeeded")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("compared")


ODD_KEYS: list[Any] = [
    "succeeded",
    "metric_at",
    "rating",  # a known field without a value
    "app_id",  # keys the original context had and Gauntlet lacks
    "end_user_id",
    "",
    "SUCCEEDED",
    "succeeded ",
    "succeeded\x00",
    "süccéeded",
    "🙂",
    "x" * 100_000,
    "__class__",
    "__dict__",
    "__init__",
    "_field_names",
    "to_dict",
    "from_dict",
    "copy",
    "keys",
    "get",
    0,
    1,
    -1,
    True,
    None,
    1.5,
    math.nan,
    b"succeeded",
    ("succeeded",),
    frozenset({"succeeded"}),
    LookalikeKey("evil"),
    ExplodingKey(),
    ["succeeded"],  # unhashable: a dict raises TypeError, so must the mapping
    {"succeeded": 1},
    {"succeeded"},
]


READS: dict[str, Callable[[Mapping[Any, Any], Any], Any]] = {
    "[key]": lambda mapping, key: mapping[key],
    ".get(key)": lambda mapping, key: mapping.get(key),
    ".get(key, default)": lambda mapping, key: mapping.get(key, "default"),
    "key in": lambda mapping, key: key in mapping,
}


def outcome(read: Callable[[Mapping[Any, Any], Any], Any], mapping: Any, key: Any) -> Any:
    """The value read, or the type of the exception raised."""
    try:
        return ("value", read(mapping, key))
    except Exception as exc:
        return ("raises", type(exc))


@pytest.mark.parametrize("record", [METRICS, CTX], ids=["metrics", "ctx"])
@pytest.mark.parametrize("key", ODD_KEYS, ids=lambda key: repr(key)[:30])
def test_every_key_reads_exactly_as_on_a_plain_dict(record: Mapping[str, Any], key: Any) -> None:
    plain = dict(record)
    for name, read in READS.items():
        assert outcome(read, record, key) == outcome(read, plain, key), name


def test_the_original_protocols_documented_example_reads_metrics_and_context() -> None:
    result = OriginalExampleScorer().score(AttemptMetrics(succeeded=True, tokens_total=40), {}, CTX)
    assert result == {
        "score": 80.0,
        "details": {"tenant_id": "t1", "succeeded": True, "tokens_total": 40},
    }
    # Metrics Gauntlet does not have read as the plugin's defaults.
    empty = OriginalExampleScorer().score(AttemptMetrics(), {}, CTX)
    assert empty["score"] == 0.0
    assert empty["details"]["succeeded"] is False and empty["details"]["tokens_total"] == 0


def test_mapping_access_sees_present_values_only() -> None:
    metrics = AttemptMetrics(succeeded=False, tokens_total=0, rating=None)
    # False and 0 are values; None is "not known here" and so an absent key.
    assert metrics.get("succeeded", True) is False
    assert metrics.get("tokens_total", 99) == 0
    assert metrics.get("rating", 7.0) == 7.0
    assert "rating" not in metrics and "succeeded" in metrics
    assert list(metrics) == ["succeeded", "tokens_total"]
    assert list(metrics.keys()) == ["succeeded", "tokens_total"]
    assert list(metrics.values()) == [False, 0]
    assert list(metrics.items()) == [("succeeded", False), ("tokens_total", 0)]
    assert len(metrics) == 2 and len(AttemptMetrics()) == 0
    assert dict(metrics) == {**metrics} == {"succeeded": False, "tokens_total": 0}
    with pytest.raises(KeyError):
        metrics["rating"]


def test_context_keys_the_original_had_and_gauntlet_lacks_read_as_missing() -> None:
    assert CTX["tenant_id"] == "t1" and CTX["timeout_ms"] == 5000
    assert CTX.get("app_id") is None and CTX.get("end_user_id", "none") == "none"
    assert "app_id" not in CTX and "end_user_id" not in CTX
    with pytest.raises(KeyError, match="app_id"):
        CTX["app_id"]
    assert sorted(CTX) == ["challenge_id", "participant_id", "tenant_id", "timeout_ms"]


def test_attribute_access_reads_declared_fields_and_refuses_unknown_names() -> None:
    assert METRICS.succeeded is True and METRICS.rating is None
    assert CTX.tenant_id == "t1" and CTX.participant_id == "p1"
    # No TypedDict user ever had attributes: an unknown name is an ordinary AttributeError,
    # so a typo is loud and getattr's default still works.
    with pytest.raises(AttributeError):
        CTX.app_id  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError):
        METRICS.suceeded  # type: ignore[attr-defined]  # noqa: B018
    assert getattr(CTX, "end_user_id", None) is None


def test_they_cannot_be_changed() -> None:
    metrics = AttemptMetrics(succeeded=True, metric_at=[0.25])
    with pytest.raises(dataclasses.FrozenInstanceError):
        metrics.succeeded = False  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del metrics.succeeded  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        CTX.tenant_id = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        metrics["succeeded"] = False  # type: ignore[index]
    with pytest.raises(TypeError):
        del CTX["tenant_id"]  # type: ignore[attr-defined]
    for method in ("update", "pop", "popitem", "setdefault", "clear", "__setitem__"):
        assert not hasattr(metrics, method) and not hasattr(CTX, method), method
    # metric_at arrives as a list but is kept as a tuple, so it cannot be changed in place.
    assert metrics.metric_at == (0.25,)
    with pytest.raises(AttributeError):
        metrics["metric_at"].append(1.0)
    # copy() is a plain, mutable dict of the present keys, independent of the original.
    copied = metrics.copy()
    copied["succeeded"] = False
    assert type(copied) is dict and metrics.succeeded is True


def test_they_equal_plain_dicts_with_the_same_present_items() -> None:
    assert AttemptMetrics(succeeded=True, rating=None) == {"succeeded": True}
    assert AttemptMetrics(succeeded=True) != {"succeeded": True, "rating": None}
    assert CTX == CTX_DATA and ScoringContext(**CTX_DATA) == CTX
    assert isinstance(METRICS, Mapping) and isinstance(CTX, Mapping)
    with pytest.raises(TypeError):
        hash(CTX)  # unhashable, as a dict is


def test_conversions() -> None:
    assert AttemptMetrics.from_dict(METRICS) == METRICS
    assert AttemptMetrics.from_dict({"succeeded": True, "brand_new": 1}) == {"succeeded": True}
    assert METRICS.to_dict()["metric_at"] == [0.5, 0.75]
    assert METRICS.to_dict()["rating"] is None
    assert ScoringContext.from_dict({**CTX_DATA, "app_id": "a1"}) == CTX_DATA
    with pytest.raises(TypeError):
        ScoringContext.from_dict({"tenant_id": "t1"})


def test_a_plugin_can_return_them_inside_details() -> None:
    """A dict plugin may echo its metrics or context in `details`; the sandbox child encodes
    them as the dicts they are to such a plugin."""
    frame = encode_frame({"details": {"metrics": METRICS, "ctx": CTX}})
    decoded = json.loads(frame[HEADER.size :])
    assert decoded["details"] == {
        "metrics": {
            "succeeded": True,
            "tokens_total": 120,
            "elapsed_ms": 900,
            "metric_at": [0.5, 0.75],
        },
        "ctx": CTX_DATA,
    }


PLAIN_METRICS = [
    {"succeeded": True, "rating": 8, "elapsed_ms": 5000, "tokens_total": 1000},
    {"succeeded": False, "rating": 3, "elapsed_ms": 2000, "tokens_total": 500},
    {"succeeded": True, "rating": None, "elapsed_ms": None, "tokens_total": None},
    {"succeeded": "true", "tokens_total": 10},
    {"succeeded": True, "tokens_total": 250, "app_id": "a1", "metric_at_k": 0.5},
    {},
]


@pytest.mark.parametrize("data", PLAIN_METRICS)
def test_weighted_scorer_gives_plain_dicts_the_same_score(data: dict[str, Any]) -> None:
    from_dict = WeightedScorer().score(data, {}, CTX_DATA)
    from_protocol = WeightedScorer().score(AttemptMetrics.from_dict(data), {}, CTX)
    assert from_dict == from_protocol


def test_weighted_scorer_on_plain_dicts_matches_the_documented_examples() -> None:
    assert WeightedScorer().score(PLAIN_METRICS[0], {}, CTX_DATA)["score"] == 165.0
    assert WeightedScorer().score(PLAIN_METRICS[1], {}, CTX_DATA)["score"] == 23.0
    with pytest.raises(ValueError, match="tokens_total"):
        WeightedScorer().score({"tokens_total": "many"}, {}, CTX_DATA)


@pytest.mark.parametrize("data", PLAIN_METRICS)
def test_frugal_scorer_gives_plain_dicts_the_same_score(data: dict[str, Any]) -> None:
    config = {"budget": 1000}
    from_dict = FrugalScorer().score(data, config, CTX_DATA)
    assert from_dict == FrugalScorer().score(AttemptMetrics.from_dict(data), config, CTX)


def test_frugal_scorer_on_a_plain_dict() -> None:
    result = FrugalScorer().score({"succeeded": True, "tokens_total": 250}, {}, CTX_DATA)
    assert result["score"] == 75.0


def test_echo_scorer_on_plain_dicts() -> None:
    result = EchoScorer().score({"succeeded": True, "extra": 1}, {"score": 2}, CTX_DATA)
    assert result["score"] == 2.0
    details = result["details"]
    assert details is not None
    assert details["metrics"]["succeeded"] is True and "extra" not in details["metrics"]
    assert details["ctx"] == CTX_DATA
