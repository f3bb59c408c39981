"""The original challenge body's flat scoring fields, mapped onto `scoring`.

The systems Gauntlet replaces took `scoring_strategy`, `scoring_plugin_id`, `scoring_entrypoint`
and `scoring_config` at the top level of a challenge body. Gauntlet accepts them on create and
update (never together with `scoring`; the schema refuses that) and stores the `scoring` they
map to, so reads always show `scoring`. The entrypoint is never stored or run: it must be the one
the named plugin was registered with, so a tenant still cannot make a worker run code that the
platform admin did not register. scorers/README.md shows the mapping to users.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from sqlalchemy.orm import Session

from app.challenge.schemas import FLAT_SCORING_FIELDS, ChallengeCreate, ChallengeUpdate
from app.kit.errors import ValidationFailed
from app.scoring.repository import get_plugin
from app.scoring.sandbox.child import canonical_entrypoint
from app.scoring.strategies import PLUGIN_STRATEGY, scored_by_plugin

# Where each flat field lands in `scoring`; errors about those places name the flat field.
_SCORING_KEY_TO_FLAT = {
    "strategy": "scoring_strategy",
    "plugin_id": "scoring_plugin_id",
    "config": "scoring_config",
}
_NAMES_A_PLUGIN = ("scoring_plugin_id", "scoring_entrypoint")


def given_flat_scoring(body: ChallengeCreate | ChallengeUpdate) -> dict[str, Any]:
    """The flat fields the caller gave; a null counts as not given, as clients that send every
    optional field do."""
    given = {name: getattr(body, name) for name in FLAT_SCORING_FIELDS}
    return {name: value for name, value in given.items() if value is not None}


def scoring_from_flat(stored: Mapping[str, Any] | None, flat: Mapping[str, Any]) -> dict[str, Any]:
    """The `scoring` section the flat fields describe, over `stored` (none on create, the
    challenge's on update, where, as for any top-level field, only the given fields change).

    Naming a plugin without a strategy means the strategy scored by a plugin ('custom', the
    only one that uses one); leaving it drops the plugin; a config belongs to its plugin, so
    it is reset when the plugin changes and no new `scoring_config` comes with it."""
    before = dict(stored or {})
    scoring = dict(before)
    if "scoring_strategy" in flat:
        scoring["strategy"] = flat["scoring_strategy"]
    elif any(name in flat for name in _NAMES_A_PLUGIN):
        scoring["strategy"] = str(PLUGIN_STRATEGY.name)
    if "scoring_plugin_id" in flat:
        scoring["plugin_id"] = flat["scoring_plugin_id"]
    strategy = scoring.get("strategy")
    if scored_by_plugin(strategy):
        if not scoring.get("plugin_id"):
            raise ValidationFailed.at(
                ["scoring_plugin_id"], f"is required when the strategy is '{strategy}'"
            )
    else:
        for name in _NAMES_A_PLUGIN:
            if name in flat:
                raise ValidationFailed.at(
                    [name], f"is only used with scoring_strategy '{PLUGIN_STRATEGY.name}'"
                )
        scoring["plugin_id"] = None
    if "scoring_config" in flat:
        scoring["config"] = flat["scoring_config"]
    elif scoring.get("plugin_id") != before.get("plugin_id"):
        scoring["config"] = {}
    return scoring


def check_flat_entrypoint(session: Session, plugin_id: str | None, flat: Mapping[str, Any]) -> None:
    """A given `scoring_entrypoint` must be the registered plugin's own: the entrypoint only
    confirms which code the caller expects, it never chooses the code that runs."""
    entrypoint = flat.get("scoring_entrypoint")
    if entrypoint is None:
        return
    plugin = get_plugin(session, plugin_id) if plugin_id else None
    if plugin is None:
        raise ValidationFailed.at(["scoring_plugin_id"], f"no scorer '{plugin_id}' is registered")
    # The seed's bodies name `services.scorers.weighted:WeightedScorer`, the same code as
    # `scorers.weighted:WeightedScorer`: the names are compared as what they name.
    if canonical_entrypoint(plugin.entrypoint) != canonical_entrypoint(entrypoint):
        raise ValidationFailed.at(
            ["scoring_entrypoint"],
            f"'{entrypoint}' is not the entrypoint of scorer '{plugin_id}' ('{plugin.entrypoint}')"
            "; a challenge runs only registered scorer code, so the platform admin must "
            "register this entrypoint as a scorer first",
        )


@contextmanager
def errors_named_as_given(flat: Mapping[str, Any]) -> Iterator[None]:
    """When the caller used the flat form, a validation error about `scoring.plugin_id` (or
    `.strategy`, `.config...`) names the flat field the caller sent instead."""
    try:
        yield
    except ValidationFailed as exc:
        renamed = _renamed(exc) if flat else None
        if renamed is None:
            raise
        raise renamed from exc


def _renamed(exc: ValidationFailed) -> ValidationFailed | None:
    """The same problems, those about `scoring.<key>` named by the flat field; None when none
    is about one."""
    renamed = False
    details = []
    for detail in exc.problems:
        location = list(detail.get("loc", []))
        if location[:1] == ["body"]:
            location = location[1:]
        if len(location) >= 2 and location[0] == "scoring" and location[1] in _SCORING_KEY_TO_FLAT:
            flat_name = _SCORING_KEY_TO_FLAT[str(location[1])]
            path = ["body", flat_name, *location[2:]]
            field = ".".join(str(part) for part in path[1:])
            detail = {**detail, "loc": path, "field": field}
            renamed = True
        details.append(detail)
    return ValidationFailed.of(details) if renamed else None
