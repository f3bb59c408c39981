"""The shell commands the project's documents show (README.md, docs/*.md), read the way a reader
copies them: so tests can run them as written."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# A fenced block of shell, at any indentation (a list item's block is indented).
_SHELL_BLOCK = re.compile(r"^( *)```sh\n(.*?)^\1```$", re.M | re.S)


def section(path: Path, title: str) -> str:
    """The text under the `## title` heading, up to the next heading of that level."""
    text = path.read_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def shell_blocks(text: str) -> list[str]:
    """Each ```sh block of the text, its indentation removed."""
    blocks = []
    for indent, body in _SHELL_BLOCK.findall(text):
        lines = body.splitlines()
        blocks.append("\n".join(line.removeprefix(indent) for line in lines) + "\n")
    return blocks


def shell_commands(block: str) -> list[str]:
    """A block's commands, one each, as the shell reads them: a line ending in a backslash, or
    inside a quote, goes on with the next."""
    commands: list[str] = []
    pending = ""
    for line in block.splitlines():
        pending += line + "\n"
        if line.endswith("\\"):
            continue
        try:
            shlex.split(pending, comments=True)
        except ValueError:  # a quote still open
            continue
        if pending.strip():
            commands.append(pending.rstrip("\n"))
        pending = ""
    assert not pending.strip(), f"an unfinished command: {pending!r}"
    return commands


def documented_commands(program: str) -> list[str]:
    """Every command of the documents' shell blocks that starts with `program`, as written."""
    return [
        command
        for document in DOCUMENTS
        for block in shell_blocks(document.read_text())
        for command in shell_commands(block)
        if command.startswith(program + " ")
    ]
