"""A scoring strategy is one object of the registry (app/scoring/strategies.py): the code asks
the challenge's strategy what it does, never which strategy it is. Checked here by reading the
code: a comparison, a `match` or a table keyed by a strategy's name, anywhere in app/ but the
registry, is a rule about one strategy kept outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.scoring.strategies import Strategy

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
REGISTRY = Path("app/scoring/strategies.py")

MEMBERS = {member.name for member in Strategy}
NAMES = {member.value for member in Strategy}

# In a template: the strategy (or its key or name) compared, or tested for membership.
TEMPLATE_TEST = re.compile(r"\bstrategy(\.key|\.name)?\s*(==|!=|\bis\b|\bin\b|\bnot\s+in\b)")


def _names_a_strategy(node: ast.AST) -> bool:
    """`Strategy.FIRST`, `"first"`, or a tuple, list or set holding one."""
    if isinstance(node, ast.Attribute) and node.attr in MEMBERS:
        owner = node.value
        return (isinstance(owner, ast.Name) and owner.id == "Strategy") or (
            isinstance(owner, ast.Attribute) and owner.attr == "Strategy"
        )
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_names_a_strategy(element) for element in node.elts)
    return False


def _tests_a_strategy(node: ast.AST) -> str | None:
    if isinstance(node, ast.Compare) and any(
        _names_a_strategy(operand) for operand in [node.left, *node.comparators]
    ):
        return "compares a strategy"
    if isinstance(node, ast.match_case):
        values = [
            pattern.value
            for pattern in ast.walk(node.pattern)
            if isinstance(pattern, ast.MatchValue)
        ]
        if any(_names_a_strategy(value) for value in values):
            return "matches a strategy"
    if isinstance(node, ast.Dict) and any(
        key is not None and _names_a_strategy(key) for key in node.keys
    ):
        return "keys a table by strategy"
    return None


def strategy_tests_outside_the_registry(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / "app").rglob("*.py")):
        where = path.relative_to(root)
        if where == REGISTRY:
            continue
        in_file = []
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            said = _tests_a_strategy(node)
            if said is not None:
                line = node.pattern.lineno if isinstance(node, ast.match_case) else node.lineno
                in_file.append((line, said))
        found += [f"{where}:{line} {said}" for line, said in sorted(in_file)]
    for path in sorted((root / "app").rglob("*.html")):
        where = path.relative_to(root)
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if TEMPLATE_TEST.search(line):
                found.append(f"{where}:{number} compares a strategy")
    return found


def test_no_code_outside_the_registry_tests_which_strategy_it_has() -> None:
    assert strategy_tests_outside_the_registry() == []


def test_the_scan_finds_a_rule_about_one_strategy_wherever_it_is(tmp_path: Path) -> None:
    # The check itself: each way of singling out a strategy is caught; declaring which
    # strategies a kind allows, asking the registry, and the registry itself are not.
    package = tmp_path / "app" / "domain"
    package.mkdir(parents=True)
    (package / "service.py").write_text(
        "from app.scoring.strategies import Strategy, scoring_strategy\n"
        "STRATEGIES = (Strategy.FIRST, Strategy.CUSTOM)\n"
        "def bad(strategy, scoring):\n"
        "    if strategy is Strategy.CUSTOM:\n"
        "        return 1\n"
        "    if scoring.get('strategy') == 'custom':\n"
        "        return 2\n"
        "    if strategy in (Strategy.FIRST, Strategy.FASTEST):\n"
        "        return 3\n"
        "    match strategy:\n"
        "        case Strategy.METRIC_AT_K:\n"
        "            return 4\n"
        "    return {Strategy.FIRST: 'Solved at'}[strategy]\n"
        "def fine(strategy, scoring):\n"
        "    return scoring_strategy(strategy).shown, {'strategy': 'fewest_tokens'}\n"
    )
    (package / "board.html").write_text(
        '{% if board.strategy.key != "first" %}x{% endif %}\n'
        '{% if board.strategy.measure != "created_at" %}y{% endif %}\n'
    )
    registry = tmp_path / "app" / "scoring"
    registry.mkdir()
    (registry / "strategies.py").write_text("def ok(s):\n    return s == 'custom'\n")
    assert strategy_tests_outside_the_registry(tmp_path) == [
        "app/domain/service.py:4 compares a strategy",
        "app/domain/service.py:6 compares a strategy",
        "app/domain/service.py:8 compares a strategy",
        "app/domain/service.py:11 matches a strategy",
        "app/domain/service.py:13 keys a table by strategy",
        "app/domain/board.html:1 compares a strategy",
    ]
