"""The registry of challenge kinds: which kinds this deployment has, by name.

A kind is a module exposing `KIND` (an instance of its class, which implements the kind
interfaces of every layer; see `app.challenge.challenge_kind`). The built-in kinds are listed below;
the platform admin adds others with `GAUNTLET_CHALLENGE_KIND_MODULES` (a comma-separated list
of module paths, read by every process: the API and the workers). Modules are imported on
first use, not by this module's import, so no layer below the kinds imports them.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Container, Sequence
from functools import lru_cache
from typing import Any, TypeVar

from app.challenge.challenge_kind import ChallengeKind
from app.config import get_settings
from app.errors import ValidationFailed

# The built-in kinds: adding one is a package under app/kinds/ and a line here.
BUILTIN_KIND_MODULES = (
    "app.kinds.prompt",
    "app.kinds.benchmark",
    "app.kinds.red_blue",
)

K = TypeVar("K")
# Stored in challenges.kind, a VARCHAR(16).
_NAME = re.compile(r"[a-z][a-z0-9_]{0,15}")


class KindNotFound(LookupError):
    pass


@lru_cache(maxsize=4)
def _load(extra_modules: tuple[str, ...]) -> dict[str, ChallengeKind]:
    kinds: dict[str, ChallengeKind] = {}
    for path in (*BUILTIN_KIND_MODULES, *extra_modules):
        module = importlib.import_module(path)
        kind = getattr(module, "KIND", None)
        if not isinstance(kind, ChallengeKind):
            raise TypeError(f"challenge kind module {path!r} has no KIND (a ChallengeKind)")
        if not _NAME.fullmatch(kind.name):
            raise ValueError(f"challenge kind name {kind.name!r} (in {path}): {_NAME.pattern}")
        if kind.name in kinds:
            raise ValueError(f"two challenge kinds are named {kind.name!r} (the second: {path})")
        kinds[kind.name] = kind
        for models in kind.model_modules:
            importlib.import_module(models)
    return kinds


def registered() -> dict[str, ChallengeKind]:
    """Every kind of this deployment, by name (the built-in ones first)."""
    return _load(get_settings().challenge_kind_modules)


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


def periodic_tasks(queue: str) -> dict[str, dict[str, Any]]:
    """The kinds' periodic tasks as entries of Celery's beat schedule."""
    return {
        f"{kind.name}-{name}": {
            "task": task,
            "schedule": every,
            "options": {"queue": queue, "expires": every},
        }
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
