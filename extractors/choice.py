r"""Multiple-choice letters from free-form responses whose prompt fixed no answer format.

choice.freeform@1
    Source: audit (our own). Written for, and measured on, the 6,336 GPQA Diamond
    responses of HaveFunWithAI/gpqa_diamond_exp @ 532103bdb378613bfa0dbec93a4ba160482837b0,
    whose zero-shot prompt (`Question: ... Options: A. ... D. ...`) asked for no answer
    format. openai/simple-evals' `Answer: X` pattern finds a letter in only 92 of them.
    It is never a fallback for a benchmark whose prompt fixed the format: use that
    benchmark's own extractor (e.g. `gpqa.final_line`), which refuses what this one reads.

    The cascade, over option letters A-D (case-sensitive; a letter must stand alone:
    `A.`, `(A)`, `**A**`, `A:` count; `A1`, `Ab`, `A = ...` and "C is not correct" do not):

    1. Answer statements anywhere in the text; the LAST one wins:
       `answer_is`        "... answer/option/choice/statement is X", also across line breaks
                          ("The correct answer is:\n\n**B. text**"), "would be", "should be",
                          "is likely", "is Option X";
       `answer_label`     "Answer: X", "**Final Answer:** X", "Correct option: (X)";
       `boxed`            "\boxed{X}", "\boxed{\text{X. text}}", "\boxed{(X)}";
       `letter_is_answer` "**Option A** is the most likely correct answer";
       `answer_is_named`  "The correct answer is **(3aR,...)-dione (Option B).**".
    2. Only when step 1 finds nothing, weaker statements anywhere; the last one wins:
       `is_letter`        "... is **C. 1864**", "... is:\n\nB. text", "corresponds to Option B";
       `named_option`     "(Option B)";
       `colon_line`       "I would select:\n\nD. text" (not after a line introducing the options).
    A weaker statement never overrides a stronger one, wherever it sits: mid-reasoning
    "X is ..." sentences are common, "the answer is X" statements are not.
    The winning statement is a `conflict` (answer None) when it offers a second letter
    on its line ("either A or B", "B (or C, as they are the same)", "A, C") or, when
    its letter opens a line, the next non-blank line opens with another option label
    (it introduced a list).
    3. Only when steps 1-2 find nothing, the closing paragraph (after the last blank line,
       at most the last 600 characters) for cues: `option_word` ("Option X", "choice (X)"),
       `option_line` (a line opening "X. ", "**X) ", "(X) "), `paren_letter` ("(X)").
       Cues naming more than one distinct letter give `conflict`: no clear option.
    4. Otherwise None, rule `none`. A response cut at the output ceiling
       (`finish_reason == "length"`) gives None, rule `truncated`, whatever it says.

    Known traps: hedged statements ("none of the options match; the closest is D") are
    read as D: the model answered D. On the real data, of 783 statements with "closest",
    "none of", "not among", "not listed", "not (exactly) match" nearby, the third-party
    extractor also reads 568 so, calls 205 "no clear option" and 10 another letter.
    A letter whose option text belongs to another option is read as the letter; the
    options are not known here. A response that names no letter at all (only option
    text) gives None. Reads letters A-D only: a new version is needed for more options.
"""

from __future__ import annotations

import re

from audit.extractors import RULE_NONE, Extraction, register

RULE_TRUNCATED = "truncated"
RULE_CONFLICT = "conflict"


def _keyword(*alternatives: str) -> str:
    """Case-insensitive `\\b(?:alt|...)`, written to start with a plain character class.

    Python's `re` skips ahead quickly only to a literal or a character class; a pattern
    opening with `\\b(?i:...)` is tried at every position, 3-6x slower on long texts.
    Each alternative must start with a letter.
    """
    firsts = "".join(sorted({c for a in alternatives for c in (a[0].lower(), a[0].upper())}))
    return "[" + firsts + r"](?<!\w\w)(?i:" + "|".join(f"(?<={a[0]}){a[1:]}" for a in alternatives) + ")"


# Markup that may sit between a statement's keyword and its letter: emphasis, math
# delimiters, colons, opening brackets, LaTeX wrappers, line breaks.
_PRE = r"(?:[\s*_:$#>\[\]{(]|\\(?:boxed|text|textbf|mathrm|mathbf)\s*\{|\\[(\[])*"
# "option" between keyword and letter ("the answer is Option B"); _PRE absorbs the space after it.
_OPTION_PREFIX = r"(?:(?i:option|choice)" + _PRE + r")?"
# A standalone letter that is not itself the subject of a negative ("C is not correct").
_LETTER = r"\(?([A-D])\)?(?![\w'’/-])(?!\s*=)(?!\s+(?:is|are)\s+(?:not\b|incorrect|wrong))"
# What an option label looks like after "... is": `B.`, `B)`, `B:`, `**B**`, `(B)`, or the letter ending its line.
_LABEL_END = r"(?=[.):,](?:\s|\*|$)|\*\*|\}|\$|[ \t]*$|\s+\()"

_STATEMENTS = (
    ("answer_is", re.compile(
        _keyword("answer", "option", "choice", "statement", "alternative")
        + r"(?i:(?:\s*\*\*)?\s+(?:is|would\s+be|should\s+be|must\s+be|will\s+be)"
        r"(?:\s+(?:therefore|thus|then|clearly|indeed|likely|probably|most\s+likely|either))*)"
        + _PRE + _OPTION_PREFIX + _LETTER)),
    ("answer_label", re.compile(
        _keyword("answer", r"final\s+answer", r"correct\s+answer", r"best\s+answer", r"right\s+answer",
                 r"final\s+(?:option|choice)", r"correct\s+(?:option|choice)", r"best\s+(?:option|choice)",
                 r"right\s+(?:option|choice)")
        + r"\s*(?:\*\*|__)?\s*:" + _PRE + _OPTION_PREFIX + _LETTER)),
    ("boxed", re.compile(r"\\boxed\s*\{" + _PRE + _OPTION_PREFIX + _LETTER)),
    # "**Option A** is the most likely correct answer"
    ("letter_is_answer", re.compile(
        _keyword("option", "choice") + r"[*_\s]*\(?([A-D])\)?[*_]*\s+(?i:is|appears\s+to\s+be|seems\s+to\s+be)\s+"
        r"(?i:the\s+(?:[\w-]+\s+){0,3}(?:answer|choice|option|structure|product|compound|statement|match))\b")),
    # "The correct answer is **(3aR,...)-dione (Option B).**": the option named after its text, same line.
    ("answer_is_named", re.compile(
        _keyword("answer", "option", "choice")
        + r"(?i:(?:\s*\*\*)?\s+is\b)[^\n]{0,300}?\((?:(?i:option|choice)\s+)?([A-D])\)")),
)
# Read only when no statement above is found: "the closest value is **C. 1864**",
# "the product is:\n\nB. text", "This corresponds to Option B".
_IS_LETTER = re.compile(_keyword("is", "be", "to", "as", "matches")
                        + r"(?i:\s+(?:most\s+likely|likely|probably|either))*(?=[\s*:])"
                        + _PRE + _OPTION_PREFIX + _LETTER + _LABEL_END, re.M)
# "I would select:\n\nD. text": a line ending in a colon, then an option label opening the next
# non-blank line; not when the colon line introduces the options themselves.
_COLON_LINE = re.compile(r"(?m)^[^\n]*:[ \t*_]*\n(?:[ \t]*\n)*[ \t>*_#-]*" + _OPTION_PREFIX + r"\(?([A-D])[.):]")
_INTRODUCES_OPTIONS = re.compile(
    _keyword("options", "each", "every", "following", "analys", "analyz", "consider", "evaluat", "examin", "review",
             "given"))
# "... is **ethyl acetate (Option B)**": read with _IS_LETTER.
_NAMED_OPTION = re.compile(r"\((?i:option|choice)\s+([A-D])\)")
_WEAK_STATEMENTS = (("is_letter", _IS_LETTER), ("named_option", _NAMED_OPTION), ("colon_line", _COLON_LINE))

# A second letter offered beside the stated one, later on the same line: "B or C", "A and D",
# "A, C", "either A (8) or B (11)", "B (or C, as they are the same)".
_ALTERNATIVE = re.compile(r"[\s*_$)}\]]*(?:,|/|&)\s*[*_$\\({]*\(?([A-D])\)?(?![\w'’/=-])(?!\s*=)"
                          r"|[^\n]{0,80}?\b(?:or|and)\s+(?:(?i:option|choice)\s*)?[*_$\\({]*\(?([A-D])\)?"
                          r"(?![\w'’/=-])(?!\s*=)")
# The next non-blank line opens with another option label: the statement introduced a list.
_NEXT_LABEL_LINE = re.compile(r"[^\n]*\n(?:[ \t]*\n)*[ \t>*_#-]*\(?([A-D])[.):]")

_OPTION_WORD = re.compile(_keyword("option", "choice") + r"\s*[*_$]*" + _LETTER)
_OPTION_LINE = re.compile(r"(?m)^[ \t>*_#-]*(?:\*\*)?\(?([A-D])(?:[.):])(?=\s|\*|$)")
_PAREN_LETTER = re.compile(r"\(([A-D])\)")
_CLOSING_WINDOW = 600


def _closing_paragraph(text: str) -> int:
    """Offset where the closing paragraph starts: after the last blank line, within the last 600 chars."""
    body_end = len(text.rstrip())
    cut = text.rfind("\n\n", 0, body_end)
    start = 0 if cut < 0 else cut + 2
    return max(start, body_end - _CLOSING_WINDOW)


def _last_statement(text: str, patterns) -> tuple[str, re.Match[str]] | None:  # type: ignore[no-untyped-def]
    best: tuple[str, re.Match[str]] | None = None
    for rule, pattern in patterns:
        for m in pattern.finditer(text):
            if rule == "colon_line" and _INTRODUCES_OPTIONS.search(text, m.start(), text.find("\n", m.start())):
                continue  # "Let's analyze each option:\n\nA. ..." lists the options, it does not answer
            if best is None or m.start(1) > best[1].start(1):
                best = (rule, m)
    return best


def _conflict(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Span of a second, different letter offered with the statement `m`, if any."""
    letter = m.group(1)
    alt = _ALTERNATIVE.match(text, m.end())
    if alt and (alt.group(1) or alt.group(2)) != letter:
        return (m.start(1), alt.end())
    line_start = text.rfind("\n", 0, m.start(1)) + 1
    if not text[line_start:m.start(1)].strip(" \t*(#>-_"):
        nxt = _NEXT_LABEL_LINE.match(text, m.end())
        if nxt and nxt.group(1) != letter:
            return (m.start(1), nxt.end())
    return None


@register("choice.freeform", "1",
          rules=("answer_is", "answer_label", "boxed", "letter_is_answer", "answer_is_named", "is_letter",
                 "named_option", "colon_line", "option_word", "option_line", "paren_letter", "conflict", "none",
                 "truncated"),
          description="Option letter A-D from a free-form response's last answer statement; conflicts give none")
def freeform(text: str, *, finish_reason: str | None = None) -> Extraction:
    if finish_reason == "length":
        return Extraction(None, RULE_TRUNCATED)
    found = _last_statement(text, _STATEMENTS) or _last_statement(text, _WEAK_STATEMENTS)
    if found is not None:
        rule, m = found
        conflict = _conflict(text, m)
        if conflict:
            return Extraction(None, RULE_CONFLICT, conflict)
        return Extraction(m.group(1), rule, m.span(1))
    start = _closing_paragraph(text)
    cues: list[tuple[int, str, str]] = []
    for rule, pattern in (("option_word", _OPTION_WORD), ("option_line", _OPTION_LINE),
                          ("paren_letter", _PAREN_LETTER)):
        for m in pattern.finditer(text, start):
            cues.append((m.start(1), rule, m.group(1)))
    if not cues:
        return Extraction(None, RULE_NONE)
    if len({letter for _, _, letter in cues}) > 1:
        return Extraction(None, RULE_CONFLICT, (min(c[0] for c in cues), max(c[0] for c in cues) + 1))
    pos, rule, letter = max(cues)
    return Extraction(letter, rule, (pos, pos + 1))


RULE_WORDS = {
    "choice.freeform": {
        "answer_is": "the last 'the answer/option is X' statement",
        "answer_label": "the last 'Answer: X' label",
        "boxed": "the letter in the last \\boxed{X}",
        "letter_is_answer": "the last 'Option X is the correct answer' statement",
        "answer_is_named": "the last 'the answer is <option text> (Option X)' statement",
        "is_letter": "weaker statement: '... is X.' (no answer statement found)",
        "named_option": "weaker statement: '(Option X)' (no answer statement found)",
        "colon_line": "weaker statement: a line ending in ':' followed by 'X. ...'",
        "option_word": "a cue in the closing paragraph: 'Option X'",
        "option_line": "a cue in the closing paragraph: a line opening 'X. '",
        "paren_letter": "a cue in the closing paragraph: '(X)'",
        "conflict": "the deciding statement offers two letters: no clear option",
        "none": "no answer statement and no cue",
        "truncated": "cut at the output ceiling: not read",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "choice.freeform": {"answer_is": "statement", "answer_label": "statement", "boxed": "statement",
                        "letter_is_answer": "statement", "answer_is_named": "statement", "is_letter": "fallback",
                        "named_option": "fallback", "colon_line": "fallback", "option_word": "fallback",
                        "option_line": "fallback", "paren_letter": "fallback"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""

LETTERS_READ = {"choice.freeform": "ABCD"}
"""The letters each extractor here can read."""
