"""Whether the models a challenge names can be called by this server's workers, checked when
the challenge is saved: a model id the policy refuses, an `openai-compatible/` model with no
base URL, or a provider whose API key the server does not have is a 422 naming the field; and
a kind's base URL, checked against the outbound policy when its `prepare` runs (a 422 naming
the field when refused or its name does not exist; a 503 with Retry-After when the resolver
cannot answer now)."""

from __future__ import annotations

from collections.abc import Iterable

from app.challenge.challenge_kind import NamedModel
from app.evaluation.engine.model_ids import base_url_problem, model_id_problem
from app.kit.config import get_settings
from app.kit.errors import Problems, ServiceUnavailable, ValidationFailed
from app.outbound.addresses import ResolutionFailed
from app.outbound.policy import OutboundRefused
from app.outbound.providers import BUILTIN_PROVIDERS


def checked_api_base(api_base: str | None, path: list[str | int]) -> str | None:
    """The base URL is allowed and resolves to permitted addresses now; it is stored in its
    normalised form, which the worker checks again before every call."""
    if api_base is None:
        return None
    try:
        return get_settings().outbound_policy().checked_base(api_base)
    except OutboundRefused as error:
        raise ValidationFailed.at(path, str(error)) from error
    except ResolutionFailed as error:
        # The name may well exist: the resolver did not answer (EAI_AGAIN). Neither refused
        # (a 422 would tell the organizer the URL is wrong) nor saved unchecked (its
        # addresses were never seen): the same request can be sent again shortly.
        field = ".".join(str(part) for part in path)
        raise ServiceUnavailable(
            f"{field}: {error}; the resolver did not answer, send the request again shortly",
            details=[{"loc": ["body", *path], "msg": str(error), "type": "resolver_unavailable"}],
            headers={"Retry-After": str(RESOLVER_RETRY_AFTER_SECONDS)},
        ) from error


# What a save answered 503 because the resolver could not answer asks the client to wait: the
# system resolver's own timeout (5 s a try) twice.
RESOLVER_RETRY_AFTER_SECONDS = 10

# The characters that make a model pattern a glob rather than one id.
_GLOB = frozenset("*?[]!")


def refuse_unreachable(models: Iterable[NamedModel]) -> None:
    """ValidationFailed, naming each field, for every model no worker could call."""
    problems = Problems()
    for named in models:
        problem = _pattern_problem(named.model) if named.pattern else _model_problem(named)
        if problem is not None:
            with problems.collect():
                raise ValidationFailed.at(list(named.path), problem)
    problems.raise_any()


def _model_problem(named: NamedModel) -> str | None:
    policy = get_settings().outbound_policy()
    problem = model_id_problem(named.model, policy.providers) or base_url_problem(
        named.model, named.api_base, named.base_field
    )
    if problem is not None or named.api_base is not None:
        return problem  # a call at a base URL carries that base's key, not a provider's
    return _key_problem(named.model)


def _pattern_problem(pattern: str) -> str | None:
    """A pattern's provider, when it names one outright (`openai/gpt-4o-*`), must be callable."""
    prefix, slash, _ = pattern.partition("/")
    named = prefix if slash else pattern
    if _GLOB & set(named):
        return None
    return _key_problem(f"{prefix}/probe" if slash else pattern)


def _key_problem(model: str) -> str | None:
    if model.partition("/")[0] in BUILTIN_PROVIDERS:
        return None
    try:
        get_settings().outbound_policy().check_key(model)
    except OutboundRefused as error:
        return str(error)
    return None
