"""The whole response as the answer: for packages whose `response` already is an extracted answer.

Source: audit. Leading and trailing whitespace is dropped.

Known traps: an empty or whitespace-only response has no answer (rule `empty`),
never an empty-string answer that a lenient grader could match.
"""

from __future__ import annotations

from audit.extractors import Extraction, register


@register("raw", "1", rules=("whole_response", "empty"),
          description="The whole response, stripped (for packages of pre-extracted answers)")
def raw(text: str, *, finish_reason: str | None = None) -> Extraction:
    stripped = text.strip()
    if not stripped:
        return Extraction(None, "empty")
    start = len(text) - len(text.lstrip())
    return Extraction(stripped, "whole_response", (start, start + len(stripped)))


RULE_WORDS = {"raw": {"whole_response": "the whole response, stripped", "empty": "the response is blank"}}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {"raw": {"whole_response": "format"}}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""
