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


RULE_WORDS = {
    "gsm8k.strict_match": {"strict_match": "the first '#### N' (lm-eval strict-match)", "none": "no '#### N'"},
    "gsm8k.flexible_extract": {"flexible_extract": "the last number-like token (lm-eval flexible-extract)",
                               "none": "no number"},
    "gsm8k.answer": {"hash_line": "the '#### N' line", "last_number": "no '#### N': the last number",
                     "none": "no '#### N' and no number"},
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""
