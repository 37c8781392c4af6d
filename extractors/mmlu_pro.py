r"""MMLU-Pro answer extractors: the official cascade, its later "X" variant, and lm-eval's filter.

mmlu_pro.official@f418b11
    Source: TIGER-AI-Lab/MMLU-Pro at commit f418b116db00b065c2aea046518d8fcf74d39872,
    `evaluate_from_api.py` and `evaluate_from_local.py` (`extract_answer` -> `extract_again`
    -> `extract_final`) and `compute_accuracy.py` (level `l2`, same three steps):

    L1  `re.search(r"answer is \(?([A-J])\)?", text)`: the first match; case-sensitive.
    L2  `re.search(r".*[aA]nswer:\s*([A-J])", text)` without DOTALL. `.` stops at "\n",
        so the search fails line by line and succeeds on the EARLIEST line holding an
        `[aA]nswer:` followed by a letter; the greedy `.*` then backtracks from that
        line's end, so the LAST `answer:` on that line wins. `\s*` is not limited by
        lines: `Answer:\n\nB` reads B from a later line.
    L3  `re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)`: the last standalone
        capital A-J anywhere (`\b` is Unicode-aware: `é` and `中` are word characters).
    else None (upstream then scores a guess among the item's options: see the no_answer policies).
    Spans (here and in official_x): L1 the whole `answer is (X)` match, L2 and L3 the letter.

    Here the same three steps run in linear time: L2 visits each `[aA]nswer:` once
    instead of re-running `.*` from every position of a line (quadratic in a line's
    length), and L3 searches backwards for the last candidate instead of checking, for
    every candidate, that no other follows (quadratic in the text after the first one).
    It returns the same letter as the literal cascade on every text; the test suite
    and `benchmarks/bench_extractors.py` compare them.

    Known traps of the upstream behaviour, kept on purpose (this version reproduces it):
    - `the answer is (b)` gives nothing at L1 (case-sensitive); then L2/L3 decide.
    - L3 reads any standalone capital: "... that's all right. I" gives I; "Option A is
      wrong" late in the text gives A.
    - `Answer: **B**` fails L2 (`*` is not whitespace) and falls to L3.
      `evaluate_from_api.py` removes every `**` from a response before extracting and
      stores that stripped text; `evaluate_from_local.py` does not. Feed the text the
      runner stored.
    - Letters beyond an item's option count (e.g. J on a 4-option item) are returned;
      upstream compares `pred == answer`, so they are simply wrong. Grading decides.
    - A null pred is scored upstream as `random.randint(0, len(options) - 1) ==
      answer_index` (seed 12345, set again before each draw at 964a136), not as wrong.

mmlu_pro.official_x@7535b16
    Source: TIGER-AI-Lab/MMLU-Pro `evaluate_from_apiX.py` at commit
    7535b160628b2ea6efb306f1817b4ecb3e76b7c7 (the commit that introduced this
    extractor; unchanged up to f418b11). For each of `answer is \(?([A-J])\)?`,
    `[aA]nswer:\s*([A-J])`, `\b[A-J]\b` in turn, `re.findall` and the LAST match.
    Traps: the last "answer is X" wins, so a restated option late in the text beats the
    conclusion; findall's matches do not overlap, so in `answer: Answer: B` the first
    `answer:` consumes the A of `Answer` and the result is A. That script also retries a
    question whose extracted letter is wrong (`--retry-wrong`), which no extractor can undo.

mmlu_pro.statements@1
    Source: audit. The official cascade's answer statements only: L1 and L2 exactly as
    mmlu_pro.official@f418b11 reads them, and no L3. The `mmlu_pro_strict` spec grades with it,
    so a figure's sensitivity to the L3 fallback (a letter from "A decrease", "B-cells", "65°C")
    is one diff away: every row it leaves unread is a row the official figure credits or
    blames on a fallback read.

mmlu_pro.options@1
    Source: audit. The official cascade (L1, L2, L3 as mmlu_pro.official@f418b11 runs them) over
    the item's own letters: A up to its last option (A-L for MMLU-Pro+, whose items, lm-eval's
    `mmlu_pro_plus`, have up to twelve); A-J when the count is unknown. The official versions read
    A-J only: "both D and J are correct. The answer is (K)." reads J there (L3), K here; grading
    refuses them on an item with more than ten options (an `error` row, never a silent wrong).

mmlu_pro.options@2
    Source: audit. mmlu_pro.options@1 without its A-J fallback: an item that records no option count is not
    read at all (rule `no_options`), and grading makes the row an `error` naming the cause. @1 read such an
    item over A-J, so on an MMLU-Pro+ item imported without its options "The answer is (K)" read J (L3) and
    "(L)" nothing, every such row a silent `incorrect` (issue 31: 2/9 where lm-eval logged 6/9).

mmlu_pro.lmeval@325f168
    Source: EleutherAI/lm-evaluation-harness `lm_eval/tasks/mmlu_pro/_default_template_yaml`,
    filter `custom-extract` as fixed at commit 325f168cf0877deb08397f5390a3cf25449709eb
    (before it, the YAML held the pattern with a stray `r"..."` inside the string and
    matched nothing); unchanged up to 4e7e0d4. `regex` filter with
    `answer is \(?([ABCDEFGHIJ])\)?`, `group_select: 0` (the first match), no ignore_case,
    then `take_first` (first of the repeated samples, not of the matches). No fallback
    step: lm-eval returns the string "[invalid]" when nothing matches; here the answer is
    None with rule `none`. Its metric `exact_match` sets ignore_case and
    ignore_punctuation; generation stops at "Question:".
"""

from __future__ import annotations

import re

from audit.extractors import RULE_NO_OPTIONS, RULE_NONE, Extraction, register
from audit.extractors._scan import last_match, last_of

SOURCE_OFFICIAL = ("TIGER-AI-Lab/MMLU-Pro evaluate_from_api.py, evaluate_from_local.py, compute_accuracy.py "
                   "@ f418b116db00b065c2aea046518d8fcf74d39872")
SOURCE_OFFICIAL_X = "TIGER-AI-Lab/MMLU-Pro evaluate_from_apiX.py @ 7535b160628b2ea6efb306f1817b4ecb3e76b7c7"
SOURCE_LMEVAL = ("EleutherAI/lm-evaluation-harness lm_eval/tasks/mmlu_pro/_default_template_yaml "
                 "@ 325f168cf0877deb08397f5390a3cf25449709eb")

_ANSWER_IS = re.compile(r"answer is \(?([A-J])\)?")
_LETTER_AFTER_COLON = re.compile(r"\s*([A-J])")
_ANSWER_COLON_LETTER = re.compile(r"[aA]nswer:\s*([A-J])")
_STANDALONE_LETTER = re.compile(r"\b[A-J]\b")
_LMEVAL_ANSWER_IS = re.compile(r"answer is \(?([ABCDEFGHIJ])\)?")


def _official_l2(text: str) -> tuple[int, int] | None:
    """Span of the letter that `re.search(r'.*[aA]nswer:\\s*([A-J])', text)` captures."""
    line_end = -1
    found = None
    # str.find skips ahead much faster than a regex scan for `[aA]nswer:`.
    i = text.find("nswer:", 1)
    while i >= 0:
        key = i - 1
        if line_end >= 0 and key >= line_end:
            break  # past the first line with a match: its last match stands
        if text[key] in "aA":
            tail = _LETTER_AFTER_COLON.match(text, i + 6)
            if tail is not None:
                if line_end < 0:
                    nl = text.find("\n", key)
                    line_end = len(text) if nl < 0 else nl
                found = tail.span(1)
        i = text.find("nswer:", i + 6)
    return found


@register("mmlu_pro.official", "f418b11", rules=("L1", "L2", "L3", "none"),
          source=SOURCE_OFFICIAL,
          description="MMLU-Pro official cascade: 'answer is (X)', then 'Answer: X', then the last standalone A-J")
def official(text: str, *, finish_reason: str | None = None) -> Extraction:
    # finish_reason is ignored: upstream extracts from cut responses too.
    m = _ANSWER_IS.search(text)
    if m:
        return Extraction(m.group(1), "L1", m.span())
    span = _official_l2(text)
    if span:
        return Extraction(text[span[0]:span[1]], "L2", span)
    m = last_match(_STANDALONE_LETTER, text)
    if m:
        return Extraction(m.group(0), "L3", m.span())
    return Extraction(None, RULE_NONE)


@register("mmlu_pro.official_x", "7535b16", rules=("L1", "L2", "L3", "none"),
          source=SOURCE_OFFICIAL_X,
          description="MMLU-Pro evaluate_from_apiX.py: last 'answer is (X)', else last 'Answer: X', else last A-J")
def official_x(text: str, *, finish_reason: str | None = None) -> Extraction:
    # findall + [-1]: non-overlapping matches from the start, so scan forwards.
    m = last_of(_ANSWER_IS.finditer(text))
    if m:
        return Extraction(m.group(1), "L1", m.span())
    m = last_of(_ANSWER_COLON_LETTER.finditer(text))
    if m:
        return Extraction(m.group(1), "L2", m.span(1))
    m = last_match(_STANDALONE_LETTER, text)
    if m:
        return Extraction(m.group(0), "L3", m.span())
    return Extraction(None, RULE_NONE)


@register("mmlu_pro.statements", "1", rules=("L1", "L2", "none"),
          description="MMLU-Pro answer statements only: the official 'answer is (X)', then 'Answer: X'; no fallback")
def statements(text: str, *, finish_reason: str | None = None) -> Extraction:
    # The official cascade without L3: a letter the response never states as its answer is not read.
    read = official(text)
    return Extraction(None, RULE_NONE) if read.rule == "L3" else read


def _item_patterns(options: int | None) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The official cascade's three patterns over the item's own letters (A-J when the count is unknown)."""
    n = options if options is not None and 1 <= options <= 26 else 10
    return _PATTERNS[n - 1]


_PATTERNS = [(re.compile(rf"answer is \(?([A-{chr(64 + n)}])\)?"), re.compile(rf"\s*([A-{chr(64 + n)}])"),
              re.compile(rf"\b[A-{chr(64 + n)}]\b")) for n in range(1, 27)]


def _l2_letters(text: str, after: re.Pattern[str]) -> tuple[int, int] | None:
    """`_official_l2` with another letter class after `[aA]nswer:` (same scan, same choice of line)."""
    line_end = -1
    found = None
    i = text.find("nswer:", 1)
    while i >= 0:
        key = i - 1
        if line_end >= 0 and key >= line_end:
            break
        if text[key] in "aA":
            tail = after.match(text, i + 6)
            if tail is not None:
                if line_end < 0:
                    nl = text.find("\n", key)
                    line_end = len(text) if nl < 0 else nl
                found = tail.span(1)
        i = text.find("nswer:", i + 6)
    return found


@register("mmlu_pro.options", "1", rules=("L1", "L2", "L3", "none"), takes_options=True,
          description="MMLU-Pro's official cascade over the item's own letters (A-L for MMLU-Pro+'s twelve options)")
def item_options(text: str, *, finish_reason: str | None = None, options: int | None = None) -> Extraction:
    # The official three steps; only the letter class differs: A up to the item's last option.
    answer_is, after_colon, standalone = _item_patterns(options)
    m = answer_is.search(text)
    if m:
        return Extraction(m.group(1), "L1", m.span())
    span = _l2_letters(text, after_colon)
    if span:
        return Extraction(text[span[0]:span[1]], "L2", span)
    m = last_match(standalone, text)
    if m:
        return Extraction(m.group(0), "L3", m.span())
    return Extraction(None, RULE_NONE)


@register("mmlu_pro.options", "2", rules=("L1", "L2", "L3", "none", RULE_NO_OPTIONS), takes_options=True,
          description="MMLU-Pro's official cascade over the item's own letters; an item without an option count is "
                      "not read (no A-J fallback)")
def item_options_known(text: str, *, finish_reason: str | None = None, options: int | None = None) -> Extraction:
    # @1 exactly where the item's option count is known; without it, no letter class can be right.
    if options is None:
        return Extraction(None, RULE_NO_OPTIONS)
    return item_options(text, finish_reason=finish_reason, options=options)


@register("mmlu_pro.lmeval", "325f168", rules=("answer_is", "none"),
          source=SOURCE_LMEVAL,
          description="lm-evaluation-harness mmlu_pro filter: first 'answer is (X)', no fallback")
def lmeval(text: str, *, finish_reason: str | None = None) -> Extraction:
    m = _LMEVAL_ANSWER_IS.search(text)
    if m:
        return Extraction(m.group(1), "answer_is", m.span())
    return Extraction(None, RULE_NONE)


RULE_WORDS = {
    "mmlu_pro.official": {
        "L1": "the first 'answer is (X)' (case-sensitive)",
        "L2": "'Answer: X' on the first line that has one (the last on that line)",
        "L3": "fallback: the last standalone capital A-J anywhere in the text",
        "none": "no letter found (upstream then scores a seeded random guess)",
    },
    "mmlu_pro.official_x": {
        "L1": "the last 'answer is (X)' (case-sensitive)",
        "L2": "the last 'Answer: X'",
        "L3": "fallback: the last standalone capital A-J anywhere in the text",
        "none": "no letter found",
    },
    "mmlu_pro.options": {
        "L1": "the first 'answer is (X)' over the item's letters (case-sensitive)",
        "L2": "'Answer: X' over the item's letters, on the first line that has one (the last on that line)",
        "L3": "fallback: the last standalone capital among the item's letters anywhere in the text",
        "none": "no letter of the item's options found",
        "no_options": "the item records no option count: not read (its letters are unknown; import its options)",
    },
    "mmlu_pro.statements": {
        "L1": "the first 'answer is (X)' (case-sensitive; the official L1)",
        "L2": "'Answer: X' on the first line that has one (the official L2)",
        "none": "no answer statement (the official L3 fallback is not run)",
    },
    "mmlu_pro.lmeval": {
        "answer_is": "the first 'answer is (X)' (lm-eval's custom-extract filter)",
        "none": "no 'answer is (X)' (lm-eval logs [invalid])",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "mmlu_pro.official": {"L1": "statement", "L2": "statement", "L3": "fallback"},
    "mmlu_pro.official_x": {"L1": "statement", "L2": "statement", "L3": "fallback"},
    "mmlu_pro.statements": {"L1": "statement", "L2": "statement"},
    "mmlu_pro.options": {"L1": "statement", "L2": "statement", "L3": "fallback"},
    "mmlu_pro.lmeval": {"answer_is": "statement"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""

LETTERS_READ = {name: "ABCDEFGHIJ" for name in RULE_STRENGTH if name != "mmlu_pro.options"}
"""The letters each extractor here can read: MMLU-Pro's ten options (a K or L option is never read);
mmlu_pro.options reads as many as the item has."""
