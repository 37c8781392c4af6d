r"""GSM8K answers: the `#### N` line and the last number, as lm-evaluation-harness reads them.

Source: EleutherAI/lm-evaluation-harness, task `gsm8k` (`lm_eval/tasks/gsm8k/gsm8k.yaml` @
b733598568fde3afa0e008892f8e7bb18cd472b6, task version 3.0; the two regexes are unchanged since
517aadc, 2024-07) and its `RegexFilter` (`lm_eval/filters/extraction.py`): `re.findall`, the match
at `group_select`, the first non-empty group of a tuple, stripped; no match gives the string
"[invalid]" there, no answer (rule `none`) here. `take_first` keeps the first response.

gsm8k.strict_match@b733598
    Filter "strict-match": `#### (\-?[0-9\.\,]+)`, the FIRST match (group_select 0). Rule
    `strict_match`. Traps kept (this reproduces it): `#### $18` reads nothing (a dollar sign
    after the marks); `#### 1.` keeps the period (the metric drops it); the first `####` wins
    even when the model wrote a corrected one later.

gsm8k.flexible_extract@b733598
    Filter "flexible-extract": `(-?[$0-9.,]{2,})|(-?[0-9]+)`, the LAST match (group_select -1).
    Rule `flexible_extract`. Traps kept: any trailing number wins (`#### 18 ... in 2 days` reads
    2); `$`, `,` and `.` are part of the match (`$1,000.` — the metric drops them); a lone `.,`
    pair matches too.

gsm8k.answer@1
    Source: audit. The GSM8K answer format first, then a fallback: strict-match's `#### N`
    (rule `hash_line`), else flexible-extract's last match that holds a digit (rule
    `last_number`; `.,` is not a number), else `none`.
    The answer is the matched text; the grader (gsm8k.numeric@1) drops `,`, `$` and a trailing
    period as lm-eval's metric does.
    Trap (fixed in @2): strict-match's `[0-9.,]+` stops at `/`, so `#### 2/3` reads `2`, which
    lm-eval's strict-match and gsm8k.numeric@1 credit against a gold of 2.

gsm8k.answer@2
    Source: audit. The same two steps, reading the WHOLE number: after the first `####`
    (rule `hash_line`; a `$` before the number is allowed), else the last number of the text
    (rule `last_number`), a number being `-3`, `1,000.5`, `3.5`, `.5`, `2/3` or `−3` (U+2212).
    When another number follows on the `####` line (`#### 2 2/3`, `#### 3 4`), the answer is
    the whole run (`2 2/3`): no exact grader takes it for one of its parts. The grader
    gsm8k.numeric@2 compares these exactly.
"""

from __future__ import annotations

import re

from audit.extractors import RULE_NONE, Extraction, register
from audit.extractors._scan import last_of

SOURCE = "EleutherAI/lm-evaluation-harness lm_eval/tasks/gsm8k/gsm8k.yaml @ b733598568fde3afa0e008892f8e7bb18cd472b6"
STRICT = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")


def _group(m: re.Match) -> tuple[str, tuple[int, int]] | None:
    """The first non-empty group of a match and its span, stripped as RegexFilter strips it."""
    for g in range(1, (m.lastindex or 0) + 1):
        text = m.group(g)
        if text:
            start, end = m.span(g)
            lead = len(text) - len(text.lstrip())
            return text.strip(), (start + lead, start + lead + len(text.strip()))
    return None


def _strict(text: str) -> Extraction | None:
    m = STRICT.search(text)
    got = _group(m) if m else None
    return Extraction(got[0], "strict_match", got[1]) if got and got[0] else None


def _flexible(text: str) -> Extraction | None:
    m = last_of(FLEXIBLE.finditer(text))
    got = _group(m) if m else None
    return Extraction(got[0], "flexible_extract", got[1]) if got and got[0] else None


@register("gsm8k.strict_match", "b733598", source=SOURCE, rules=("strict_match", "none"),
          description="lm-eval gsm8k strict-match: the first '#### N'")
def strict_match(text: str, *, finish_reason: str | None = None) -> Extraction:
    return _strict(text) or Extraction(None, RULE_NONE)


@register("gsm8k.flexible_extract", "b733598", source=SOURCE, rules=("flexible_extract", "none"),
          description="lm-eval gsm8k flexible-extract: the last number-like token")
def flexible_extract(text: str, *, finish_reason: str | None = None) -> Extraction:
    return _flexible(text) or Extraction(None, RULE_NONE)


@register("gsm8k.answer", "1", rules=("hash_line", "last_number", "none"),
          description="GSM8K: the '#### N' line, else the last number")
def answer(text: str, *, finish_reason: str | None = None) -> Extraction:
    got = _strict(text)
    if got is not None:
        return Extraction(got.answer, "hash_line", got.span)
    last = None
    for m in FLEXIBLE.finditer(text):  # the last match holding a digit (flexible-extract also matches `.,`)
        got = _group(m)
        if got and any(c.isdigit() for c in got[0]):
            last = got
    if last is not None:
        return Extraction(last[0], "last_number", last[1])
    return Extraction(None, RULE_NONE)


# One number as written: sign, digits (thousands commas allowed), decimals, and a `/ denominator`.
_NUM = r"[-−]?(?:[0-9]+(?:,[0-9]+)*(?:\.[0-9]+)?|\.[0-9]+)(?:[ \t]*/[ \t]*[0-9]+(?:,[0-9]+)*(?:\.[0-9]+)?)?"
_HASH_NUMBER = re.compile(r"####[ \t]*\$?[ \t]*(" + _NUM + r"(?:[ \t]+\$?" + _NUM + r")*)")
_LAST_NUMBER = re.compile(r"(?<![0-9.,])" + _NUM)


@register("gsm8k.answer", "2", rules=("hash_line", "last_number", "none"),
          description="GSM8K: the whole number on the '####' line (2/3, -3, 1,000.5), else the last number")
def answer_whole(text: str, *, finish_reason: str | None = None) -> Extraction:
    m = _HASH_NUMBER.search(text)
    if m:
        return Extraction(m.group(1), "hash_line", m.span(1))
    m = last_of(_LAST_NUMBER.finditer(text))
    if m:
        return Extraction(m.group(0), "last_number", m.span())
    return Extraction(None, RULE_NONE)


_EQUATION_AFTER = re.compile(r"[ \t]*(?:[-−+*×x÷/=][ \t]*\$?[ \t]*[0-9(]|=)")
"""What follows the number on a `####` line that holds an equation, not the answer alone (`#### 220 + 90 = 310`)."""


@register("gsm8k.answer", "3", rules=("hash_line", "hash_line_equation", "last_number", "none"),
          description="GSM8K: the whole number on the '####' line (2/3, -3, 1,000.5), its first number when the "
                      "line holds an equation (marked weaker), else the last number")
def answer_marked(text: str, *, finish_reason: str | None = None) -> Extraction:
    # @2's reads exactly; a `####` line whose number an equation follows is read the same (as lm-eval's strict
    # match reads it: `#### 220 + 90 + 60 = 370` gives 220) under its own rule, so the read is known to be weak.
    got = answer_whole(text, finish_reason=finish_reason)
    if got.rule == "hash_line" and got.span is not None and _EQUATION_AFTER.match(text, got.span[1]):
        return Extraction(got.answer, "hash_line_equation", got.span)
    return got


RULE_WORDS = {
    "gsm8k.strict_match": {"strict_match": "the first '#### N' (lm-eval strict-match)", "none": "no '#### N'"},
    "gsm8k.flexible_extract": {"flexible_extract": "the last number-like token (lm-eval flexible-extract)",
                               "none": "no number"},
    "gsm8k.answer": {"hash_line": "the '#### N' line", "last_number": "no '#### N': the last number",
                     "hash_line_equation": "the first number of a '####' line that holds an equation ('#### 220 + "
                                           "90 = 310' reads 220, as lm-eval's strict match does)",
                     "none": "no '#### N' and no number"},
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "gsm8k.strict_match": {"strict_match": "format"},
    "gsm8k.flexible_extract": {"flexible_extract": "fallback"},
    "gsm8k.answer": {"hash_line": "format", "hash_line_equation": "fallback", "last_number": "fallback"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""
