"""Tenant-owned tables are read and written through objects bound to one tenant.

A repository class that takes its tenant when made (`ChallengeRepository(session, tenant_id)`:
its `__init__` sets `self.tenant_id`) filters every statement by it, so a caller cannot forget
the filter. A class made for the platform admin (its `__init__` sets `self.platform_admin`
from the admin's auth subject) may read across tenants: only that subject can make one.

Access that crosses tenants by design (the worker side's claims, leases and runs, the
sweeps, recomputations) lives in `cross_tenant` modules, which the request path cannot reach:
an import-linter contract forbids routers and web code to import them, directly or not
(pyproject.toml). Queries are written in repository and `cross_tenant` modules only; the scan
below reads every other function of those modules. Functions outside both that touch a
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
        "app.attempt.repository:_keep_scores_at_freeze",
        "app.attempt.repository:_trials_insert",
        "app.attempt.repository:claim",
        "app.attempt.repository:claimable",
        "app.attempt.repository:completed_after",
        "app.attempt.repository:completed_since",
        "app.attempt.repository:count_completed",
        "app.attempt.repository:frozen_view",
        "app.attempt.repository:get",
        "app.attempt.repository:locked_if_held",
        "app.attempt.repository:mark_enqueued",
        "app.attempt.repository:set_scores",
        "app.attempt.repository:stuck_queued",
        "app.attempt.repository:stuck_running",
        "app.attempt.repository:task_trials",
        "app.attempt.repository:trial_record",
        "app.attempt.repository:trials_of",
        "app.attempt.repository:unfinished_by_status",
        "app.attempt.repository:upsert_attempt_task",
        "app.auth.repository:delete_by_token_hash",
        "app.auth.repository:live_session_tenant",
        "app.challenge.repository:get_public_challenge",
        "app.challenge.repository:public_challenge_counts",
        "app.challenge.repository:scoring_of_every_challenge",
        "app.challenge.repository:tenants_with_public_challenges",
        "app.competition.repository:_insert_new",
        "app.competition.repository:challenge_of_any_tenant",
        "app.competition.repository:due_notices",
        "app.hosting.repository:attempt_counts_since",
        "app.hosting.repository:challenge_counts",
        "app.hosting.repository:organizers",
        "app.hosting.repository:participant_counts",
        "app.hosting.repository:spend_on",
        "app.kinds.benchmark.repository:claim_sealed_run",
        "app.kinds.benchmark.repository:completed_entries",
        "app.kinds.benchmark.repository:entry_count",
        "app.kinds.benchmark.repository:held_sealed_run",
        "app.kinds.benchmark.repository:mark",
        "app.kinds.benchmark.repository:mark_sealed_runs_sent",
        "app.kinds.benchmark.repository:marked",
        "app.kinds.benchmark.repository:marked_at_challenge",
        "app.kinds.benchmark.repository:own_measures",
        "app.kinds.benchmark.repository:queue_sealed_run",
        "app.kinds.benchmark.repository:sealed_run_of",
        "app.kinds.benchmark.repository:sealed_run_source",
        "app.kinds.benchmark.repository:set_own_measures",
        "app.kinds.benchmark.repository:stuck_sealed_runs",
        "app.kinds.benchmark.repository:unmark",
        "app.leaderboard.repository:_offer_statement",
        "app.leaderboard.repository:best_entries",
        "app.leaderboard.repository:claim_snapshot",
        "app.leaderboard.repository:clear",
        "app.leaderboard.repository:copy_to_frozen",
        "app.leaderboard.repository:entries_after",
        "app.leaderboard.repository:entry_table",
        "app.leaderboard.repository:freeze_schedule",
        "app.leaderboard.repository:keep_figures",
        "app.leaderboard.repository:page",
        "app.leaderboard.repository:rank_of",
        "app.leaderboard.repository:snapshot",
        "app.mail.repository:add",
        "app.mail.repository:claim",
        "app.mail.repository:due_for_retry",
        "app.mail.repository:requeue",
        "app.mail.repository:stuck",
        "app.rescore.repository:add",
        "app.rescore.repository:add_processed",
        "app.rescore.repository:get",
        "app.rescore.repository:get_for_tenant",
        "app.rescore.repository:newer_pending_exists",
        "app.rescore.repository:page_of_challenge",
        "app.tenant.repository:add_spend",
        "app.tenant.repository:count_entry",
        "app.tenant.repository:entries_on",
        "app.tenant.repository:spend_on",
        "app.tenant.repository:spend_since",
    }
)


# The request path's reads that cannot be bound to a tenant because they come before one is
# known or span tenants on purpose, each with its reason: the only unbound access the API
# process keeps. (The platform admin's reads are bound to the platform admin instead.)
REQUEST_PATH_CROSSINGS: dict[str, str] = {}


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


QUERY_BUILDERS = {"select", "insert", "update", "delete", "text", "union", "union_all", "exists"}
SESSION_READS = {"execute", "scalar", "scalars", "get", "query", "merge"}
# Modules that build statements and are no data access: the engine's (app.db), and the mapped
# tables' (`models` modules: server defaults, index expressions).
STATEMENT_MODULES_BESIDES_REPOSITORIES = {"app.db"}


def statements_outside_repositories(package: Path = APP) -> set[str]:
    """Modules other than repositories and `cross_tenant` modules that import a statement
    builder from SQLAlchemy or read through a session (`session.execute(...)` and the like)."""
    found = set()
    for path in sorted(package.rglob("*.py")):
        if _is_repository(path) or _crosses_tenants(path) or path.stem == "models":
            continue
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                if any(alias.name in QUERY_BUILDERS for alias in node.names):
                    found.add(module)
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SESSION_READS
                and isinstance(node.func.value, ast.Name | ast.Attribute)
                and (
                    getattr(node.func.value, "id", None) == "session"
                    or getattr(node.func.value, "attr", None) == "session"
                )
            ):
                found.add(module)
    return found - STATEMENT_MODULES_BESIDES_REPOSITORIES


def test_queries_are_written_in_repository_modules_only() -> None:
    # So the scan above, which reads repository modules, sees every query there is.
    assert statements_outside_repositories() == set()


def test_the_query_scan_finds_a_statement_in_a_service(tmp_path: Path) -> None:
    package = tmp_path / "app" / "domain"
    package.mkdir(parents=True)
    (package / "service.py").write_text(
        "from sqlalchemy import select\n"
        "def rows(work):\n"
        "    return work.session.scalars(select(Challenge))\n"
    )
    (package / "other.py").write_text("def rows(session):\n    return session.get(Challenge, 1)\n")
    (package / "cross_tenant.py").write_text("from sqlalchemy import select\n")
    assert statements_outside_repositories(tmp_path / "app") == {
        "app.domain.service",
        "app.domain.other",
    }


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
