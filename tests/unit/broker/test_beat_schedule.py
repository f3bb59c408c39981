"""Beat sends one message a period, naming that period's periodic tasks in order, and each
message waits at most five periods (ten seconds at least) before a worker drops it."""

from __future__ import annotations

from app.kit.broker.config import PERIODIC_TASK, beat_schedule, periodic_options


def test_tasks_of_one_period_share_one_message_in_the_order_given() -> None:
    schedule = beat_schedule(
        "q",
        {
            "sweep-attempts": ("gauntlet.sweep_attempts", 1.0),
            "tally": ("kind.tally", 3600.0),
            "sweep-mail": ("gauntlet.sweep_mail", 1.0),
        },
    )
    assert schedule == {
        "periodic-every-1s": {
            "task": PERIODIC_TASK,
            "schedule": 1.0,
            "args": (["gauntlet.sweep_attempts", "gauntlet.sweep_mail"],),
            "options": {"queue": "q", "expires": 10.0},
        },
        "periodic-every-3600s": {
            "task": PERIODIC_TASK,
            "schedule": 3600.0,
            "args": (["kind.tally"],),
            "options": {"queue": "q", "expires": 18000.0},
        },
    }


def test_a_periodic_message_waits_five_periods_and_at_least_ten_seconds() -> None:
    assert periodic_options("q", 0.5)["expires"] == 10.0
    assert periodic_options("q", 5.0)["expires"] == 25.0
    assert periodic_options("q", 60.0) == {"queue": "q", "expires": 300.0}
