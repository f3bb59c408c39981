"""Markdown an organizer writes (a challenge's pages, announcements) as HTML a page can
show. Participants read it on the organizer's pages, so it must not run anything there:

- markdown-it-py renders CommonMark (with tables and strikethrough) with **raw HTML off**:
  `<script>`, `<img onerror=...>` or `<iframe>` typed in the text come out as text;
- its own link check drops `javascript:`, `vbscript:`, `file:` and `data:` (but images)
  link targets;
- then nh3 (the Rust `ammonia` sanitizer) keeps only an allow-list of tags and attributes
  and only `http`, `https` and `mailto` URLs, whatever the renderer produced, and adds
  `rel="noopener noreferrer nofollow"` to links. Two independent layers: a renderer bug
  that lets HTML through still meets the sanitizer.

Headings start at level 3: the text's top heading level, whichever it is (`#` or the `##`
many writers start with), becomes an `h3` under the page's own `h2`, the others keeping
their places below it, so the page's outline skips no level.
"""

from __future__ import annotations

from functools import cache

import nh3
from markdown_it import MarkdownIt
from markupsafe import Markup

ALLOWED_TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "code", "del", "em", "h3", "h4", "h5", "h6",
        "hr", "i", "img", "li", "ol", "p", "pre", "s", "strong", "sub", "sup", "table",
        "tbody", "td", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "ol": {"start"},
    "td": {"align"},
    "th": {"align"},
    "code": {"class"},
}
URL_SCHEMES = frozenset({"http", "https", "mailto"})
# The level the text's top heading takes: an h3 under the page's h2.
TOP_HEADING_LEVEL = 3


@cache
def _renderer() -> MarkdownIt:
    markdown = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    return markdown.enable(["table", "strikethrough"])


def _html(text: str) -> str:
    renderer = _renderer()
    tokens = renderer.parse(text)
    headings = [token for token in tokens if token.type in ("heading_open", "heading_close")]
    if headings:
        shift = TOP_HEADING_LEVEL - min(int(token.tag[1]) for token in headings)
        for token in headings:
            token.tag = f"h{min(int(token.tag[1]) + shift, 6)}"
    return str(renderer.renderer.render(tokens, renderer.options, {}))


def sanitized(html: str) -> str:
    """HTML cut down to the allow-list (tags, attributes, URL schemes)."""
    return nh3.clean(
        html,
        tags=set(ALLOWED_TAGS),
        attributes={tag: set(names) for tag, names in ALLOWED_ATTRIBUTES.items()},
        url_schemes=set(URL_SCHEMES),
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def render(text: str) -> Markup:
    """The Markdown as safe HTML ('' for empty text)."""
    if not text.strip():
        return Markup("")
    # Marked safe only once sanitized.
    return Markup(sanitized(_html(text)))
