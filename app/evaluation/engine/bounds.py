"""What one model call may bring back and cost, whatever the server says (docs/engine.md,
"Bounded outputs").

A server is believed about the text it answers and the tokens it counts only as far as the
request allows: a call that asked for 16 tokens does not store 31 MB, and an answer whose
usage claims 10^15 tokens is not charged for them. Every rule here is pure and generous, so
that an honest answer is never cut and an honest count never lowered:

- **Output text**: kept up to `output_char_cap` characters, then `TRUNCATION_MARK`. The cap is
  `OUTPUT_CHARS_PER_TOKEN` characters per token the call may produce (its `max_tokens`, else
  the model's `max_output_tokens` from litellm's map), at least `MIN_OUTPUT_CHARS`, and never
  above the ceiling (`GAUNTLET_MAX_OUTPUT_CHARS`, `DEFAULT_MAX_OUTPUT_CHARS` for the CLI).
  Tokens of today's tokenizers average 3 to 5 characters; 16 leaves room for code and
  whitespace runs.
- **Response bytes** (the direct transport reads no more): `RESPONSE_BYTES_PER_TOKEN` per token
  the call may produce, at least `MIN_RESPONSE_BYTES`; never more than the transport's own
  maximum (32 MiB, app.outbound.transport), which is the cap when no limit is known. A JSON
  escape takes up to 12 bytes per character, and hidden reasoning travels in the same answer.
- **Input tokens**: at most the UTF-8 bytes of every message's content (no tokenizer in use
  makes more than one token of a byte), plus `TOKENS_PER_MESSAGE` per message and
  `TOKENS_PER_REQUEST` (chat templates, a default system block). Cached tokens are within them.
- **Output tokens** (reasoning included, as providers count them): at most the call's
  `max_tokens`, else the model's `max_output_tokens`, else the UTF-8 bytes of the answer and
  of its reasoning text plus `TOKENS_PER_REQUEST`. Reasoning tokens are within them.
- **Prompt too long**: a prompt whose size proves it longer than the model's
  `max_input_tokens` (its UTF-8 bytes over `MAX_BYTES_PER_TOKEN`, a floor of its token count)
  is refused before the call.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.evaluation.engine.storable import truncated
from app.evaluation.engine.types import Message

OUTPUT_CHARS_PER_TOKEN = 16
MIN_OUTPUT_CHARS = 1_024
DEFAULT_MAX_OUTPUT_CHARS = 200_000

RESPONSE_BYTES_PER_TOKEN = 64
MIN_RESPONSE_BYTES = 1024 * 1024

TOKENS_PER_MESSAGE = 16
TOKENS_PER_REQUEST = 256
MAX_BYTES_PER_TOKEN = 8


def output_char_cap(token_limit: int | None, ceiling: int) -> int:
    """The characters of an answer kept, for a call that may produce `token_limit` tokens
    (None: no limit known)."""
    if token_limit is None:
        return ceiling
    return min(ceiling, max(MIN_OUTPUT_CHARS, OUTPUT_CHARS_PER_TOKEN * token_limit))


def response_byte_cap(token_limit: int | None) -> int | None:
    """The bytes of an HTTP answer read, for a call that may produce `token_limit` tokens
    (None: the transport's own maximum)."""
    if token_limit is None:
        return None
    return max(MIN_RESPONSE_BYTES, RESPONSE_BYTES_PER_TOKEN * token_limit)


def capped_output(text: str, cap: int) -> tuple[str, int]:
    """The answer as kept (cut at `cap` characters, with the mark) and how many were cut."""
    if len(text) <= cap:
        return text, 0
    return truncated(text, cap), len(text) - cap


def utf8_size(text: str) -> int:
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


def prompt_bytes(messages: Iterable[Message]) -> int:
    """The UTF-8 bytes of every message's content."""
    return sum(utf8_size(str(message.get("content") or "")) for message in messages)


def input_token_bound(messages: list[Message], content_bytes: int) -> int:
    """The most input tokens `messages` (whose contents take `content_bytes`) can be."""
    return content_bytes + TOKENS_PER_MESSAGE * len(messages) + TOKENS_PER_REQUEST


def prompt_token_floor(content_bytes: int) -> int:
    """Fewer tokens than a prompt of `content_bytes` can be: what proves it too long."""
    return content_bytes // MAX_BYTES_PER_TOKEN


def output_token_bound(token_limit: int | None, output: str, reasoning: str) -> int:
    """The most output tokens (reasoning included) an answer can have taken."""
    if token_limit is not None:
        return token_limit
    return utf8_size(output) + utf8_size(reasoning) + TOKENS_PER_REQUEST


@dataclass(frozen=True)
class Usage:
    """A call's four token counts (cached within input, reasoning within output)."""

    input_tokens: int
    cached_tokens: int
    thinking_tokens: int
    output_tokens: int

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "thinking_tokens": self.thinking_tokens,
            "output_tokens": self.output_tokens,
        }


def bounded_usage(reported: Usage, *, max_input: int, max_output: int) -> Usage:
    """The usage as recorded and charged: each count at most what the request could be, and
    never below 0."""
    input_tokens = min(max(reported.input_tokens, 0), max_input)
    output_tokens = min(max(reported.output_tokens, 0), max_output)
    return Usage(
        input_tokens=input_tokens,
        cached_tokens=min(max(reported.cached_tokens, 0), input_tokens),
        thinking_tokens=min(max(reported.thinking_tokens, 0), output_tokens),
        output_tokens=output_tokens,
    )
