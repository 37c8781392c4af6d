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

Versions:
- `@1` reads a letter from any `Answer:` value that starts with one ("Answer: I think C"
  gives I, "Answer: A or B" gives A) and needs the labels' exact case.
- `@2` (the `hle` spec's default) reads a letter only when it is the whole value, or is
  followed by a separator and option text ("C", "(C)", "**C**", "\boxed{C}", "C. text");
  labels in any case; a value of markdown alone is no answer.
"""

from __future__ import annotations

import re

from audit.extractors import Extraction, register

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


@register("hle.exact_answer", "1", rules=("exact_answer_line", "empty_answer_line", "none", "truncated"),
          description="HLE: the value on the last 'Exact Answer:' line; cut responses give none",
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


@register("hle.choice_answer", "1", rules=("answer_line", "no_letter_on_answer_line", "none", "truncated"),
          description="HLE multiple choice: the letter on the last 'Answer:' line; cut responses give none",
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


# --------------------------------------------------------------------------- version 2
# @1 read a letter from any value that starts with one ("Answer: I think C" gave I,
# "Answer: A or B" gave A) and required the label's exact case. @2 reads a letter only
# when it is the whole value or is followed by a separator and option text
# ("C", "(C)", "**C**", "\boxed{C}", "C. text", "C) text"), and accepts the labels in any case.

_EXACT_LINE_2 = re.compile(
    r"^[ \t>*_#-]*(?:\*\*|__)?exact[ \t]+answer(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
    re.MULTILINE | re.IGNORECASE)
_ANSWER_LINE_2 = re.compile(
    r"^[ \t>*_#-]*(?:\*\*|__)?answer(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(.*)$",
    re.MULTILINE | re.IGNORECASE)
_WRAP_OPEN = r"(?:[\s*_$\[{(]|\\(?:text|textbf|mathrm|mathbf|boxed)\s*\{)*"
_LETTER_2 = re.compile(_WRAP_OPEN + r"([A-Z])(?:[\s*_$\]})]*|[\s*_$\]})]*[.):]\s+\S.*|[.):][\s*_$\]}]*)$")
_MARKDOWN_ONLY = re.compile(r"^[\s*_`~]*$")


def _value_2(raw: str) -> str:
    """The value with surrounding markdown emphasis removed; empty when nothing else is there."""
    value = raw.strip()
    if _MARKDOWN_ONLY.match(value):
        return ""
    for wrap in ("**", "__", "*", "_", "`"):
        if len(value) > 2 * len(wrap) and value.startswith(wrap) and value.endswith(wrap):
            value = value[len(wrap):-len(wrap)].strip()
    return value.removesuffix("**").removesuffix("__").strip()


@register("hle.exact_answer", "2", rules=("exact_answer_line", "empty_answer_line", "none", "truncated"),
          description="HLE: the value on the last 'Exact Answer:' line (any case); cut responses give none",
          source="centerforaisafety/hle hle_eval/run_model_predictions.py (SYSTEM_EXACT_ANSWER)")
def exact_answer_2(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, "truncated")
    m = _last(_EXACT_LINE_2, text)
    if m is None:
        return Extraction(None, "none")
    value = _value_2(m.group(1))
    if not value:
        return Extraction(None, "empty_answer_line", (m.start(), m.end()))
    start = m.start(1) + m.group(1).find(value)
    return Extraction(value, "exact_answer_line", (start, start + len(value)))


@register("hle.choice_answer", "2", rules=("answer_line", "no_letter_on_answer_line", "none", "truncated"),
          description="HLE multiple choice: the letter that is the whole last 'Answer:' value; cut responses give none",
          source="centerforaisafety/hle hle_eval/run_model_predictions.py (SYSTEM_MC)")
def choice_answer_2(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, "truncated")
    m = _last(_ANSWER_LINE_2, text)
    if m is None:
        return Extraction(None, "none")
    letter = _LETTER_2.match(m.group(1).rstrip())
    if letter is None:
        return Extraction(None, "no_letter_on_answer_line", (m.start(1), m.end(1)))
    return Extraction(letter.group(1), "answer_line", (m.start(1) + letter.start(1), m.start(1) + letter.end(1)))


RULE_WORDS = {
    "hle.exact_answer": {
        "exact_answer_line": "the value on the last 'Exact Answer:' line",
        "empty_answer_line": "the last 'Exact Answer:' line is empty",
        "none": "no 'Exact Answer:' line",
        "truncated": "cut at the output ceiling: no final answer line",
    },
    "hle.choice_answer": {
        "answer_line": "the letter on the last 'Answer:' line",
        "no_letter_on_answer_line": "the last 'Answer:' line holds no option letter",
        "none": "no 'Answer:' line",
        "truncated": "cut at the output ceiling: no final answer line",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "hle.exact_answer": {"exact_answer_line": "format"},
    "hle.choice_answer": {"answer_line": "format"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""

LETTERS_READ = {"hle.choice_answer": "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
"""The letters each extractor here can read."""
