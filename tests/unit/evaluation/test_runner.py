from __future__ import annotations

import asyncio
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from app.evaluation.commands.folder import RunFolderStore
from app.evaluation.engine.benchmark import (
    AttemptView,
    Benchmark,
    BenchmarkError,
    Task,
    complete,
    resolve_spec,
    use_models,
)
from app.evaluation.engine.runner import (
    MemoryRunStore,
    RunAborted,
    RunConfig,
    RunConfigMismatch,
    RunResult,
    check_config,
    continuing_prompt_style,
    fingerprint,
    result_settings,
    run_benchmark,
    select_tasks,
)
from app.evaluation.engine.types import Message, ModelSpec, TrialRecord, VerifierResult
from app.outbound.prices import Price
from tests.fixtures.eval_benchmark import ScriptedClient, make_benchmark, make_tasks, secret

ACTOR = ModelSpec(model="fake/actor")
CRITIC = ModelSpec(model="fake/critic", temperature=0.0)
TASK_NUMBER = re.compile(r"^Task (\d+):")


def config(**changes: Any) -> RunConfig:
    values: dict[str, Any] = {
        "benchmark": "memory_bench",
        "metric": "seq@k",
        "k": 3,
        "feedback_mode": "raw",
        "actor": ACTOR,
    }
    values.update(changes)
    return RunConfig(**values)


def solver(solve_on: dict[int, set[int]]) -> Any:
    """An actor that gives task i's secret on its n-th call for that task when n is in
    solve_on[i] (calls counted per task), and a wrong answer otherwise."""
    counts: Counter[int] = Counter()

    def respond(spec: ModelSpec, messages: list[Message]) -> str:
        match = TASK_NUMBER.match(messages[-1]["content"])
        if match is None:
            return "a hint without answers"
        index = int(match.group(1))
        counts[index] += 1
        if counts[index] in solve_on.get(index, set()):
            return f"it is {secret(index)}"
        return "no idea"

    return respond


def run(
    benchmark: Benchmark,
    run_config: RunConfig,
    client: Any,
    store: Any = None,
    **kwargs: Any,
) -> RunResult:
    return asyncio.run(
        run_benchmark(benchmark, run_config, store or MemoryRunStore(), client, **kwargs)
    )


# pass@k and seq@k over tasks


def test_pass_at_k_draws_k_samples_per_task_and_estimates_the_curve() -> None:
    # Task 1: 1 success of 4; task 2: 4 of 4; task 3: none.
    client = ScriptedClient(solver({1: {2}, 2: {1, 2, 3, 4}}))
    store = MemoryRunStore()
    result = run(make_benchmark(count=3), config(metric="pass@k", k=4), client, store)
    assert result.status == "complete"
    assert Counter(TASK_NUMBER.match(p).group(1) for p in client.prompts_of("fake/actor")) == {  # type: ignore[union-attr]
        "1": 4,
        "2": 4,
        "3": 4,
    }
    curves = result.summary["curves"]
    # pass@t for task 1 (n=4, c=1) is t/4; task 2 is 1; task 3 is 0.
    assert curves["pass_at"] == pytest.approx([(t / 4 + 1) / 3 for t in range(1, 5)])
    assert curves["tasks_solved"] == 2
    assert all(
        trial.critic.feedback is None
        for trials in store.trials.values()
        for trial in trials.values()
    )


def test_seq_at_k_stops_at_the_first_success_and_gives_feedback_to_every_failure() -> None:
    client = ScriptedClient(solver({1: {1}, 2: {3}, 3: set()}))
    store = MemoryRunStore()
    result = run(make_benchmark(count=3), config(k=3), client, store)
    attempts = {index: sorted(trials) for index, trials in store.trials.items()}
    assert attempts == {1: [1], 2: [1, 2, 3], 3: [1, 2, 3]}
    assert store.trials[2][3].success and store.trials[2][3].critic.feedback is None
    assert [store.trials[3][i].critic.feedback for i in (1, 2, 3)] == ["wrong secret"] * 3
    curves = result.summary["curves"]
    assert curves["seq_at"] == pytest.approx([1 / 3, 1 / 3, 2 / 3])
    assert curves["gain"]["value"] == pytest.approx(1 / 3)


def test_seq_at_k_prompt_holds_the_attempt_line_and_numbered_history() -> None:
    client = ScriptedClient(solver({}))
    run(make_benchmark(count=1), config(k=2), client)
    assert client.prompts_of("fake/actor") == [
        "Task 1: name the secret.\n\nThis is attempt 1 of 2. If this attempt does not pass, "
        "you will receive feedback and can revise it on the remaining attempts.",
        "Task 1: name the secret.\n\nThis is attempt 2 of 2. Review your previous attempt(s) "
        "and the feedback below, then provide an improved answer.\n\n"
        "<PreviousAttempt 1>\nno idea\n</PreviousAttempt 1>\n\n"
        "<Feedback 1>\nwrong secret\n</Feedback 1>",
    ]


def test_a_run_begun_in_another_prompt_style_continues_only_in_that_style() -> None:
    """The style's version is a run setting: a store holding a run of the earlier wording is
    not continued in seq_k's (the refusal says how to continue it); named, it continues with
    its history in its own words, and a caller may adopt the stored style."""
    benchmark = make_benchmark(count=1)
    store = MemoryRunStore()
    old = config(k=2, prompt_style="gauntlet-2025")
    run(benchmark, old, ScriptedClient(solver({})), store)
    assert store.config is not None
    assert store.config["settings"]["prompt_version"] == "2025-01.1"

    with pytest.raises(RunConfigMismatch, match="`prompt_style: gauntlet-2025` in the variant"):
        run(benchmark, config(k=3, allow_continue=True), ScriptedClient(solver({})), store)
    with pytest.raises(ValueError, match="unknown prompt style 'seqk'"):
        run(benchmark, config(prompt_style="seqk"), ScriptedClient(solver({})), store)

    adopted = continuing_prompt_style(config(k=3, allow_continue=True), store.config)
    assert adopted.prompt_style == "gauntlet-2025"
    client = ScriptedClient(solver({}))
    run(benchmark, adopted, client, store)
    [third] = client.prompts_of("fake/actor")
    assert third == (
        "Task 1: name the secret.\n\nThis is attempt 3 of 3.\n\n"
        "Attempt 1 output:\nno idea\n\nFeedback on attempt 1:\nwrong secret\n\n"
        "Attempt 2 output:\nno idea\n\nFeedback on attempt 2:\nwrong secret"
    )
    assert continuing_prompt_style(config(), None).prompt_style == "seq_k"


def test_best_score_curve_uses_graded_scores() -> None:
    def respond(spec: ModelSpec, messages: list[Message]) -> str:
        return "the secret is hidden"  # scores 0.5 under the default verifier

    graded = make_benchmark(count=2, verifier="graded")
    result = run(graded, config(metric="pass@k", k=2), ScriptedClient(respond))
    assert result.summary["curves"]["best_score_at"] == [0.5, 0.5]
    assert result.summary["curves"]["pass_at"] == [0.0, 0.0]


def test_a_deterministic_verifier_scores_0_or_1_with_partial_credit_in_details() -> None:
    def respond(spec: ModelSpec, messages: list[Message]) -> str:
        return "the secret is hidden"  # 0.5 by the fixture's verify

    store = MemoryRunStore()
    result = run(
        make_benchmark(count=1), config(metric="pass@k", k=1), ScriptedClient(respond), store
    )
    trial = store.trials[1][1]
    assert (trial.judge.score, trial.judge.details["partial_score"]) == (0.0, 0.5)
    assert result.summary["curves"]["best_score_at"] == [0.0]


# the answer key


@pytest.mark.parametrize(
    ("mode", "critic"), [("raw", None), ("compact", None), ("judge", None), ("socratic", CRITIC)]
)
def test_the_answer_key_never_reaches_the_actor(mode: str, critic: ModelSpec | None) -> None:
    # The critic echoes its whole prompt back as the hint, so anything it was given would show
    # up in the actor's next prompt.
    client = ScriptedClient(solver({}))
    run(make_benchmark(count=4), config(k=3, feedback_mode=mode, critic=critic), client)
    prompts = [messages for _, messages in client.calls]
    assert len(client.prompts_of("fake/actor")) == 12
    for index in range(1, 5):
        for messages in prompts:
            assert all(secret(index) not in message["content"] for message in messages)
    if critic is not None:
        assert len(client.prompts_of("fake/critic")) == 12


# resume


class SignallingStore(RunFolderStore):
    """A run folder that tells the test once `count` trials are saved."""

    def __init__(self, folder: Path, count: int) -> None:
        super().__init__(folder)
        self.count = count
        self.saved = 0
        self.enough = asyncio.Event()

    async def save_trial(self, task: Task, trial: TrialRecord) -> None:
        await super().save_trial(task, trial)
        self.saved += 1
        if self.saved >= self.count:
            self.enough.set()


def interrupted_run(
    benchmark: Benchmark, run_config: RunConfig, folder: Path, client: ScriptedClient, saved: int
) -> None:
    async def scenario() -> None:
        store = SignallingStore(folder, saved)
        runner = asyncio.create_task(run_benchmark(benchmark, run_config, store, client))
        await store.enough.wait()
        runner.cancel()
        with pytest.raises(asyncio.CancelledError):
            await runner

    asyncio.run(scenario())


@pytest.mark.parametrize("metric", ["pass@k", "seq@k"])
def test_a_rerun_after_an_interruption_never_repeats_a_finished_call(
    tmp_path: Path, metric: str
) -> None:
    benchmark = make_benchmark(count=6)
    run_config = config(metric=metric, k=3, tasks_in_flight=2)
    respond = solver({2: {2}, 5: {3}})
    first = ScriptedClient(respond)
    first.hold_after = 7
    interrupted_run(benchmark, run_config, tmp_path, first, saved=7)
    saved_first = len(list(tmp_path.glob("task-*/attempt-*.json")))
    summary = (tmp_path / "summary.json").read_text()
    assert '"status": "stopped"' in summary

    second = ScriptedClient(respond)
    store = RunFolderStore(tmp_path)
    result = run(benchmark, run_config, second, store)
    total = len(list(tmp_path.glob("task-*/attempt-*.json")))
    assert result.status == "complete"
    # Every call the second run made produced a new attempt file: nothing finished was redone.
    assert len(second.calls) == total - saved_first
    assert result.tasks_skipped + result.tasks_run == 6
    if metric == "seq@k":
        # History rebuilt from disk: a continued task's prompt shows its stored attempts.
        continued = [p for p in second.prompts_of("fake/actor") if "This is attempt 1 " not in p]
        for prompt in continued:
            assert "<PreviousAttempt 1>\nno idea\n</PreviousAttempt 1>" in prompt
    third = ScriptedClient(respond)
    assert run(benchmark, run_config, third, RunFolderStore(tmp_path)).tasks_skipped == 6
    assert third.calls == []


# fingerprint and continue


def test_fingerprint_covers_result_settings_only() -> None:
    benchmark = make_benchmark()
    base = result_settings(benchmark, config())
    same = result_settings(benchmark, config(tasks_in_flight=3, max_tasks=2, task_indices=(1,)))
    assert fingerprint(base) == fingerprint(same)
    for change in (
        {"actor": ModelSpec("fake/actor", temperature=0.5)},
        {"k": 4},
        {"feedback_mode": "binary"},
        {"options": {"size": 3}},
    ):
        assert fingerprint(result_settings(benchmark, config(**change))) != fingerprint(base)
    # A judge changes the runs of a benchmark that grades with one, and no other's.
    judged = config(judge=ModelSpec("fake/judge"))
    assert fingerprint(result_settings(benchmark, judged)) == fingerprint(base)
    graded = make_benchmark(verifier="llm")
    assert fingerprint(result_settings(graded, judged)) != fingerprint(
        result_settings(graded, config(judge=ModelSpec("other/judge")))
    )
    # pass@k gives no feedback, so its mode cannot change a result.
    assert fingerprint(
        result_settings(benchmark, config(metric="pass@k", feedback_mode="raw"))
    ) == fingerprint(result_settings(benchmark, config(metric="pass@k", feedback_mode="binary")))


def test_a_rerun_with_other_settings_is_refused_naming_them(tmp_path: Path) -> None:
    benchmark = make_benchmark(count=2)
    run(benchmark, config(), ScriptedClient(solver({})), RunFolderStore(tmp_path))
    changed = config(actor=ModelSpec("fake/actor", temperature=0.7), options={"size": 9})
    client = ScriptedClient(solver({}))
    with pytest.raises(RunConfigMismatch) as refused:
        run(benchmark, changed, client, RunFolderStore(tmp_path))
    assert refused.value.differences == [
        "actor.temperature: null -> 0.7",
        "options.size: (absent) -> 9",
    ]
    assert "actor.temperature" in str(refused.value)
    assert client.calls == []


def test_a_larger_k_needs_continue_and_then_extends_the_run(tmp_path: Path) -> None:
    benchmark = make_benchmark(count=3)
    respond = solver({1: {1}, 2: {4}})
    run(benchmark, config(k=2), ScriptedClient(respond), RunFolderStore(tmp_path))
    before = {path: path.read_bytes() for path in tmp_path.glob("task-*/attempt-*.json")}

    with pytest.raises(RunConfigMismatch, match="continue: true"):
        run(benchmark, config(k=4), ScriptedClient(respond), RunFolderStore(tmp_path))
    with pytest.raises(RunConfigMismatch, match="k=1"):
        run(benchmark, config(k=1), ScriptedClient(respond), RunFolderStore(tmp_path))

    more = ScriptedClient(respond)
    result = run(benchmark, config(k=4, allow_continue=True), more, RunFolderStore(tmp_path))
    # Task 1 was solved; tasks 2 and 3 continue at attempt 3, with attempts 1-2 from disk.
    assert [p.split("\n\n")[1].split(".")[0] for p in more.prompts_of("fake/actor")].count(
        "This is attempt 3 of 4"
    ) == 2
    # Task 2's 4th call (its attempt 4) solves it.
    assert result.summary["curves"]["seq_at"] == pytest.approx([1 / 3, 1 / 3, 1 / 3, 2 / 3])
    # Nothing stored earlier changed.
    assert all(path.read_bytes() == content for path, content in before.items())
    assert len(list(tmp_path.glob("task-*/attempt-*.json"))) == len(before) + 4
    config_json = (tmp_path / "config.json").read_text()
    assert '"k_history": [\n    2,\n    4\n  ]' in config_json


def test_pass_at_k_continue_draws_only_the_new_samples(tmp_path: Path) -> None:
    benchmark = make_benchmark(count=2)
    run(
        benchmark,
        config(metric="pass@k", k=2),
        ScriptedClient(solver({})),
        RunFolderStore(tmp_path),
    )
    more = ScriptedClient(solver({}))
    run(
        benchmark,
        config(metric="pass@k", k=5, allow_continue=True),
        more,
        RunFolderStore(tmp_path),
    )
    assert len(more.calls) == 6
    assert sorted(p.name for p in (tmp_path / "task-1").glob("attempt-*.json")) == [
        f"attempt-{i}.json" for i in range(1, 6)
    ]


# concurrency and streaming


def test_tasks_stream_with_a_bounded_number_in_flight() -> None:
    pulled = 0

    def many() -> Iterator[Task]:
        nonlocal pulled
        for task in make_tasks(10_000):
            pulled += 1
            yield task

    client = ScriptedClient(solver({}))
    store = MemoryRunStore()
    finished: list[int] = []
    lead: list[int] = []

    def on_event(event: Any) -> None:
        if event.kind == "task_done":
            finished.append(event.task.canonical_index)
            lead.append(pulled - len(finished))

    result = run(
        make_benchmark(many),
        config(metric="pass@k", k=1, tasks_in_flight=16),
        client,
        store,
        on_event=on_event,
    )
    assert result.summary["task_status"]["done"] == 10_000
    assert max(lead) <= 16


# retries, errors, tokens and cost


def test_price_overrides_give_the_cost_of_unpriced_models() -> None:
    client = ScriptedClient(solver({}))
    prices = {
        "fake/actor": Price(
            input_cost_per_token=0.01, output_cost_per_token=0.1, cache_read_input_token_cost=0.001
        )
    }
    result = run(make_benchmark(count=1), config(metric="pass@k", k=2, prices=prices), client)
    usage = result.summary["usage"]["actor"]["fake/actor"]
    # Per call: 5 prompt words (1 cached), 2 output words.
    assert (usage["input_tokens"], usage["cached_tokens"], usage["output_tokens"]) == (10, 2, 4)
    assert usage["cost_usd"] == pytest.approx(8 * 0.01 + 2 * 0.001 + 4 * 0.1)
    assert result.summary["cost_usd"] == pytest.approx(usage["cost_usd"])


def test_a_failing_task_is_recorded_and_the_others_finish() -> None:
    def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> Any:
        if task.canonical_index == 2:
            raise ValueError("row 2 is broken")
        return VerifierResult(success=True, score=1.0)

    store = MemoryRunStore()
    result = run(make_benchmark(count=3, verify=verify), config(), ScriptedClient(), store)
    assert result.status == "incomplete"
    assert result.tasks_errored == 1
    assert store.task_summaries[2]["status"] == "error"
    assert "row 2 is broken" in store.task_summaries[2]["error"]
    assert store.task_summaries[3]["status"] == "done"


def test_too_many_failing_tasks_abort_the_run() -> None:
    def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> Any:
        raise ValueError("broken")

    store = MemoryRunStore()
    with pytest.raises(RunAborted, match="max_task_errors=1"):
        run(
            make_benchmark(count=20, verify=verify),
            config(max_task_errors=1),
            ScriptedClient(),
            store,
        )
    assert store.run_summary is not None and store.run_summary["status"] == "aborted"


def test_a_cost_budget_stops_starting_new_tasks() -> None:
    client = ScriptedClient(solver({}))
    result = run(
        make_benchmark(count=50),
        config(metric="pass@k", k=1, cost_budget_usd=0.0025, tasks_in_flight=1),
        client,
    )
    assert result.status == "budget_exhausted"
    assert len(client.calls) == 3


# benchmark hooks


def test_benchmark_feedback_and_critic_calls_are_recorded_in_the_critic_section() -> None:
    async def feedback(
        task: Task,
        attempt: AttemptView,
        result: VerifierResult,
        mode: str,
        *,
        critic_model: str | None,
    ) -> str:
        assert critic_model == CRITIC.model
        record = await complete(critic_model, [{"role": "user", "content": "hint please"}])
        return f"{mode}: {record.output}"

    store = MemoryRunStore()
    client = ScriptedClient()  # echoes: the critic's reply is its own prompt
    run(
        make_benchmark(count=1, feedback=feedback, llm_critic_modes={"coach"}),
        config(k=2, feedback_mode="coach", critic=CRITIC),
        client,
        store,
    )
    critic = store.trials[1][1].critic
    assert critic.model == "fake/critic"
    assert critic.feedback == "coach: hint please"
    assert [call["prompt"] for call in critic.calls] == [
        [{"role": "user", "content": "hint please"}]
    ]


JUDGE = ModelSpec(model="fake/judge")


def test_attempts_name_the_judge_and_critic_models_as_seq_k_does() -> None:
    """seq_k names an LLM verifier's judge model on every attempt, whether or not it called it,
    and an LLM-critic mode's critic model on every attempt, asked for feedback or not (pass@k
    and successes too); a deterministic verifier and a template mode name none."""

    def verify(task: Task, attempt: AttemptView, *, judge_model: str | None) -> VerifierResult:
        # Settled without a call (a keyword, say): the judge model is still the run's.
        found = secret(task.canonical_index) in attempt.output
        return VerifierResult(success=found, score=1.0 if found else 0.0)

    llm_judged = make_benchmark(count=2, verifier="llm", verify=verify)
    for metric in ("seq@k", "pass@k"):
        store = MemoryRunStore()
        run(
            llm_judged,
            config(metric=metric, k=2, feedback_mode="socratic", judge=JUDGE, critic=CRITIC),
            ScriptedClient(solver({1: {1}})),
            store,
        )
        trials = [trial for task in store.trials.values() for trial in task.values()]
        assert {trial.judge.model for trial in trials} == {"fake/judge"}
        assert {trial.critic.model for trial in trials} == {"fake/critic"}
        assert any(trial.success for trial in trials)

    store = MemoryRunStore()
    run(
        make_benchmark(count=2),
        config(k=2, feedback_mode="raw", judge=JUDGE, critic=CRITIC),
        ScriptedClient(solver({1: {1}})),
        store,
    )
    trials = [trial for task in store.trials.values() for trial in task.values()]
    assert {(trial.judge.model, trial.critic.model) for trial in trials} == {(None, None)}


def test_run_attempt_sums_its_actor_calls() -> None:
    async def run_attempt(task: Task, messages: list[Message], *, actor: ModelSpec) -> str:
        first = await complete(actor.model, messages)
        second = await complete(actor.model, [*messages, {"role": "user", "content": "again"}])
        return f"{first.output} / {second.output}"

    store = MemoryRunStore()
    client = ScriptedClient(lambda spec, messages: "no idea")
    run(
        make_benchmark(count=1, run_attempt=run_attempt),
        config(metric="pass@k", k=1),
        client,
        store,
    )
    actor = store.trials[1][1].actor
    assert len(client.calls) == 2
    assert actor.output == "no idea / no idea"
    assert actor.input_tokens == 5 + 6 and actor.output_tokens == 4 and actor.cached_tokens == 2
    assert actor.cost_usd == pytest.approx(0.002)


def test_complete_uses_the_role_spec_and_refuses_outside_a_run() -> None:
    judge = ModelSpec("fake/judge", temperature=0.2, timeout_s=3)
    with use_models(ScriptedClient(), judge, None):
        assert resolve_spec("fake/judge") == judge
        assert resolve_spec("fake/judge", temperature=0.9) == judge
        assert resolve_spec("other/model", temperature=0.9) == ModelSpec("other/model", 0.9)
    with pytest.raises(RuntimeError, match="outside a run"):
        asyncio.run(complete("fake/judge", []))


def test_config_checks_name_the_problem() -> None:
    benchmark = make_benchmark()
    with pytest.raises(ValueError, match="critic"):
        check_config(benchmark, config(feedback_mode="socratic"))
    with pytest.raises(ValueError, match="unknown feedback mode 'telepathy'"):
        check_config(benchmark, config(feedback_mode="telepathy"))
    with pytest.raises(ValueError, match="judge_model"):
        check_config(make_benchmark(verifier="llm"), config())
    with pytest.raises(ValueError, match="k must be"):
        check_config(benchmark, config(k=0))


def test_benchmark_contract_is_checked_on_load() -> None:
    with pytest.raises(BenchmarkError, match="no benchmark named 'nope'"):
        Benchmark.load("nope")
    with pytest.raises(BenchmarkError, match="invalid benchmark name"):
        Benchmark.load("../etc")
    with pytest.raises(BenchmarkError, match="no feedback"):
        make_benchmark(feedback_modes={"mine"})
    with pytest.raises(ValueError, match="canonical_index"):
        Task(task_id="x", canonical_index=0, prompt="p")
    twice = make_benchmark([*make_tasks(2), make_tasks(1)[0]])
    with pytest.raises(BenchmarkError, match="repeats"):
        twice.load_tasks({})


def test_select_tasks_filters_lazily() -> None:
    chosen = select_tasks(iter(make_tasks(10)), task_indices=[3, 7, 99], max_tasks=None)
    assert [task.canonical_index for task in chosen] == [3, 7]
    first = select_tasks(iter(make_tasks(10)), task_indices=None, max_tasks=2)
    assert [task.canonical_index for task in first] == [1, 2]
