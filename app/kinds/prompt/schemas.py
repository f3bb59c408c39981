"""What a participant submits to a prompt challenge."""

from __future__ import annotations

from pydantic import Field

from app.kinds.api import KindSubmission, SubmittedText


class PromptSubmission(KindSubmission):
    prompt: SubmittedText = Field(description="The participant's prompt.")
