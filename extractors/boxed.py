r"""Answers in a LaTeX box: the content of the last `\boxed{...}` / `\fbox{...}`, and its option letter.

boxed@1
    Source: audit (our own). The convention is the widely copied `last_boxed_only_string`
    of hendrycks/math, e.g. EleutherAI/lm-evaluation-harness
    `lm_eval/tasks/hendrycks_math/utils.py` @ d42a3e4482fad0c2587672254c24ad62afaa5702,
    reimplemented with these differences (each one a trap of that function):
    - the LAST box in the text wins, `\boxed` or `\fbox`, whichever starts later (there,
      any `\boxed` beats a later `\fbox`, and one `\boxed ` with a space anywhere beats
      every later `\boxed{...}`);
    - braces are balanced: `\boxed{\frac{1}{2}}` gives `\frac{1}{2}`; escaped braces
      `\{` and `\}` do not count;
    - `\boxed 5` (no braces) gives the run of characters up to the next whitespace or
      `$`, without a trailing `.`/`,`/`;` (TeX would box one token; there, everything up
      to the next `$`, spaces and prose included);
    - the content is returned with surrounding whitespace removed; the span is that of
      the content in the text.
    Rules: `boxed`, `fbox`, `boxed_unbraced`, `fbox_unbraced`; `unclosed` when the last box never closes
    (a response cut mid-box: no earlier box is used instead); `malformed_box` when it has
    no argument (`\boxed` at the very end, `\boxed\frac12`); `empty_box`; `none`.
    Traps: a box in a restated problem or a worked example late in the text wins; several
    boxes for a multi-part answer give only the last part.

boxed.choice@1
    Source: audit (our own). The last box as above, read as a multiple-choice letter A-J
    (case-sensitive): `\boxed{G}`, `\boxed{(G)}`, `\boxed{\text{G}}`, `\boxed{\textbf{G}}`,
    `\boxed{\text{G. option text}}`, `\boxed{G) text}`, `\boxed{G: text}`, `\boxed{$G$}`
    all give G. A box holding anything else (`\boxed{42}`, `\boxed{A = 5}`,
    `\boxed{A \cup B}`, `\boxed{g}`) gives None with rule `box_not_a_choice`; the answer
    text is never matched to the options here. Letters beyond an item's option count are
    returned: grading decides. Trap: `\boxed{(A) and (C)}` gives A.

boxed.choice@2
    As @1, but a box that marks another option letter after the first (`(C)`, `C.`, `C)`,
    `C:`) gives None with rule `several_choices`. Letters inside option text ("Both A and
    B are true") are not marked options.
"""

from __future__ import annotations

import re

from audit.extractors import RULE_NONE, Extraction, register

RULE_UNCLOSED = "unclosed"
RULE_MALFORMED = "malformed_box"
RULE_EMPTY = "empty_box"
RULE_NOT_A_CHOICE = "box_not_a_choice"

_BOX_COMMANDS = (("boxed", "\\boxed"), ("fbox", "\\fbox"))
# A brace, or a backslash with the character it escapes (`\{` and `\}` never count).
_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.DOTALL)
_UNBRACED = re.compile(r"[ \t]+([^\s$]+)")
_TRAILING_PUNCT = ".,;"
# Wrappers that may open a boxed letter: `\text{`, `\textbf{`, `\mathrm{`, `\mathbf{`, `$`, `{`.
_CHOICE_OPEN = re.compile(r"(?:\s|\$|\{|\\(?:text|textbf|textrm|mathrm|mathbf)\s*\{)*")
_CHOICE = re.compile(r"(?:\(([A-J])\)|([A-J])(?=[.):]))|([A-J])(?=[\s$}]*$)")


def _last_box(text: str) -> tuple[str, int, int] | tuple[str, None, None]:
    """(rule, content start, content end) of the last box, or (reason, None, None)."""
    rule, at = max(((name, text.rfind(cmd)) for name, cmd in _BOX_COMMANDS), key=lambda x: x[1])
    if at < 0:
        return RULE_NONE, None, None
    i = at + len(dict(_BOX_COMMANDS)[rule])
    n = len(text)
    j = i
    while j < n and text[j] in " \t":
        j += 1
    if j < n and text[j] == "{":
        depth = 0
        for m in _BRACE_OR_ESCAPE.finditer(text, j):
            c = m.group()
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return rule, j + 1, m.start()
        return RULE_UNCLOSED, None, None
    m = _UNBRACED.match(text, i)
    if m is None:
        return RULE_MALFORMED, None, None
    start, end = m.span(1)
    while end > start and text[end - 1] in _TRAILING_PUNCT:
        end -= 1
    return rule + "_unbraced", start, end


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


@register("boxed", "1", rules=("boxed", "fbox", "boxed_unbraced", "unclosed", "malformed_box", "empty_box", "none"),
          description="Content of the last \\boxed{...} or \\fbox{...} (balanced braces)")
def boxed(text: str, *, finish_reason: str | None = None) -> Extraction:
    rule, start, end = _last_box(text)
    if start is None or end is None:
        return Extraction(None, rule)
    start, end = _strip_span(text, start, end)
    if start == end:
        return Extraction(None, RULE_EMPTY, (start, end))
    return Extraction(text[start:end], rule, (start, end))


@register("boxed.choice", "1",
          rules=("boxed_choice", "box_not_a_choice", "unclosed", "malformed_box", "empty_box", "none"),
          description="Option letter A-J in the last box: \\boxed{G}, \\boxed{\\text{G. ...}}, (G)")
def boxed_choice(text: str, *, finish_reason: str | None = None) -> Extraction:
    rule, start, end = _last_box(text)
    if start is None or end is None:
        return Extraction(None, rule)
    start, end = _strip_span(text, start, end)
    if start == end:
        return Extraction(None, RULE_EMPTY, (start, end))
    at = _CHOICE_OPEN.match(text, start, end).end()
    m = _CHOICE.match(text, at, end)
    if m is None:
        return Extraction(None, RULE_NOT_A_CHOICE, (start, end))
    group = next(g for g in (1, 2, 3) if m.group(g))
    return Extraction(m.group(group), "boxed_choice", m.span(group))


# --------------------------------------------------------------------------- boxed.choice@2
# @1 read the first letter of a box that names several (`\boxed{(A) and (C)}`,
# `\boxed{A. 5 or B. 6}` gave A). @2 reads the same letter only when no other option
# letter is marked in the box; otherwise None with rule `several_choices`.
RULE_SEVERAL = "several_choices"
# Another option marked after the first: `(C)`, or `C.`/`C)`/`C:` after a separator. A bare
# letter in option text ("Both A and B are true") is not a marked option.
_ANOTHER_CHOICE = re.compile(r"\(([A-J])\)|(?:^|[\s,;/&])([A-J])[.):](?!\d)")


@register("boxed.choice", "2",
          rules=("boxed_choice", "box_not_a_choice", "several_choices", "unclosed", "malformed_box", "empty_box",
                 "none"),
          description="Option letter A-J in the last box; a box naming several letters gives none")
def boxed_choice_2(text: str, *, finish_reason: str | None = None) -> Extraction:
    got = boxed_choice(text, finish_reason=finish_reason)
    if got.answer is None or got.span is None:
        return got
    _, start, end = _last_box(text)
    assert end is not None
    rest = text[got.span[1]:end]
    for m in _ANOTHER_CHOICE.finditer(rest):
        other = next(g for g in m.groups() if g)
        if other != got.answer:
            return Extraction(None, RULE_SEVERAL, (start, end))
    return got


_BOX_WORDS = {
    "unclosed": "the last box never closes (a cut response; no earlier box is used)",
    "malformed_box": "the last \\boxed has no argument",
    "empty_box": "the last box is empty",
    "none": "no \\boxed or \\fbox in the text",
}
RULE_WORDS = {
    "boxed": {
        "boxed": "the content of the last \\boxed{...}",
        "fbox": "the content of the last \\fbox{...}",
        "boxed_unbraced": "the token after the last \\boxed without braces",
        **_BOX_WORDS,
    },
    "boxed.choice": {
        "boxed_choice": "the option letter in the last box",
        "box_not_a_choice": "the last box holds something other than an option letter",
        "several_choices": "the last box names several option letters",
        **_BOX_WORDS,
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "boxed": {"boxed": "format", "fbox": "format", "boxed_unbraced": "format"},
    "boxed.choice": {"boxed_choice": "format"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""

LETTERS_READ = {"boxed.choice": "ABCDEFGHIJ"}
"""The letters each extractor here can read."""
