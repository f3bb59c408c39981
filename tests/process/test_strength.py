"""The command the documents give for making a secret makes one production accepts (the rules
are tests/unit/test_strength.py)."""

from __future__ import annotations

from app.kit.strength import secret_problem


def test_the_documented_way_to_make_a_secret_makes_one_production_accepts() -> None:
    import re
    import shlex
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    documented = {
        found
        for name in ("README.md", "docs/production.md", "docs/accounts.md", ".env.example")
        for found in re.findall(
            r"python3 -c \"[^\"]*token_urlsafe[^\"]*\"", (root / name).read_text()
        )
    }
    assert len(documented) == 1, documented
    made = subprocess.run(
        shlex.split(documented.pop()), capture_output=True, text=True, check=True
    ).stdout.strip()
    assert secret_problem("GAUNTLET_SECRET_KEY", made) is None
