"""An attempt's `created_at` among its metrics: a date in the service and the API, epoch
milliseconds for scorer plugins, and read from documents stored in either form."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.kit.db import epoch_ms, from_epoch_ms
from app.scoring.measures import AttemptMetrics

SUBMITTED = datetime(2026, 11, 27, 19, 41, 2, 123456, tzinfo=UTC)


def test_the_api_shows_created_at_as_iso_text() -> None:
    metrics = AttemptMetrics(succeeded=True, created_at=SUBMITTED)
    assert metrics.model_dump(mode="json")["created_at"] == "2026-11-27T19:41:02.123456Z"


def test_plugins_still_read_created_at_in_epoch_milliseconds() -> None:
    metrics = AttemptMetrics(succeeded=True, created_at=SUBMITTED)
    assert metrics.as_plugin_input() == {"succeeded": True, "created_at": 1_795_808_462_123}


def test_a_document_stored_with_epoch_milliseconds_reads_as_the_same_instant() -> None:
    stored = {"succeeded": True, "created_at": 1_795_808_462_123, "trials": 1}
    metrics = AttemptMetrics.model_validate(stored)
    assert metrics.created_at == datetime(2026, 11, 27, 19, 41, 2, 123000, tzinfo=UTC)
    assert metrics.as_plugin_input()["created_at"] == 1_795_808_462_123


def test_a_document_stored_with_iso_text_reads_back_unchanged() -> None:
    stored = AttemptMetrics(created_at=SUBMITTED).model_dump(mode="json", exclude_unset=True)
    assert AttemptMetrics.model_validate(stored).created_at == SUBMITTED


def test_a_date_without_its_offset_is_refused() -> None:
    with pytest.raises(ValueError):
        AttemptMetrics.model_validate({"created_at": "2026-11-27T19:41:02"})


def test_a_finished_attempts_metrics_carry_its_submission_time() -> None:
    assert AttemptMetrics(created_at=SUBMITTED).submitted_at() == SUBMITTED
    with pytest.raises(ValueError, match="created_at"):
        AttemptMetrics().submitted_at()


@pytest.mark.parametrize(
    "when",
    [
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2026, 11, 27, 19, 41, 2, 999999, tzinfo=UTC),
        datetime(9998, 12, 31, 23, 59, 59, 1000, tzinfo=UTC),
    ],
)
def test_epoch_milliseconds_floor_to_the_millisecond_exactly(when: datetime) -> None:
    milliseconds = epoch_ms(when)
    assert from_epoch_ms(milliseconds) == when.replace(microsecond=when.microsecond // 1000 * 1000)
    assert epoch_ms(from_epoch_ms(milliseconds)) == milliseconds
