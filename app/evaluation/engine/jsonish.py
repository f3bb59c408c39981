"""Finding JSON-like values in model output, which wraps them in prose and code fences."""

from __future__ import annotations


def balanced_spans(text: str, opening: str, closing: str) -> list[str]:
    """Every top-level `opening…closing` span of `text`, by bracket depth, in order.

    Brackets inside strings count too: the spans are candidates for a lenient parser, which
    rejects what does not parse.
    """
    spans: list[str] = []
    depth = 0
    start = 0
    for position, character in enumerate(text):
        if character == opening:
            if depth == 0:
                start = position
            depth += 1
        elif character == closing and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : position + 1])
    return spans
