"""A one-off match, run as an unscored attempt: a participant practising an attack against
their own defense, or a tenant admin's test run of a sample defense and attack. It is the
match's call and judging (`rules.judging`) on the attempts' runner, so it is in no pairing,
no match list, no rating and no standings.

Its one trial is the target call, judged by every category as a match is (`match_result.judged`):
the trial succeeds when the attack breaches one; the verdicts, with the points a real match
would give, are in the attempt's `kind_metrics`.
"""

from __future__ import annotations

from app.kinds.api import AttemptMetrics, RunContext, stored_fields
from app.kinds.api.evaluation import JudgeSection, TrialRecord
from app.kinds.red_blue.config import RedBlueSections
from app.kinds.red_blue.match_result import judged
from app.kinds.red_blue.rules.judging import judge_match, verify_categories
from app.kinds.red_blue.schemas import OneOffMatch, OneOffVerdicts


async def play(context: RunContext, sections: RedBlueSections) -> AttemptMetrics:
    """The target call (the defense as system prompt, the attack as user message) and every
    category's verdict; the trial is stored with them."""
    job = context.job
    # `unscored` stored both: the defense given, or the participant's own.
    fields = stored_fields(job.kind_fields, OneOffMatch)
    settings = context.settings
    spec = sections.target.model_spec(fields.system_prompt or "", settings.model_timeout_seconds)
    record = await context.llm.complete(spec, [{"role": "user", "content": fields.prompt}])
    results = await verify_categories(
        sections.judge_suite, record.output, goal=job.goal, llm=context.llm
    )
    match = judged(judge_match(sections.judge_suite, sections.points, results), results, record)
    summary = OneOffVerdicts(
        breached=match.breached,
        red_points=match.red_points,
        blue_points=match.blue_points,
        verdicts=match.stored_verdicts(),
    )
    calls = [call.to_dict() for result in results.values() for call in result.calls]
    breached = ", ".join(match.breached)
    trial = TrialRecord(
        attempt_index=1,
        actor=record,
        judge=JudgeSection(
            model=None,
            success=match.attack_won,
            score=1.0 if match.attack_won else 0.0,
            raw_eval_output=f"breached: {breached}" if breached else "held",
            details=summary.model_dump(mode="json"),
            calls=calls,
        ),
    )
    await context.save_trial(trial)
    # A free call (an offline model's) costs 0, which is a known cost: not left out as unknown.
    priced = [record.cost_usd, *(call.get("cost_usd") for call in calls)]
    costs = [c for c in priced if isinstance(c, int | float) and not isinstance(c, bool)]
    return AttemptMetrics(
        succeeded=match.attack_won,
        tokens_total=match.tokens_total,
        elapsed_ms=match.elapsed_ms,
        cost_usd=sum(costs) if costs else None,
        trials=1,
    )
