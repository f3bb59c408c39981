"""The structure docs/architecture.md describes, checked: the import rules (import-linter's
contracts in pyproject.toml) and SQL only in repository modules."""

from __future__ import annotations

import ast
import inspect
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from importlinter import configuration
from importlinter.application.use_cases import lint_imports

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"

# What builds SQL: statements, expressions and dialect constructs.
SQL_NAMES = {
    "select",
    "insert",
    "update",
    "delete",
    "text",
    "func",
    "and_",
    "or_",
    "not_",
    "tuple_",
    "bindparam",
    "exists",
    "literal",
    "literal_column",
    "union",
    "union_all",
    "case",
    "cast",
    "column",
    "table",
    "join",
    "outerjoin",
    "desc",
    "asc",
    "distinct",
}
# What runs SQL through a session (flush, commit and rollback are the unit of work's).
SESSION_CALLS = {
    "execute",
    "scalar",
    "scalars",
    "get",
    "query",
    "add",
    "add_all",
    "delete",
    "merge",
    "begin_nested",
    "refresh",
}
# Modules that hold SQL by their nature: repositories, the table definitions (their indexes
# are SQL expressions), and the engine's own set-up; a repository too large for one module is
# a `repository` package, split by concern. `cross_tenant` modules (and packages) hold the
# worker side's queries across tenants, out of the API's reach
# (tests/unit/test_tenancy_by_construction.py).
ALLOWED = {"repository.py", "models.py", "cross_tenant.py"}
ALLOWED_PACKAGES = {"repository", "cross_tenant"}
ALLOWED_PATHS = {APP / "kit" / "db.py"}


def _names_session(node: ast.expr) -> bool:
    """`session`, `self.session`, `work.session`: an expression ending in a session."""
    if isinstance(node, ast.Name):
        return node.id == "session"
    if isinstance(node, ast.Attribute):
        return node.attr == "session"
    return False


def sql_outside_repositories(package: Path = APP) -> list[str]:
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.name in ALLOWED or path in ALLOWED_PATHS or path.parent.name in ALLOWED_PACKAGES:
            continue
        where = path.relative_to(package.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sqlalchemy"):
                module = node.module or ""
                if module.startswith(("sqlalchemy.dialects", "sqlalchemy.sql")):
                    found.append(f"{where}:{node.lineno} imports {module}")
                for alias in node.names:
                    if alias.name in SQL_NAMES:
                        found.append(f"{where}:{node.lineno} imports sqlalchemy's {alias.name}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SESSION_CALLS
                and _names_session(node.func.value)
            ):
                found.append(f"{where}:{node.lineno} calls session.{node.func.attr}")
    return found


def test_sql_lives_only_in_repository_modules() -> None:
    assert sql_outside_repositories() == []


def test_the_scan_finds_sql_where_it_does_not_belong(tmp_path: Path) -> None:
    # The check itself: a service that queries is caught, one that calls a repository is not,
    # and a repository may query.
    package = tmp_path / "app" / "domain"
    package.mkdir(parents=True)
    (package / "service.py").write_text(
        "from sqlalchemy import select\n"
        "def bad(work):\n"
        "    return work.session.scalar(select(1))\n"
        "def fine(session, repository):\n"
        "    return repository.get(session, 1), {}.get('x')\n"
    )
    (package / "repository.py").write_text(
        "from sqlalchemy import select\ndef rows(session):\n    return session.scalars(select(1))\n"
    )
    assert sql_outside_repositories(tmp_path / "app") == [
        "app/domain/service.py:1 imports sqlalchemy's select",
        "app/domain/service.py:3 calls session.scalar",
    ]


def test_the_service_has_repository_modules_to_scan() -> None:
    assert len(list(APP.rglob("repository.py"))) >= 8


def test_the_import_contracts_hold(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No import cycle among the sibling packages of app/, workers/, scorers/ and benchmarks/;
    the command, the worker side and the domains layered; infrastructure importing no domain;
    nothing under app/ but the command importing the worker side; routers never importing
    repositories; the API process never reaching a cross_tenant module; each kind (and the
    test suite's) importing of the service only the published kinds surface, app.kinds.api;
    the eval commands over the benchmarks over the engine, neither importing the service;
    scorer plugins importing nothing of the project, and imported by the sandbox alone
    (pyproject.toml, [tool.importlinter])."""
    # In this process, through what the `lint-imports` command calls (the command also sets
    # up logging, which would silence the loggers of every module already imported): the unit
    # tier starts no process. The contracts are read from the working directory.
    monkeypatch.chdir(ROOT)
    configuration.configure()
    kept = lint_imports(cache_dir=None, no_logo=True)
    said = capsys.readouterr().out
    assert kept, said
    assert "12 kept, 0 broken" in said, said


def _constrained_by_contracts() -> set[str]:
    """The modules whose own imports a contract of pyproject.toml restricts: a layer, a
    forbidden contract's source, a protected module (`app` itself, the source of "nothing
    under app/ imports workers/", restricts too little to count)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    named: set[str] = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for layer in contract.get("layers", []):
            named |= {part.strip(" ()") for part in layer.split(":")}
        named |= set(contract.get("source_modules", []))
        named |= set(contract.get("protected_modules", []))
    return named - {"app"}


def test_every_package_is_under_an_import_contract() -> None:
    """Each module and package directly under app/, and workers/, scorers/ and benchmarks/,
    is restricted by a contract: a new one must be placed in the layers before it lands."""
    top = [
        f"app.{path.stem}"
        for path in APP.iterdir()
        if path.name != "__init__.py" and (path.suffix == ".py" or (path / "__init__.py").exists())
    ]
    named = _constrained_by_contracts()

    def restricted(module: str) -> bool:
        # A package whose every part a contract restricts is restricted too (app.evaluation:
        # its engine and its commands).
        if module in named:
            return True
        package = ROOT.joinpath(*module.split("."))
        parts = (
            [
                f"{module}.{path.stem}"
                for path in package.iterdir()
                if path.name != "__init__.py"
                and (path.suffix == ".py" or (path / "__init__.py").exists())
            ]
            if (package / "__init__.py").exists()
            else []
        )
        return bool(parts) and all(part in named for part in parts)

    missing = sorted(
        module for module in [*top, "workers", "scorers", "benchmarks"] if not restricted(module)
    )
    assert missing == []


def test_every_kind_is_held_to_the_kinds_surface() -> None:
    """Each kind's package under app/kinds/ is a source of the contract that lets it import of
    the service only app.kinds.api: a new kind is held to the surface before it lands."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (contract,) = (
        contract
        for contract in config["tool"]["importlinter"]["contracts"]
        if "app.kinds.api" in contract["name"]
    )
    kinds = {
        f"app.kinds.{path.name}"
        for path in (APP / "kinds").iterdir()
        if (path / "__init__.py").exists() and path.name != "api"
    }
    assert len(kinds) >= 3  # prompt, benchmark, red_blue: the scan finds them
    assert kinds <= set(contract["source_modules"])
    assert kinds <= set(contract["forbidden_modules"])


def test_every_route_gives_its_database_connection_back_within_its_thread_trip() -> None:
    """Every blocking route of the app is an `ApiRoute` (docs/capacity.md): it runs in one trip
    to the thread pool that closes the request's session before it ends. A router created
    without `route_class=ApiRoute` would bring back the deadlock under a crowd."""
    from fastapi.routing import APIRoute

    from app.kit.routing import ApiRoute
    from app.main import create_app

    def endpoints(routes: list[Any]) -> Iterator[APIRoute]:
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            included = getattr(route, "original_router", None)  # an included router
            if included is not None:
                yield from endpoints(included.routes)

    routes = list(endpoints(create_app().routes))
    assert len(routes) > 50
    blocking = [
        route.path
        for route in routes
        if not isinstance(route, ApiRoute) and not inspect.iscoroutinefunction(route.endpoint)
    ]
    assert blocking == []
