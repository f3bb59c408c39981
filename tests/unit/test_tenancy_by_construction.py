"""Tenant-owned tables are read and written through objects bound to one tenant.

A repository class that takes its tenant when made (`ChallengeRepository(session, tenant_id)`:
its `__init__` sets `self.tenant_id`) filters every statement by it, so a caller cannot forget
the filter. A class made for the platform admin (its `__init__` sets `self.platform_admin`
from the admin's auth subject) may read across tenants: only that subject can make one.

Access that crosses tenants by design (the worker side's claims, leases and runs, the
sweeps, recomputations) lives in `cross_tenant` modules, which the request path cannot reach:
an import-linter contract forbids routers and web code to import them, directly or not
(pyproject.toml). Queries are written in repository and `cross_tenant` modules only
(tests/unit/test_architecture.py), so the scan below, which reads every repository module,
sees every query there is. Functions outside both that touch a
tenant-owned table (a table with a `tenant_id` column) are listed below by name, and the list
only shrinks: a new one fails the scan, and a listed function that no longer touches one
unbound (or no longer exists) fails it too, so that its name leaves the list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import app.models  # noqa: F401  (every table, the kinds' included)
from app.db import Base

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"


def tenant_owned_models() -> set[str]:
    """The class names of the mapped tables that have a `tenant_id` column."""
    return {
        mapper.class_.__name__
        for mapper in Base.registry.mappers
        if "tenant_id" in mapper.local_table.columns
    }


def _is_repository(path: Path) -> bool:
    return path.name == "repository.py" or path.parent.name == "repository"


def _crosses_tenants(path: Path) -> bool:
    return path.stem == "cross_tenant" or path.parent.name == "cross_tenant"


def _repository_modules(package: Path) -> Iterator[Path]:
    for path in sorted(package.rglob("*.py")):
        if _is_repository(path) and not _crosses_tenants(path):
            yield path


BINDINGS = ("tenant_id", "platform_admin")


def _binds_a_tenant(cls: ast.ClassDef) -> bool:
    """Whether the class's `__init__` sets `self.tenant_id` (or `self.platform_admin`)."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for target in ast.walk(node):
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.ctx, ast.Store)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                    and target.attr in BINDINGS
                ):
                    return True
    return False


def _touches(function: ast.AST, models: set[str]) -> bool:
    return any(
        isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in models
        for node in ast.walk(function)
    )


def unbound_access(package: Path = APP) -> set[str]:
    """`module:function` (or `module:Class.method`) of every function in a repository module
    that names a tenant-owned table outside a tenant-bound class."""
    models = tenant_owned_models()
    found = set()
    for path in _repository_modules(package):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and _touches(node, models):
                found.add(f"{module}:{node.name}")
            elif isinstance(node, ast.ClassDef) and not _binds_a_tenant(node):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef) and _touches(member, models):
                        found.add(f"{module}:{node.name}.{member.name}")
    return found


# Functions of repository modules that touch tenant-owned tables with no tenant-bound object:
# those not yet moved into a tenant-bound repository (the request path's) or into a
# `cross_tenant` module (the worker side's and the sweeps').
NOT_YET_BOUND = frozenset(
    {
        "app.kinds.red_blue.repository.boards:baseline_players",
        "app.kinds.red_blue.repository.boards:board_after_write",
        "app.kinds.red_blue.repository.boards:claim_board",
        "app.kinds.red_blue.repository.boards:copy_to_frozen",
        "app.kinds.red_blue.repository.boards:handles_of",
        "app.kinds.red_blue.repository.boards:land_matches",
        "app.kinds.red_blue.repository.boards:mark_board_dirty_again",
        "app.kinds.red_blue.repository.boards:pace_board",
        "app.kinds.red_blue.repository.boards:release_interval_refresh",
        "app.kinds.red_blue.repository.boards:write_board",
        "app.kinds.red_blue.repository.entries:_newest_active_defense",
        "app.kinds.red_blue.repository.entries:active_defenses",
        "app.kinds.red_blue.repository.entries:attacks_of",
        "app.kinds.red_blue.repository.entries:claim_defense",
        "app.kinds.red_blue.repository.entries:defense_if_held",
        "app.kinds.red_blue.repository.entries:get_challenge",
        "app.kinds.red_blue.repository.entries:lock_attack",
        "app.kinds.red_blue.repository.entries:lock_defense",
        "app.kinds.red_blue.repository.entries:newest_active_defense",
        "app.kinds.red_blue.repository.entries:newest_active_defense_text",
        "app.kinds.red_blue.repository.final_round:board_rated_all",
        "app.kinds.red_blue.repository.final_round:claim_final_round",
        "app.kinds.red_blue.repository.final_round:final_round_holds_freeze",
        "app.kinds.red_blue.repository.final_round:final_round_match_counts",
        "app.kinds.red_blue.repository.final_round:final_round_of",
        "app.kinds.red_blue.repository.final_round:final_rounds_due",
        "app.kinds.red_blue.repository.final_round:mark_final_round_played",
        "app.kinds.red_blue.repository.final_round:pending_defense_count",
        "app.kinds.red_blue.repository.final_round:set_final_round_matches",
        "app.kinds.red_blue.repository.final_round:unplayed_final_rounds",
        "app.kinds.red_blue.repository.matches:challenge_version",
        "app.kinds.red_blue.repository.matches:claim_matches",
        "app.kinds.red_blue.repository.matches:finish_match",
        "app.kinds.red_blue.repository.matches:pairs_of",
        "app.kinds.red_blue.repository.ratings:_delete_ratings",
        "app.kinds.red_blue.repository.ratings:ratings_of",
        "app.kinds.red_blue.repository.rows:_owned_by",
        "app.kinds.red_blue.repository.rows:match_status_for",
        "app.kinds.red_blue.repository.rows:shown_to",
        "app.kinds.red_blue.repository.sweep:mark_boards_resent",
        "app.kinds.red_blue.repository.sweep:stuck_attacks",
        "app.kinds.red_blue.repository.sweep:stuck_boards",
        "app.kinds.red_blue.repository.sweep:stuck_defenses",
        "app.kinds.red_blue.repository.sweep:stuck_matches",
    }
)


# The request path's reads that cannot be bound to a tenant because they come before one is
# known or span tenants on purpose, each with its reason: the only unbound access the API
# process keeps. (The platform admin's reads are bound to the platform admin instead.)
REQUEST_PATH_CROSSINGS: dict[str, str] = {
    "app.auth.repository:live_session_tenant": (
        "a browser session's token names its tenant: it is looked up before one is known"
    ),
    "app.auth.repository:delete_by_token_hash": (
        "the session cookie is the platform's: signing out or in ends the browser's session "
        "by its token, whichever tenant it is in"
    ),
    "app.challenge.repository:tenants_with_public_challenges": (
        "the home page's public directory lists the tenants with public challenges"
    ),
    "app.attempt.repository:unfinished_by_status": (
        "the /metrics gauge of attempts queued and running counts every tenant's, numbers only"
    ),
}


def test_tenant_owned_tables_are_touched_through_tenant_bound_objects() -> None:
    found = unbound_access() - set(REQUEST_PATH_CROSSINGS)
    new = sorted(found - NOT_YET_BOUND)
    assert not new, (
        "these functions touch tenant-owned tables outside a class bound to one tenant "
        f"(its __init__ sets self.tenant_id): {new}"
    )
    gone = sorted((NOT_YET_BOUND | set(REQUEST_PATH_CROSSINGS)) - unbound_access())
    assert not gone, (
        f"these no longer touch tenant-owned tables unbound: drop them from the list: {gone}"
    )


def test_the_scan_tells_bound_from_unbound(tmp_path: Path) -> None:
    package = tmp_path / "app" / "domain"
    package.mkdir(parents=True)
    (package / "repository.py").write_text(
        "from sqlalchemy import select\n"
        "class Bound:\n"
        "    def __init__(self, session, tenant_id):\n"
        "        self.session, self.tenant_id = session, tenant_id\n"
        "    def rows(self):\n"
        "        return self.session.scalars(select(Challenge))\n"
        "class Loose:\n"
        "    def __init__(self, session):\n"
        "        self.session = session\n"
        "    def rows(self):\n"
        "        return self.session.scalars(select(Challenge.id))\n"
        "def by_id(session, challenge_id):\n"
        "    return session.get(Challenge, challenge_id)\n"
        "def plugins(session):\n"
        "    return session.scalars(select(ScorerPlugin))\n"
    )
    assert unbound_access(tmp_path / "app") == {
        "app.domain.repository:Loose.rows",
        "app.domain.repository:by_id",
    }


def test_the_tables_known_tenant_owned() -> None:
    owned = tenant_owned_models()
    assert {"Challenge", "Attempt", "Participant", "ApiKey"} <= owned
    assert "ScorerPlugin" not in owned and "Tenant" not in owned


def test_cross_tenant_modules_are_out_of_the_request_path_s_reach() -> None:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [
        c for c in contracts["contracts"] if "app.*.cross_tenant" in c.get("forbidden_modules", [])
    ]
    assert contract["type"] == "forbidden"
    assert {"app.web", "app.*.router"} <= set(contract["source_modules"])
    # Indirect imports count: a service the web imports may not import one either.
    assert not contract.get("allow_indirect_imports", False)
