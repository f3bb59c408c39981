"""Tenant-owned tables are read and written through objects bound to one tenant.

A repository class that takes its tenant when made (`ChallengeRepository(session, tenant_id)`:
its `__init__` sets `self.tenant_id`) filters every statement by it, so a caller cannot forget
the filter. A class made for the platform admin (its `__init__` sets `self.platform_admin`
from the admin's auth subject) may read across tenants: only that subject can make one.

Access that crosses tenants by design (the worker side's claims, leases and runs, the
sweeps, recomputations) lives in `cross_tenant` modules, which the API process cannot reach:
an import-linter contract forbids its composition, routers and pages to import them,
directly or not (pyproject.toml). Queries are written in repository and `cross_tenant`
modules only (tests/unit/test_architecture.py), so the scan below, which reads every
repository module, sees every query there is: a function there that names a tenant-owned
table (one with a `tenant_id` column) outside a bound class fails it, but for the few reads
of the request path that must cross tenants (`REQUEST_PATH_CROSSINGS`, each with its reason).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import app.models  # noqa: F401  (every table, the kinds' included)
from app.kit.db import Base

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
    found = unbound_access()
    new = sorted(found - set(REQUEST_PATH_CROSSINGS))
    assert not new, (
        "these functions touch tenant-owned tables outside a class bound to one tenant (its "
        "__init__ sets self.tenant_id) or to the platform admin, and outside a cross_tenant "
        f"module: {new}"
    )
    gone = sorted(set(REQUEST_PATH_CROSSINGS) - found)
    assert not gone, f"these no longer cross tenants: drop them from the list: {gone}"


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
