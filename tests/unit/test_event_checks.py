"""How the event bench (bench/event_checks.py) judges the requests of its crowd: which
failures a killed API excuses, what hostile and legitimate requests must get."""

from __future__ import annotations

from bench.event_checks import Request, judge_requests, within

DOWN = [(100.0, 104.0)]  # the API killed at 100 s, answering again at 104 s


def request(kind: str, status: int, started: float, ended: float | None = None) -> Request:
    return Request(kind, "x", started, started + 0.05 if ended is None else ended, status)


def test_a_failure_during_a_killed_apis_down_time_is_excused() -> None:
    inside = [request("attempt", 0, 101.0), request("poll", 502, 103.9)]
    verdict = judge_requests(inside, DOWN)
    assert verdict.failures_inside == 2 and not verdict.failures_outside


def test_a_request_in_flight_when_the_api_was_killed_is_excused() -> None:
    verdict = judge_requests([request("attempt", 0, 99.5, 100.5)], DOWN)
    assert verdict.failures_inside == 1 and not verdict.failures_outside


def test_failures_outside_the_down_time_and_its_grace_are_not_excused() -> None:
    outside = [request("poll", 500, 90.0), request("attempt", 0, 105.5), request("poll", 503, 200)]
    verdict = judge_requests(outside, DOWN, grace=1.0)
    assert len(verdict.failures_outside) == 3
    assert judge_requests(outside, [], grace=1.0).failures_outside == outside


def test_the_grace_widens_the_window_on_both_sides() -> None:
    assert within(DOWN, request("poll", 0, 98.96), grace=1.0)
    assert within(DOWN, request("poll", 0, 104.9), grace=1.0)
    assert not within(DOWN, request("poll", 0, 105.1), grace=1.0)


def test_hostile_requests_must_get_a_4xx() -> None:
    answers = [request("hostile", 422, 1), request("hostile", 200, 2), request("hostile", 404, 3)]
    verdict = judge_requests(answers, [])
    assert verdict.hostile == 3
    assert [r.status for r in verdict.hostile_not_4xx] == [200]


def test_a_hostile_request_unanswered_while_the_api_was_down_is_not_counted() -> None:
    verdict = judge_requests([request("hostile", 0, 102.0)], DOWN)
    assert verdict.hostile == 0 and not verdict.hostile_not_4xx and verdict.failures_inside == 1


def test_legitimate_requests_may_be_refused_only_by_a_participant_limit() -> None:
    answers = [request("attack", 429, 1), request("attempt", 409, 2), request("poll", 404, 3)]
    verdict = judge_requests(answers, [])
    assert verdict.limited == 2
    assert [r.status for r in verdict.unexpected_4xx] == [404]
