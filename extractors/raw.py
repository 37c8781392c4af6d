"""The whole response as the answer: for packages whose `response` already is an extracted answer.

Source: audit. Leading and trailing whitespace is dropped; an empty response
has no answer (rule `empty`), never an empty-string answer.
"""

from __future__ import annotations

from extractors import Extraction, register


@register("raw", "1", description="the whole response, stripped (for pre-extracted answers)")
def raw(text: str, *, finish_reason: str | None = None) -> Extraction:
    stripped = text.strip()
    if not stripped:
        return Extraction(None, "empty")
    start = len(text) - len(text.lstrip())
    return Extraction(stripped, "whole_response", (start, start + len(stripped)))
