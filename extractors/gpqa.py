r"""GPQA answer extractors: the final answer line only, and simple-evals' pattern for reproduction.

gpqa.final_line@1
    Source: audit (our own), for prompts that fix the format "The last line of your
    response should be of the following format: 'Answer: $LETTER'" (openai/simple-evals
    `common.QUERY_TEMPLATE_MULTICHOICE` @ ee3b0318d8d1d9d72755a4120879be65f7c07e9e).
    Reads the response's final line and nothing else:
    - the final line is the last line holding a letter or digit (trailing blank lines
      and pure decoration such as `---`, "```" or `$$` are skipped);
    - it must read `Answer: X` (the word `Answer`/`Final Answer` in any case, optional
      markdown around it: `**Answer:** X`, `**Answer: X**`, `## Answer: X`), where X is
      one of A-D, case-sensitive, optionally written `**X**`, `$X$`, `(X)`, `\boxed{X}`,
      `\text{X}`, `$\boxed{\text{X}}$`, with a trailing period, or followed by its option
      text after `.`, `)` or `:` (`Answer: B) 3.2 eV`);
    - `Answer:` alone on its line followed by the final line holding only X also counts.
    Rules: `final_line`; `truncated` when `finish_reason == "length"` (the response was cut
    at the output ceiling: no final line was written, whatever the text contains);
    `unreadable_final_line` when the final line is an `Answer:` line whose value is not
    one letter A-D (`Answer: b`, `Answer: E`, `Answer: I think B`); `no_final_line`.
    Traps it refuses on purpose: an `Answer: X` in the middle of the reasoning (the model
    went on: it is not the final answer); prose conclusions ("so the answer is B") when
    the format was asked for; lowercase letters.

gpqa.simple_evals@ee3b031
    Source: openai/simple-evals @ ee3b0318d8d1d9d72755a4120879be65f7c07e9e, `gpqa_eval.py`
    with `common.ANSWER_PATTERN_MULTICHOICE = r"(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?"`
    (unchanged since 294cb1f, May 2024): `re.search`, the FIRST match, anywhere.
    Traps kept on purpose (this reproduces it): `(?i)` also makes the letter
    case-insensitive, so `answer: b` gives "b", which simple-evals then scores wrong
    against "B"; `Answer: Because ...` gives "B" (nothing ends the letter); a
    mid-reasoning "Answer: A" beats the final line; no truncation check.
"""

from __future__ import annotations

import re

from audit.extractors import RULE_NONE, Extraction, register

RULE_TRUNCATED = "truncated"
RULE_FINAL_LINE = "final_line"
RULE_NO_FINAL_LINE = "no_final_line"
RULE_UNREADABLE = "unreadable_final_line"

SOURCE_SIMPLE_EVALS = "openai/simple-evals gpqa_eval.py, common.py @ ee3b0318d8d1d9d72755a4120879be65f7c07e9e"

# `Answer:` with markdown around it; group "rest" is whatever follows the colon.
_ANSWER_HEAD = re.compile(
    r"[ \t#>*_-]*(?i:(?:final[ \t]+)?answer)[ \t]*(?:\*\*|__)?[ \t]*:[ \t]*(?:\*\*|__)?[ \t]*(?P<rest>.*)")
# The value: one letter in optional wrappers, then the line's end (a period and closing
# emphasis allowed), or its option text after a label mark: `B. text`, `B) text`, `(B) text`.
_VALUE = re.compile(
    r"[ \t]*(?P<open>(?:\*\*|__|\$|\\\(|\\boxed[ \t]*\{|\\text(?:bf)?[ \t]*\{|\\mathrm[ \t]*\{)*)"
    r"(?P<lp>\()?(?P<letter>[A-D])(?(lp)\))"
    r"(?P<close>(?:\*\*|__|\$|\\\)|\})*)"
    r"(?:[ \t]*(?(lp)\.?|[.)]?)[ \t]*(?:\*\*|__)?[ \t]*$|(?(lp)|[.):])[ \t]+\S.*$)")
_HAS_ALNUM = re.compile(r"[^\W_]")
_SIMPLE_EVALS = re.compile(r"(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?")


def _wrappers_balance(open_: str, close: str) -> bool:
    """The value's wrappers close what they open: `{` vs `}`, `\\(` vs `\\)`, `$` vs `$`."""
    return (open_.count("{") == close.count("}") and open_.count("(") == close.count(")")
            and open_.count("$") == close.count("$"))


def _last_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of the last two lines holding a letter or digit, last first."""
    found: list[tuple[int, int]] = []
    end = len(text)
    while end > 0 and len(found) < 2:
        start = text.rfind("\n", 0, end) + 1
        if _HAS_ALNUM.search(text, start, end):
            found.append((start, end))
        end = start - 1
    return found


def _read_value(text: str, start: int, end: int) -> Extraction | None:
    m = _VALUE.match(text, start, end)
    if m and _wrappers_balance(m.group("open"), m.group("close")):
        return Extraction(m.group("letter"), RULE_FINAL_LINE, m.span("letter"))
    return None


@register("gpqa.final_line", "1", rules=("final_line", "no_final_line", "unreadable_final_line", "truncated"),
          description="GPQA: the letter on the response's final 'Answer: X' line only; cut responses give none")
def final_line(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, RULE_TRUNCATED)
    lines = _last_lines(text)
    if not lines:
        return Extraction(None, RULE_NO_FINAL_LINE)
    start, end = lines[0]
    head = _ANSWER_HEAD.match(text, start, end)
    if head is None:
        # `Answer:` alone on the line before, the letter alone on the final line.
        if len(lines) == 2:
            pstart, pend = lines[1]
            prev = _ANSWER_HEAD.match(text, pstart, pend)
            if prev is not None and not text[prev.start("rest"):pend].strip(" \t*_"):
                got = _read_value(text, start, end)
                if got is not None:
                    return got
        return Extraction(None, RULE_NO_FINAL_LINE)
    got = _read_value(text, head.start("rest"), end)
    if got is not None:
        return got
    return Extraction(None, RULE_UNREADABLE, (start, end))


@register("gpqa.simple_evals", "ee3b031", rules=("answer_pattern", "none"),
          source=SOURCE_SIMPLE_EVALS,
          description="openai/simple-evals GPQA: first '(?i)Answer: X' anywhere (X may come back lowercase)")
def simple_evals(text: str, *, finish_reason: str | None = None) -> Extraction:
    m = _SIMPLE_EVALS.search(text)
    if m:
        return Extraction(m.group(1), "answer_pattern", m.span(1))
    return Extraction(None, RULE_NONE)


RULE_WORDS = {
    "gpqa.final_line": {
        "final_line": "the letter on the final 'Answer: X' line",
        "no_final_line": "the final line is not an 'Answer:' line",
        "unreadable_final_line": "the final 'Answer:' line holds no single letter A-D",
        "truncated": "cut at the output ceiling: no final line was written",
    },
    "gpqa.simple_evals": {
        "answer_pattern": "the first '(?i)Answer: X' anywhere (simple-evals)",
        "none": "no 'Answer: X' anywhere",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "gpqa.final_line": {"final_line": "format"},
    "gpqa.simple_evals": {"answer_pattern": "statement"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""

LETTERS_READ = {"gpqa.final_line": "ABCD", "gpqa.simple_evals": "ABCD"}
"""The letters each extractor here can read."""
