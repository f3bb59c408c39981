"""Trials are written as they land, those landing together in one transaction, and each save
returns only once its trial is stored (or raises what stopped the write)."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from app.attempt.repository import LandedTrial
from app.attempt.trial_writer import TrialWriter
from app.evaluation.engine.types import CallRecord, JudgeSection, TrialRecord
from app.kit.config import Settings
from app.kit.lease.service import LeaseLost


class RecordingWriter(TrialWriter):
    """The writer with the database replaced by a list of batches; `gate` holds a write."""

    def __init__(self, fail_with: BaseException | None = None) -> None:
        super().__init__(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), Settings())
        self.batches: list[list[int]] = []
        self.fail_with = fail_with
        self.gate = threading.Event()
        self.gate.set()

    def _write(self, batch: list[LandedTrial]) -> None:
        self.gate.wait(5)
        if self.fail_with is not None:
            raise self.fail_with
        self.batches.append([landed.trial.attempt_index for landed in batch])


def _landed(index: int) -> LandedTrial:
    actor = CallRecord(model="offline/echo", prompt=[], output=str(index))
    return LandedTrial(TrialRecord(index, actor, JudgeSection(None, True, 1.0)))


def test_trials_landing_together_are_written_in_one_batch() -> None:
    writer = RecordingWriter()

    async def scenario() -> None:
        await asyncio.gather(*(writer.save(_landed(index)) for index in (1, 2, 3)))

    asyncio.run(scenario())
    assert writer.batches == [[1, 2, 3]]


def test_a_trial_landing_during_a_write_goes_in_the_next_batch_and_waits_for_it() -> None:
    writer = RecordingWriter()
    writer.gate.clear()

    async def scenario() -> None:
        first = asyncio.ensure_future(writer.save(_landed(1)))
        await asyncio.sleep(0.05)  # the first batch is being written
        later = asyncio.ensure_future(writer.save(_landed(2)))
        also = asyncio.ensure_future(writer.save(_landed(3)))
        await asyncio.sleep(0.05)
        assert not later.done()
        writer.gate.set()
        await asyncio.gather(first, later, also)

    asyncio.run(scenario())
    assert writer.batches == [[1], [2, 3]]


def test_every_save_of_a_failed_batch_raises_its_error() -> None:
    writer = RecordingWriter(fail_with=LeaseLost())

    async def scenario() -> list[BaseException | None]:
        results = await asyncio.gather(
            *(writer.save(_landed(index)) for index in (1, 2)), return_exceptions=True
        )
        return list(results)

    results = asyncio.run(scenario())
    assert all(isinstance(result, LeaseLost) for result in results)
    assert writer.batches == []


def test_a_save_after_a_failed_batch_is_written_afresh() -> None:
    writer = RecordingWriter(fail_with=LeaseLost())

    async def scenario() -> None:
        with pytest.raises(LeaseLost):
            await writer.save(_landed(1))
        writer.fail_with = None
        await writer.save(_landed(2))

    asyncio.run(scenario())
    assert writer.batches == [[2]]
