"""The registry of challenge kinds: which kinds this deployment has, by name.

A kind is an instance of its class (`KIND` in its module), which implements the kind
interfaces of every layer (see `app.challenge.challenge_kind`). The built-in kinds are listed
below; a kind that lives outside the service is found the way scorer plugins are, through an
entry point its package declares in the group `gauntlet.challenge_kinds`
(`word_count = "package.module:KIND"`, named as the kind is), so installing the package into
the service's environment adds it for the API and every worker alike. Kinds are imported on
first use, not by this module's import, so no layer below the kinds imports them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Sequence
from functools import cache
from importlib import import_module
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar

from app.challenge.challenge_kind import ChallengeKind
from app.kit.errors import ValidationFailed

# The built-in kinds: adding one is a package under app/kinds/ and a line here.
BUILTIN_KINDS = (
    "app.kinds.prompt:KIND",
    "app.kinds.benchmark:KIND",
    "app.kinds.red_blue:KIND",
)
# The entry point group of kinds installed from other packages.
ENTRY_POINT_GROUP = "gauntlet.challenge_kinds"

K = TypeVar("K")
# Stored in challenges.kind, a VARCHAR(16).
_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")


class KindNotFound(LookupError):
    pass


def installed_entry_points() -> tuple[tuple[str, str], ...]:
    """The kinds installed packages declare: (name, "module:attribute"), by name."""
    return tuple(
        sorted((point.name, point.value) for point in entry_points(group=ENTRY_POINT_GROUP))
    )


def _load(installed: tuple[tuple[str, str], ...]) -> dict[str, ChallengeKind]:
    """The built-in kinds, then the `installed` ones (name, reference); every mistake is
    refused at once, naming where it is."""
    kinds: dict[str, ChallengeKind] = {}
    for name, reference in (*((None, path) for path in BUILTIN_KINDS), *installed):
        kind = EntryPoint(name or "", reference, ENTRY_POINT_GROUP).load()
        if not isinstance(kind, ChallengeKind):
            raise TypeError(f"challenge kind {reference!r} is not a ChallengeKind")
        if not _NAME.fullmatch(kind.name):
            raise ValueError(f"challenge kind name {kind.name!r} (in {reference}): {_NAME.pattern}")
        if name is not None and name != kind.name:
            raise ValueError(
                f"the entry point {name!r} of {ENTRY_POINT_GROUP} names a kind called "
                f"{kind.name!r} ({reference}): an entry point is named as its kind"
            )
        if kind.name in kinds:
            raise ValueError(
                f"two challenge kinds are named {kind.name!r} (the second: {reference})"
            )
        kinds[kind.name] = kind
        for models in kind.model_modules:
            import_module(models)
    return kinds


@cache
def registered() -> dict[str, ChallengeKind]:
    """Every kind of this deployment, by name (the built-in ones first). Read once per
    process: a kind installed later is seen after a restart."""
    return _load(installed_entry_points())


def kind_names() -> list[str]:
    return list(registered())


def find_kind(name: str) -> ChallengeKind:
    try:
        return registered()[name]
    except KeyError:
        known = ", ".join(sorted(registered()))
        raise KindNotFound(f"unknown challenge kind '{name}'; known: {known}") from None


def kinds_taking(field: str, fields_of: Callable[[ChallengeKind], Container[str]]) -> list[str]:
    """The kinds whose `fields_of` (their sections, limits, submission fields) has `field`."""
    return [kind.name for kind in registered().values() if field in fields_of(kind)]


def not_for(path: Sequence[str], owners: Sequence[str], kind: str) -> ValidationFailed:
    """A 422 for a field only other kinds take, naming the kinds it is for."""
    return ValidationFailed.at(
        path, f"is for {' and '.join(owners)} challenges, not {kind} challenges"
    )


def worker_task_modules() -> list[str]:
    """The Celery modules of the kinds' own tasks, for the worker to include."""
    return [module for kind in registered().values() for module in kind.task_modules]


def periodic_tasks() -> dict[str, tuple[str, float]]:
    """The kinds' periodic tasks: `kind-name: (task, every seconds)`, for Celery's beat."""
    return {
        f"{kind.name}-{name}": (task, every)
        for kind in registered().values()
        for name, (task, every) in kind.periodic_tasks.items()
    }


def kind_as(name: str, interface: type[K]) -> K:
    """The kind, seen through one layer's interface; a kind that lacks it is a programming
    error, found at the first use."""
    kind = find_kind(name)
    if not isinstance(kind, interface):
        raise TypeError(f"challenge kind {name!r} does not implement {interface.__name__}")
    return kind
