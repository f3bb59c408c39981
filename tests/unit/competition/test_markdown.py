"""Organizer Markdown (challenge pages, announcements) comes out as HTML that runs nothing:
hostile input is shown as text or dropped, whatever the renderer or the sanitizer is handed."""

from __future__ import annotations

import re

import pytest

from app.challenge.config import ChallengePages
from app.competition.markdown import render, sanitized

# No element may be a script, a frame, a style or a form, nor carry an event handler, a style
# or a URL that runs code (text that only reads so, escaped, is harmless).
_ACTIVE = re.compile(
    r"<\s*(script|iframe|object|embed|style|svg|math|form|input|link|meta|base|details)\b"
    r"|<[^>]*\s(on[a-z]+|style)\s*="
    r"|<[^>]*(href|src)\s*=\s*[\"']?\s*(javascript|vbscript|data|file):",
    re.IGNORECASE,
)

HOSTILE_MARKDOWN = [
    "<script>alert(1)</script>",
    "Hello <script src=//evil.example/x.js></script> world",
    "<img src=x onerror=alert(1)>",
    '![pic](https://example.org/a.png" onerror="alert(1))',
    "![pic](javascript:alert(1))",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[click](java\tscript:alert(1))",
    "[click](&#106;avascript:alert(1))",
    "[click](vbscript:msgbox(1))",
    "[click](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[click][ref]\n\n[ref]: javascript:alert(1)",
    "<a href='javascript:alert(1)'>x</a>",
    "<iframe src=https://evil.example></iframe>",
    "<svg onload=alert(1)></svg>",
    '<div style="background:url(javascript:alert(1))">x</div>',
    "<details open ontoggle=alert(1)>",
    "<!-- <script>alert(1)</script> -->",
    "```html\n<script>alert(1)</script>\n```",
    "`<img src=x onerror=alert(1)>`",
    "<<script>script>alert(1)<</script>/script>",
    "| a |\n|---|\n| <img src=x onerror=alert(1)> |",
]


@pytest.mark.parametrize("text", HOSTILE_MARKDOWN)
def test_hostile_markdown_renders_inert(text: str) -> None:
    html = str(render(text))
    assert not _ACTIVE.search(html), html


@pytest.mark.parametrize(
    "html",
    [
        "<script>alert(1)</script><p>ok</p>",
        '<img src="x" onerror="alert(1)">',
        '<a href="javascript:alert(1)">x</a>',
        '<a href="data:text/html,x">x</a>',
        '<p style="color:red" onclick="alert(1)">x</p>',
        "<iframe src=https://evil.example></iframe>",
        "<form action=https://evil.example><input name=password></form>",
    ],
)
def test_the_sanitizer_alone_makes_raw_html_inert(html: str) -> None:
    # The second layer: HTML that got past the renderer still meets the allow-list.
    assert not _ACTIVE.search(sanitized(html)), sanitized(html)


def test_raw_html_is_shown_as_text_not_dropped() -> None:
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in str(render("<script>alert(1)</script>"))


def test_ordinary_markdown_keeps_its_formatting() -> None:
    html = str(
        render(
            "# Rules\n\n**One** entry a day, see [the site](https://example.org).\n\n"
            "- a\n- b\n\n| k | v |\n|---|---|\n| 1 | 2 |\n\n```\ncode\n```\n\n"
            "![chart](https://example.org/c.png)\n\n~~old~~ [mail](mailto:o@example.org)"
        )
    )
    assert "<h3>Rules</h3>" in html  # headings start under the page's own h2
    assert "<strong>One</strong>" in html
    assert '<a href="https://example.org" rel="noopener noreferrer nofollow">' in html
    assert "<li>a</li>" in html and "<table>" in html and "<td>2</td>" in html
    assert "<pre><code>code\n</code></pre>" in html
    assert '<img src="https://example.org/c.png" alt="chart">' in html
    assert "<s>old</s>" in html or "<del>old</del>" in html
    assert 'href="mailto:o@example.org"' in html


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("## Fair play\n\n### Teams\n\n## Prizes", [3, 4, 3]),
        ("### Only this", [3]),
        ("# A\n\n## B\n\n### C\n\n#### D\n\n##### E\n\n###### F", [3, 4, 5, 6, 6, 6]),
    ],
)
def test_the_texts_top_heading_is_an_h3_whatever_level_it_was_written_at(
    text: str, levels: list[int]
) -> None:
    """The page's outline skips no level: its h2, then the text's headings from h3 down."""
    html = str(render(text))
    assert [int(level) for level in re.findall(r"<h([1-6])>", html)] == levels


@pytest.mark.parametrize("text", ["", "   ", "\n\n"])
def test_empty_text_renders_nothing(text: str) -> None:
    assert str(render(text)) == ""


def test_unicode_and_huge_text_render() -> None:
    assert "héllo ✓ 日本" in str(render("héllo ✓ 日本"))
    huge = "word " * 20_000
    assert str(render(huge)).startswith("<p>word")


def test_the_rules_version_ignores_line_ends_and_trailing_blanks() -> None:
    one = ChallengePages(rules="No bots.\nOne account each.").rules_sha256
    assert one is not None and len(one) == 64
    assert ChallengePages(rules="No bots.  \r\nOne account each.\n\n").rules_sha256 == one
    assert ChallengePages(rules="No bots.\nTwo accounts each.").rules_sha256 != one
    assert ChallengePages(rules="  \n ").rules_sha256 is None
    assert ChallengePages().rules_sha256 is None
