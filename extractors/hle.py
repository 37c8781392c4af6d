"""Humanity's Last Exam: the answer line of the official response format.

Source: centerforaisafety/hle, `hle_eval/run_model_predictions.py` — the system
prompts ask for three fields, one per line:
    Explanation: {…}
    Exact Answer: {your succinct, final answer}     (exact-match items)
    Answer: {your chosen answer}                     (multiple-choice items)
    Confidence: {…%}
The official grader hands the whole response to an LLM judge; these extractors
read the field deterministically so that a strict grader can decide.

Known traps:
- "Answer:" also occurs inside the explanation ("Answer: first we…"): only the
  LAST labelled line counts, and a `Confidence:` line never does.
- Markdown: `**Exact Answer:** 42`, `Exact Answer: $42$` are common.
- A response cut at the output ceiling (finish_reason `length`) has no final
  answer line even when an earlier one exists: rule `truncated`, answer None.
"""

from __future__ import annotations

import re

from extractors import Extraction, register

# A label at the start of a line, optionally wrapped in ** or __ (markdown bold).
_EXACT_LINE = re.compile(r"^[ \t>*_#-]*(?:\*\*|__)?Exact Answer(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
                         re.MULTILINE)
_ANSWER_LINE = re.compile(r"^[ \t>*_#-]*(?:\*\*|__)?Answer(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
                          re.MULTILINE)
_LETTER = re.compile(r"^[\s*_$(\[{]*(?:\\text\{|\\textbf\{|\\boxed\{)?\(?([A-Z])\)?(?:[\s.,:;)*_$\]}]|$)")


def _clean(value: str) -> str:
    value = value.strip()
    # Drop trailing markdown bold markers left after the value.
    for wrap in ("**", "__"):
        if value.endswith(wrap) and not value.startswith(wrap):
            value = value[: -len(wrap)].rstrip()
        if value.startswith(wrap) and value.endswith(wrap) and len(value) > 4:
            value = value[2:-2].strip()
    return value


def _last(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    match = None
    for match in pattern.finditer(text):
        pass
    return match


@register("hle.exact_answer", "1", description="HLE: the value on the last 'Exact Answer:' line; cut responses give none",
          source="centerforaisafety/hle hle_eval/run_model_predictions.py (SYSTEM_EXACT_ANSWER)")
def exact_answer(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, "truncated")
    m = _last(_EXACT_LINE, text)
    if m is None:
        return Extraction(None, "none")
    value = _clean(m.group(1))
    if not value:
        return Extraction(None, "empty_answer_line", (m.start(), m.end()))
    return Extraction(value, "exact_answer_line", (m.start(1), m.end(1)))


@register("hle.choice_answer", "1", description="HLE multiple choice: the letter on the last 'Answer:' line; cut responses give none",
          source="centerforaisafety/hle hle_eval/run_model_predictions.py (SYSTEM_MC)")
def choice_answer(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, "truncated")
    m = _last(_ANSWER_LINE, text)
    if m is None:
        return Extraction(None, "none")
    letter = _LETTER.match(m.group(1))
    if letter is None:
        return Extraction(None, "no_letter_on_answer_line", (m.start(1), m.end(1)))
    return Extraction(letter.group(1), "answer_line", (m.start(1) + letter.start(1), m.start(1) + letter.end(1)))
