r"""The final answer of a free-form math response: boxes, "final answer is" statements, math, numbers.

math.final@1
    Source: audit (our own), after studying what Math-Verify 0.9.0 (huggingface/Math-Verify,
    `math_verify/parser.py`, Apache-2.0) extracts: boxed content first, then "final answer is"
    statements, then LaTeX environments, then plain numbers, with environments joined by
    "and"/"or"/commas. Reimplemented from its behaviour and its published tests, not its code;
    where it reads something we consider unsafe we differ (listed under Traps). Revised before its
    first release after an adversarial review (2026-12-01): a hedged statement, or a number that is
    not plainly the answer, now gives no answer; a false rejection is better than a false credit.
    Rules, first that fires wins:
    1. The last `\boxed{…}` / `\fbox{…}` (balanced braces, as boxed@1), rules `boxed`, `fbox`,
       `boxed_unbraced`, `fbox_unbraced`. When the boxes before it are joined to it only by
       punctuation and at most `max_join_words` words ending in "and"/"or" (`\boxed{1} and
       \boxed{-2}`, `\boxed{(2,2)} \quad\text{and}\quad \boxed{(6,2)}`, `\boxed{1},\boxed{2}`), the
       answer is all of them, joined by ", " (or `\text{ or }` after an "or"), rule `boxes`.
       A last box that never closes gives no answer (`unclosed`: a cut response, no earlier box
       is used); `\boxed` with no argument `malformed_box`. An empty box, or one restating the
       instructions (`\boxed{}`, `\boxed{answer}`, `\boxed{...}`), holds no answer: rules 2-4 read
       the text after it ("…answer in \boxed{}. The answer is 5."), else `empty_box`.
       Unescaped `$` inside a box are dropped (`\boxed{12 $ and $13}`); a joined part repeated word
       for word counts once (a restated box); a `label =` right before a joined box stays with its
       value (`y_1 = \boxed{…} and y_2 = \boxed{…}`). After the last box, a "final answer" statement
       (rule 2) replaces it, and so does "the answer is X" (rule 3) when X is plainly one value and
       the sentence names no condition or part ("\boxed{5}. Wait, that is wrong; …, the answer is 6.";
       not "if the answer is 6", "for part (b), the answer is 7").
    2. No box: the last "final answer" statement, rule `final_answer`: "The final answer is
       $X$", "Final Answer: X", "Final Answer: The volume of $V$ is X" (the first " is " within
       `statement_window` characters and the same sentence unless a value or math follows the anchor
       directly, else the text after a colon or `=`, or a value right after the anchor; a hedge before
       that " is " makes it `hedged`; "answer, not 5" states nothing, nor does a sentence with a
       condition before the anchor: "if the answer is 5, …", "If n is even, the answer is 5"). X is
       the math environment that starts there (joined as in 1), or the plain text up to the
       sentence's end:
       - a list of numbers ("5, 6, 7", "2 or 3", "x = 2 or x = 3") is the answer, whole;
       - a hedge or condition ("2 or 3, depending on the case", "12 if n is even and 13 otherwise",
         "5, but it might be 6", also after a math environment) gives no answer, rule `hedged`;
       - a range ("5 to 10") gives none, rule `several_values`;
       - text of at most `max_statement_words` words is the answer;
       - longer prose gives its one value ("Jane started growing Sphere 3 hours ago"), or none when it
         names several (`several_values`);
       - a next sentence that starts as a hedge ("The answer is 5. Or maybe 6.", "… But …") makes it
         `hedged`.
    3. The same after the last "answer" ("The answer is X", "Answer: X"), rule `answer_is`; also
       "X is the answer" with X a number or the math right before it (", not 5" after it is no hedge).
    4. The last number of the last non-empty line, after the last math environment, rule
       `last_number`, when it plainly is the answer; else no answer, rule `unsure_number`. A number is
       a whole token: `-5`, `1,000.99`, `2/3`, `.4`, `1 000`, `\frac{10}{9}`, a power `2^5`,
       `3 \cdot 10^4`, a ratio or time `3:5`, `4:30`; never a piece of one (`cm^2`, `a_{12}`,
       `\sqrt{2}`) nor a reference (`step 2`, `problem 5`, `#5`), which are no value. It is plainly the
       answer when only units, punctuation, a remark in parentheses ("(see step 2)") or the end of the
       response (`<|im_start|>`, "I hope…") follow it (at most `max_unit_words` words, none a hedge or
       joining word, the last not "of"/"the"… of a cut sentence), or it is the one number of a
       concluding sentence that ends the response ("Therefore, there are 12 distinct sequences that
       meet the conditions."); no operator or joining word precedes it (`3^2 + 1`, `5 or 6`), no
       condition starts its sentence ("If n is even, x = 5"), and a value before it on the line
       leads to it through `=`, a copula ("is", "gives") or a sentence end (`2 h 30 min`,
       `3 x 10^4` are one quantity, `5, 6` two values). A last line with only pieces of numbers
       (`x^2`, `a_{12}`, a cut `\frac{1`) is `unsure_number` too; one with only references goes on to 5.
    5. The last math environment `$…$`, `$$…$$`, `\(…\)`, `\[…\]` (inline ones on one line; `\$` is
       a dollar sign, not a delimiter), rule `math_env`; several joined as in 1, `math_envs`.
    6. Nothing: `none`.
    The span is that of the answer in the text; for joined answers, from the first part's start
    to the last part's end (each part lies inside it); for a refusal, the refused text.
    Traps: a box in a restated problem or a worked example late in the text wins (as in boxed@1);
    a last `$…$` that is a check rather than the answer (`$5^2 = 25$`) is read as the answer when
    no box or statement exists; a decimal comma (`1000,99`) is not a decimal; a hedge further on than
    the next sentence is not seen by rule 2; the hedge and unit words are English. Differences from Math-Verify on
    purpose: boxes far apart are not joined (`\boxed{1} no no no no no \boxed{2}` gives 2, as there),
    an unclosed box is never read, the first box never beats the last, a hedged or multi-valued
    statement never gives its first value, a last-line number is read only where it ends the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from audit.extractors import RULE_NONE, Extraction, register
from audit.extractors._scan import last_of
from audit.extractors.boxed import RULE_EMPTY, _last_box, _strip_span


@dataclass(frozen=True)
class MathFinalConfig:
    """Everything that changes what math.final reads besides code; part of the fingerprint."""

    max_join_words: int = 4
    """Most words between two boxes or environments joined into one answer (the last one "and"/"or")."""
    max_parts: int = 12
    """Most boxes or environments joined into one answer."""
    statement_window: int = 100
    """Characters after "final answer" within which its " is " is looked for."""
    max_statement_words: int = 6
    """A plain-text statement answer with more words is prose: only its one value is read."""
    max_unit_words: int = 3
    """Most words (units: `cm^2`, `p.m.`, `square units`) after a last-line number still read as the answer."""


CONFIG = MathFinalConfig()

RULE_BOXES = "boxes"
RULE_FINAL_ANSWER = "final_answer"
RULE_ANSWER_IS = "answer_is"
RULE_HEDGED = "hedged"
RULE_SEVERAL = "several_values"
RULE_MATH_ENV = "math_env"
RULE_MATH_ENVS = "math_envs"
RULE_LAST_NUMBER = "last_number"
RULE_UNSURE_NUMBER = "unsure_number"

_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")
_JOIN_NOISE = re.compile(r"\\text\s*\{|\\mbox\s*\{|\\textbf\s*\{|\\q?quad|\\[,;:! ]|\\\\|\\[()\[\]]|[${}&*~]")
_WORD = re.compile(r"[A-Za-z]+")
_NOT_A_JOIN = re.compile(r"[0-9=<>]|\\[A-Za-z]+")
_FINAL_ANCHOR = re.compile(r"(?i)\bfinal\s+answer\b")
_ANSWER_ANCHOR = re.compile(r"(?i)\banswer\b")
_IS = re.compile(r"(?i)\bis\b")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")
_LEAD = re.compile(r"(?:[\s*:=_#>\"'`]|\\\")*")
"""Markup, colons and quotes between a statement and its answer (`is: **"$5$"**`)."""
_PLACEHOLDER = re.compile(
    r"(?i)(?:\\text(?:bf)?\s*\{\s*)?(?:(?:your|the|final|correct)\s+)*answer(?:\s+here)?(?:\s*\})?"
    r"|\.\.\.|…|\\[lc]?dots|\?+")
"""A box restating the instructions (`\\boxed{answer}`, `\\boxed{...}`): no answer."""
_LABEL_BEFORE = re.compile(r"(?:[A-Za-z]{1,3}(?:_\{?[A-Za-z0-9]{1,3}\}?)?|\([A-Za-z, ]{1,20}\))\s*=\s*$")
"""`y_2 = ` right before a box: the part's label (`y_1 = \\boxed{…} and y_2 = \\boxed{…}`)."""

_PLAIN_NUMBER = r"(?:-?\\[dt]?frac\{\d+\}\{\d+\}|-?(?:\d+(?:(?:[.,]|[ ](?=\d{3}(?!\d)))\d+)*|\.\d+)(?:/\d+)?)"
_TOKEN = re.compile(
    r"(?<![A-Za-z0-9.\\])(?:"
    r"-?\d+(?:\.\d+)?\s*(?:\\times|\\cdot|×)\s*10\s*\^\s*(?:\{\s*-?\d+\s*\}|-?\d+)"  # 3 \cdot 10^4
    r"|\d+(?::\d+|\s:\s\d+)+"  # 3:5, 4:30
    r"|-?\d+(?:\.\d+)?\^(?:\{(?!\s*\\circ)[^{}]{1,20}\}|\d+)"  # 2^5, 10^{4}
    r"|" + _PLAIN_NUMBER + r")(?!\d)(?![.,]\d)")
"""A whole number token: `-5`, `1,000.99`, `.4`, `2/3`, `1 000`, `\\frac{10}{9}`, `2^5`, `3 \\cdot 10^4`, `3:5`;
units may follow (`100m`), letters may not precede (`AZYUK2A` holds none)."""
_ITEM = r"(?:[A-Za-z](?:_\{?\w{1,3}\}?)?\s*=\s*)?-?(?:\d+(?:\.\d+)?(?:/\d+)?|\\[dt]?frac\{-?\d+\}\{\d+\}|\.\d+)"
_LIST = re.compile(_ITEM + r"(?:(?:\s*[,;]\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+)" + _ITEM + r")+", re.I)
"""A plain list of values: `5, 6, 7`, `2 or 3`, `x = 2 or x = 3`."""
_RANGE = re.compile(r"\d\s*(?:to|through|until)\s+-?\.?\d", re.I)
_LAST_WORD = re.compile(r"([A-Za-z]+)\.?\s*$")

_REFERENCE_WORDS = frozenset((
    "step steps part parts problem problems question exercise equation eq eqn line case figure fig page section "
    "chapter example item lemma theorem method approach hint condition").split())
"""A number right after these names a place in the text, not a value (`step 2`, `problem 5`)."""
_HEDGE_WORDS = frozenset((
    "if unless otherwise depending depends depend whether assuming provided maybe perhaps possibly probably likely "
    "unlikely might could may either unsure uncertain confident guess but also or nor not except between").split())
"""Words that make a stated value conditional, hedged, or one of several."""
_JOIN_WORDS = _HEDGE_WORDS | frozenset("and to than plus minus times over from".split())
"""A number right after these is not the answer on its own (`5 or 6`, `3 plus 4`, `from 5 to 10`)."""
_TAIL_BLOCK = _JOIN_WORDS | _REFERENCE_WORDS | {"pi"}
"""Words after a number that are no unit (`5 for part 1`, `5 or so`, `3 pi`)."""
_GLUED_UNITS = frozenset(
    "m cm mm km μm kg g mg s ms min h hr hrs ft in yd mi lb lbs oz mph L mL ml K st nd rd th".split())
"""Letters right after a number that are a unit (`100m`, `5kg`) or an ordinal (`3rd`); others make a product."""
_UNIT_BASE = re.compile(r"[A-Za-zμ]+")
_UNIT_LETTERS = frozenset("m s g h L K A V W J N C F".split())
"""A lone letter after a number is a unit only if it is one of these (`5 m`, not `5 x`)."""
_UNFINISHED = frozenset("of the a an for with in on at by from into per".split())
"""A sentence ending in these is cut, not finished."""
_CONDITION_WORDS = frozenset("if unless whether assuming provided suppose supposing".split())
"""Before a statement or a number in its sentence, these make it hypothetical ("if the answer is 5", "If n is
even, x = 5")."""
_NEXT_HEDGE = re.compile(r"[.!?\s*]*(?:or|but|maybe|perhaps|possibly|alternatively|otherwise|unless|actually|wait|"
                         r"however|hmm|correction)\b", re.I)
"""A sentence after a statement that starts so hedges it."""
_BENIGN_NOT = re.compile(r"[,;]\s*(?:and\s+)?not\s+[^\s,;.]+\s*[.!]?\s*$", re.I)
"""A final ", not 5" that only rules out another value."""
_OPERATOR_END = re.compile(
    r"(?:[-+*/^_{(\[|<>~≤≥≈≠×÷·−–±∓√]|\\(?!(?:q?quad|therefore|Rightarrow|Longrightarrow|implies)\b)[A-Za-z]+)$")
_SENTENCE_CROSS = re.compile(r"[.!?](?:[\s$*)\]}]|$)")
_COPULA = re.compile(r"[=:]|\b(?:is|are|was|were|be|equals?|gives?|get|gets|got|becomes?|yields?|makes?|obtain|"
                     r"obtained|totals?|remains?|it'?s)\b|\\Rightarrow|\\implies|⇒|→", re.I)
_CONCLUSION = re.compile(r"\W*(?:so|thus|therefore|hence|finally|overall|altogether|consequently|"
                         r"in\s+(?:total|conclusion|all|summary))\b", re.I)
"""How a concluding sentence starts."""
_REVERSE_LEAD = re.compile(r"\s+is\s+(?:(?:the|our|my|final|correct)\s+)*$", re.I)
"""Between X and "answer" in "X is the final answer"."""
_TAIL_END = re.compile(r"<\||\bI hope\b")
"""The end of a response: a chat template's token (`<|im_start|>user`), "I hope it is correct"."""
_TAIL_PIECE = re.compile(r"""
    \s+
  | [.,;:!)\]}*"'`~]+
  | \\[$%] | [$%°€£¥]
  | \^\s*\\circ | \^\s*\{\s*\\circ\s*\} | \\circ | \\degree
  | \\(?:[,;! ]|q?quad\b)
  | \\(?:text|mathrm|mbox|textbf|rm)\s*\{(?P<text>[A-Za-z .]*)\}(?:\^\s*(?:\d|\{\d+\}))?
  | (?P<word>(?:[kcmμ]?m|ft|in|yd|mi|s|sec)(?:\^\s*(?:[23]|\{[23]\})|[²³])(?![A-Za-z])
            | [A-Za-z]+\.?(?:/[A-Za-z]+)?)
  | \((?P<remark>[^()\d]*)\)
""", re.X)
"""What may follow a last-line number: units (a power only of a unit of length or time: `cm^2`, `s^2`; `mv^2`
is no unit), punctuation, a remark in parentheses without numbers."""


def _clean(part: str) -> str:
    return _UNESCAPED_DOLLAR.sub(" ", part).strip()


def _connector(between: str, config: MathFinalConfig) -> str | None:
    """`and`/`or` when `between` only joins two parts (punctuation, at most a few words ending in
    "and"/"or"), else None."""
    bare = _JOIN_NOISE.sub(" ", between)
    if _NOT_A_JOIN.search(bare):
        return None
    words = _WORD.findall(bare)
    if not words:
        return "and"
    if len(words) <= config.max_join_words and words[-1].lower() in ("and", "or"):
        return words[-1].lower()
    return None


def _join(parts: list[tuple[str, int, int]], connectors: list[str]) -> tuple[str, tuple[int, int]]:
    """The parts joined by ", " (`\\text{ or }` after an "or"); a part repeated word for word counts once
    (`\\(\\boxed{6}\\) … \\[\\boxed{6}\\]` restates one answer)."""
    out = parts[0][0]
    seen = {out}
    for (text, _, _), conn in zip(parts[1:], connectors):
        if text not in seen:
            out += (r" \text{ or } " if conn == "or" else ", ") + text
            seen.add(text)
    return out, (parts[0][1], parts[-1][2])


# --------------------------------------------------------------------------- boxes


def _box_start(text: str, content_start: int) -> int:
    return max(text.rfind("\\boxed", 0, content_start), text.rfind("\\fbox", 0, content_start))


def _boxes(text: str, config: MathFinalConfig) -> Extraction | None:
    rule, start, end = _last_box(text)
    if start is None or end is None:
        return None if rule == RULE_NONE else Extraction(None, rule)
    content = _clean(text[start:end])
    if not content or _PLACEHOLDER.fullmatch(content):
        return Extraction(None, RULE_EMPTY, (start, end))
    chain = [(content, start, end, _box_start(text, start))]  # (content, start, end, command start)
    floors = [0]  # where the text before each box's command may begin (the previous box's end)
    connectors: list[str] = []
    while len(chain) < config.max_parts:
        cmd = chain[0][3]
        prev_rule, ps, pe = _last_box(text[:cmd])
        if ps is None or pe is None:
            break
        close = pe + 1 if prev_rule in ("boxed", "fbox") else pe
        label = _LABEL_BEFORE.search(text, close, cmd)
        conn = _connector(text[close: label.start() if label else cmd], config)
        part = _clean(text[ps:pe])
        if conn is None or not part:
            break
        floors[0] = close
        chain.insert(0, (part, ps, pe, _box_start(text, ps)))
        floors.insert(0, max(0, chain[0][3] - 40))
        connectors.insert(0, conn)
    if len(chain) == 1:
        return Extraction(content, rule, _strip_span(text, start, end))
    parts = []
    for (part, ps, pe, cmd), floor in zip(chain, floors):
        label = _LABEL_BEFORE.search(text, floor, cmd)
        if label:  # `y_2 = \boxed{…}`: the label belongs to the part
            name = label.group(0).rstrip().rstrip("=").strip()
            parts.append((f"{name} = {part}", label.start(), pe))
        else:
            parts.append((part, ps, pe))
    answer, span = _join(parts, connectors)
    return Extraction(answer, RULE_BOXES, span)


# --------------------------------------------------------------------------- math environments


def _math_envs(text: str) -> list[tuple[int, int, int, int]]:
    """(open, content start, content end, close end) of every math environment, in order."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            nxt = text[i + 1: i + 2]
            if nxt in ("(", "["):
                close = r"\)" if nxt == "(" else r"\]"
                j = text.find(close, i + 2)
                if j >= 0 and not (nxt == "(" and "\n" in text[i + 2: j]):
                    out.append((i, i + 2, j, j + 2))
                    i = j + 2
                    continue
            i += 2  # `\$`, `\\`, any other escape
            continue
        if c == "$":
            display = text.startswith("$$", i)
            j = i + (2 if display else 1)
            while j < n:
                if text[j] == "\\":
                    j += 2
                    continue
                if text[j] == "$" or (not display and text[j] == "\n"):
                    break
                j += 1
            if display and text.startswith("$$", j):
                out.append((i, i + 2, j, j + 2))
                i = j + 2
                continue
            if not display and j < n and text[j] == "$" and j > i + 1:
                out.append((i, i + 1, j, j + 1))
                i = j + 1
                continue
            i += 2 if display else 1
            continue
        i += 1
    return out


def _env_answer(text: str, envs: list[tuple[int, int, int, int]], last: int, forward: bool,
                config: MathFinalConfig) -> tuple[str, tuple[int, int], bool] | None:
    """The answer from environment `last`, joined with its neighbours (backwards, or forwards from a
    statement); (answer, span, joined) or None when it is empty."""
    _, cs, ce, _ = envs[last]
    first = _clean(text[cs:ce])
    if not first:
        return None
    parts = [(first, cs, ce)]
    connectors: list[str] = []
    k = last
    while len(parts) < config.max_parts:
        k2 = k + 1 if forward else k - 1
        if not 0 <= k2 < len(envs):
            break
        a, b = (envs[k], envs[k2]) if forward else (envs[k2], envs[k])
        conn = _connector(text[a[3]:b[0]], config)
        part = _clean(text[envs[k2][1]:envs[k2][2]])
        if conn is None or not part:
            break
        if forward:
            parts.append((part, envs[k2][1], envs[k2][2]))
            connectors.append(conn)
        else:
            parts.insert(0, (part, envs[k2][1], envs[k2][2]))
            connectors.insert(0, conn)
        k = k2
    if len(parts) == 1:
        return first, _strip_span(text, cs, ce), False
    answer, span = _join(parts, connectors)
    return answer, span, True


# --------------------------------------------------------------------------- values: whole number tokens


def _words(s: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(s)]


def _tokens(text: str, start: int, end: int) -> list[tuple[re.Match, str]]:
    """Every number token of text[start:end] and its kind: `value`, `piece` (of a subscript, a power or an
    argument: `a_{12}`, `x_1`, `cm^2`, `\\sqrt{2}`, a cut `\\frac{1`) or `reference` (`step 2`, `problem 5`,
    `#5`: no value)."""
    out = []
    for m in _TOKEN.finditer(text, start, end):
        before = text[max(0, m.start() - 40): m.start()]
        bare = before.rstrip()
        word = _LAST_WORD.search(bare)
        if before.endswith("#") or (word is not None and word.group(1).lower() in _REFERENCE_WORDS):
            out.append((m, "reference"))
        elif bare.endswith("{") or before.endswith(("^", "_")):
            out.append((m, "piece"))
        else:
            out.append((m, "value"))
    return out


def _value_tokens(text: str, start: int, end: int) -> list[re.Match]:
    return [m for m, kind in _tokens(text, start, end) if kind == "value"]


def _without_references(text: str, start: int, end: int) -> str:
    """text[start:end] with its reference numbers (`step 2`) dropped."""
    out, at = [], start
    for m, kind in _tokens(text, start, end):
        if kind == "reference":
            out.append(text[at:m.start()])
            at = m.end()
    out.append(text[at:end])
    return "".join(out)


def _hedged(phrase: str) -> bool:
    """A hedge or condition word ("if", "otherwise", "maybe", "or", "but", "not"…) outside a final
    `, not X` that only rules out another value."""
    return bool(set(_words(_BENIGN_NOT.sub("", phrase))) & _HEDGE_WORDS)


def _plain_tail(tail: str, config: MathFinalConfig) -> bool:
    """True when what follows a number is only units and punctuation (`cm^2.`, `\\text{ p.m.}`, `%`), a remark
    in parentheses (`(see step )`, `(double root)`), or the end of the response (`<|im_start|>…`, "I hope…")."""
    tail = _TAIL_END.split(tail, maxsplit=1)[0]
    if tail.startswith("!"):  # 5! is 120
        return False
    words: list[str] = []
    at = 0
    while at < len(tail):
        m = _TAIL_PIECE.match(tail, at)
        if m is None:
            return False
        if m.group("remark") is not None:
            if set(_words(m.group("remark"))) & _HEDGE_WORDS:
                return False
        elif m.group("word") is not None:
            base = _UNIT_BASE.match(m.group("word")).group(0)
            if at == 0 and base not in _GLUED_UNITS:  # 2n, 5i, 3x: a product, not a unit
                return False
            if len(base) == 1 and not m.group("word").endswith(".") and base not in _UNIT_LETTERS:  # "5 x"
                return False
            words += _words(base)
        else:
            words += _words(m.group("text") or "")
        at = m.end()
    if words and words[-1] in _UNFINISHED and not tail.rstrip().endswith((".", "!")):  # cut: "20.0 g of"
        return False
    return len(words) <= config.max_unit_words and not set(words) & _TAIL_BLOCK


def _head_ok(before: str, after_value: bool) -> bool:
    """True when `before` (the text since the previous value, or the line's start) ends as an answer's lead-in:
    no operator (`3^2 + 1`), no joining or hedge word (`5 or 6`), and, after another value, a copula
    (`= `, ` is `) or a sentence end (`2 h 30 min` is one quantity, `5, 6` two values)."""
    bare = before.rstrip()
    if _OPERATOR_END.search(bare) or before.endswith("#"):
        return False
    words = _words(bare)
    if words and words[-1] in _JOIN_WORDS:
        return False
    if not after_value:
        return True
    if set(words) & _JOIN_WORDS:
        return False
    return bool(_SENTENCE_CROSS.search(before) or _COPULA.search(before))


def _concluding(text: str, start: int, number: re.Match, tail: str) -> bool:
    """True when the number's sentence starts as a conclusion ("Therefore, there are 12 distinct sequences …")
    and the prose after it, to the end of the response, holds no other number, hedge, joining word or
    reference."""
    tail = _TAIL_END.split(tail, maxsplit=1)[0]
    if not tail[:1].isspace():  # "2n", "5!", "5," : glued to the number, or another clause
        return False
    end = _SENTENCE_END.search(tail)
    said, after = (tail[:end.start()], tail[end.end():]) if end else (tail, "")
    if after.strip(" \t\n.!*\"'`") or any(c.isdigit() for c in said) or "\\" in said or "$" in said:
        return False
    if set(_words(said)) & _TAIL_BLOCK:
        return False
    return _CONCLUSION.match(text, _sentence_start(text, number.start(), start), number.start()) is not None


def _last_number(text: str, line: int, after: int, end: int, config: MathFinalConfig) -> Extraction | None:
    """The number that ends the last line text[line:end], after `after` (the last math environment's end), when
    it plainly is the answer; `unsure_number` when it is not (part of an expression, one of several, followed
    by more than units, conditional) or when only pieces of numbers (`x^2`, `a_{12}`) are there; None when
    there is no number but references."""
    tokens = [(m, kind) for m, kind in _tokens(text, line, end) if kind != "reference"]
    values = [m for m, kind in tokens if kind == "value"]
    if not values or values[-1].start() < after:
        pieces = [m for m, kind in tokens if m.start() >= after]
        return Extraction(None, RULE_UNSURE_NUMBER, pieces[-1].span()) if pieces else None
    last = values[-1]
    since = values[-2].end() if len(values) > 1 else line
    tail = _without_references(text, last.end(), end)
    sentence = text[_sentence_start(text, last.start(), line):last.start()]
    if not set(_words(sentence)) & _CONDITION_WORDS and _head_ok(text[since:last.start()], len(values) > 1) and (
            _plain_tail(tail, config) or _concluding(text, line, last, tail)):
        return Extraction(last.group(0), RULE_LAST_NUMBER, last.span())
    return Extraction(None, RULE_UNSURE_NUMBER, last.span())


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class _Stated:
    """What a statement states: an answer, or a refusal (`rule`) with the answer None."""

    answer: str | None
    span: tuple[int, int]
    rule: str | None = None
    value: bool = False
    """The answer is a value (math, a number, a list of numbers), not prose."""


def _sentence_end(text: str, at: int) -> int:
    end_m = _SENTENCE_END.search(text, at)
    end = end_m.start() if end_m else len(text)
    hope = text.find("I hope", at, end)
    return hope if hope >= 0 else end


def _lead_in(text: str, at: int) -> set[str]:
    """The words of the sentence before `at`."""
    return set(_words(text[_sentence_start(text, at):at]))


def _sentence_start(text: str, at: int, floor: int = 0) -> int:
    """Where the sentence holding `at` starts (looking back at most 200 characters, never before `floor`)."""
    floor = max(floor, at - 200, 0)
    starts = [m.end() for m in _SENTENCE_END.finditer(text, floor, at)]
    return starts[-1] if starts else floor


def _statement(text: str, m: re.Match, envs, config: MathFinalConfig) -> _Stated | None:
    """What a statement states after its anchor `m`, hedged when the next sentence starts as a hedge
    ("The answer is 5. Or maybe 6.")."""
    got = _stated_here(text, m, envs, config)
    if got is None or got.answer is None:
        return got
    stop = _sentence_end(text, got.span[1])
    following = _NEXT_HEDGE.match(text, stop)
    return _Stated(None, (got.span[0], stop), RULE_HEDGED) if following else got


def _stated_here(text: str, m: re.Match, envs, config: MathFinalConfig) -> _Stated | None:
    """What a statement states after its anchor `m` ("final answer", "answer"); None when `m` starts no
    statement ("answer, not 5", "the answer in \\boxed{}", "if the answer is 5")."""
    if _lead_in(text, m.start()) & _CONDITION_WORDS:
        return None
    at = m.end()
    window = text[at: at + config.statement_window]
    is_m = _IS.search(window)
    linked = False
    first = _LEAD.match(text, at).end()
    direct = _TOKEN.match(text, first) is not None or any(env[0] == first for env in envs)
    if is_m and not direct and not _SENTENCE_END.search(window[: is_m.start()]):  # "… The volume of $V$ is X"
        # "Final Answer: if n is even, …", not "The maximum number of points that could be … is 19"
        if set(_words(window[: is_m.start()])) & (_CONDITION_WORDS | {"maybe", "perhaps", "possibly", "probably"}):
            return _Stated(None, (first, at + is_m.start()), RULE_HEDGED)
        at += is_m.end()
        linked = True
    lead = _LEAD.match(text, at)
    linked = linked or ":" in lead.group(0) or "=" in lead.group(0)
    at = lead.end()
    for k, env in enumerate(envs):
        if env[0] == at:
            got = _env_answer(text, envs, k, True, config)
            if got is None:
                return None
            rest = text[got[1][1]: _sentence_end(text, got[1][1])]
            if _hedged(rest):  # "$12$ if $n$ is even and $13$ otherwise"
                return _Stated(None, (got[1][0], got[1][1] + len(rest)), RULE_HEDGED)
            return _Stated(got[0], got[1], value=True)
    end = _sentence_end(text, at)
    phrase = text[at:end].strip().rstrip(".*\"'`\\").strip()
    if not phrase or "\\boxed" in phrase:
        return None
    start = text.find(phrase, at)
    span = (start, start + len(phrase))
    phrase = _clean(phrase)  # `$10,455$` after currency dollars broke the pairing of delimiters
    if not phrase:
        return None
    starts_with_value = _TOKEN.match(phrase) is not None
    if not linked and not starts_with_value:
        return None
    if _LIST.fullmatch(phrase):  # "5, 6, 7" or "2 or 3": several values, all of them
        return _Stated(phrase, span, value=True)
    if _hedged(phrase):
        return _Stated(None, span, RULE_HEDGED)
    values = _value_tokens(phrase, 0, len(phrase))
    if _RANGE.search(phrase):  # "5 to 10"
        return _Stated(None, span, RULE_SEVERAL)
    if len(values) > 1 and any(not phrase[a.end():b.start()].strip() for a, b in zip(values, values[1:])):
        return _Stated(None, span, RULE_SEVERAL)  # "5 6": two values side by side
    if len(phrase.split()) <= config.max_statement_words:
        alone = starts_with_value and len(values) == 1 and values[0].end() == len(phrase)
        return _Stated(phrase, span, value=alone)
    if len(values) > 1:  # prose naming several values: which one is meant is a guess
        return _Stated(None, span, RULE_SEVERAL)
    if not values:
        return None
    value = values[0].group(0)  # prose with one value: "Jane started growing Sphere 3 hours ago"
    found = text.find(value, span[0])
    return _Stated(value, (found, found + len(value)) if found >= 0 else span, value=True)


def _reverse_statement(text: str, m: re.Match, envs, config: MathFinalConfig) -> _Stated | None:
    """"X is the (final) answer": X a number or the math right before; None when the text is not so."""
    lead_in = _REVERSE_LEAD.search(text, max(0, m.start() - 40), m.start())
    if lead_in is None or _lead_in(text, m.start()) & _CONDITION_WORDS:
        return None
    value: tuple[str, tuple[int, int]] | None = None
    for env in envs:
        if env[3] == lead_in.start() and _clean(text[env[1]:env[2]]):
            value = (_clean(text[env[1]:env[2]]), _strip_span(text, env[1], env[2]))
    if value is None:
        line = text.rfind("\n", 0, lead_in.start()) + 1
        tokens = _value_tokens(text, line, lead_in.start())
        if not tokens or tokens[-1].end() != lead_in.start():
            return None
        since = tokens[-2].end() if len(tokens) > 1 else line
        if not _head_ok(text[since:tokens[-1].start()], len(tokens) > 1):
            return None
        value = (tokens[-1].group(0), tokens[-1].span())
    rest = text[m.end(): _sentence_end(text, m.end())]
    if _hedged(rest):
        return _Stated(None, (value[1][0], m.end() + len(rest)), RULE_HEDGED)
    return _Stated(value[0], value[1], value=True)


def _unboxed(text: str, envs, config: MathFinalConfig, since: int, math_rule: bool) -> Extraction:
    """Rules 2-5 on the text after `since`: statements, the last line's number, the last math environment
    (only when `math_rule`)."""
    for anchor, rule in ((_FINAL_ANCHOR, RULE_FINAL_ANSWER), (_ANSWER_ANCHOR, RULE_ANSWER_IS)):
        m = last_of(anchor.finditer(text, since))
        got = _statement(text, m, envs, config) if m else None
        if got is None and m is not None and rule == RULE_ANSWER_IS:
            got = _reverse_statement(text, m, envs, config)
        if got is not None:
            return Extraction(got.answer, got.rule or rule, got.span)
    stripped = text.rstrip()
    line = max(stripped.rfind("\n") + 1, since)
    number = _last_number(text, line, max(envs[-1][3] if envs else 0, line), len(stripped), config)
    if number is not None:  # a number on the last line, after the last environment, is the later statement
        return number
    if math_rule and envs:
        env = _env_answer(text, envs, len(envs) - 1, False, config)
        if env is not None:
            answer, span, joined = env
            return Extraction(answer, RULE_MATH_ENVS if joined else RULE_MATH_ENV, span)
    return Extraction(None, RULE_NONE)


@register("math.final", "1", config=CONFIG,
          rules=("boxed", "fbox", "boxed_unbraced", "fbox_unbraced", "boxes", "unclosed", "malformed_box",
                 "empty_box", "final_answer", "answer_is", "hedged", "several_values", "math_env", "math_envs",
                 "last_number", "unsure_number", "none"),
          description="Final answer of a free-form math response: last box(es), a final-answer statement, "
                      "the last math environment or number")
def math_final(text: str, *, finish_reason: str | None = None, config: MathFinalConfig = CONFIG) -> Extraction:
    envs = _math_envs(text)
    boxed = _boxes(text, config)
    if boxed is None:
        return _unboxed(text, envs, config, 0, True)
    if boxed.rule == RULE_EMPTY and boxed.span is not None:
        # "put the answer in \boxed{}": an empty box is no answer, and hides no explicit one after it
        later = _unboxed(text, envs, config, boxed.span[1], False)
        return later if later.rule != RULE_NONE else boxed
    if boxed.span is None:
        return boxed
    final = last_of(_FINAL_ANCHOR.finditer(text, boxed.span[1]))
    if final is not None:  # "Final Answer: …" after the last box states it again, or corrects it
        got = _statement(text, final, envs, config)
        if got is not None:
            return Extraction(got.answer, got.rule or RULE_FINAL_ANSWER, got.span)
    answer = last_of(_ANSWER_ANCHOR.finditer(text, boxed.span[1]))
    if answer is not None:  # "…the answer is 6." after the box corrects it, when it plainly states one value
        got = _statement(text, answer, envs, config)
        lead_in = _lead_in(text, answer.start())
        # not "if the answer is 6, …", nor "for part (b), the answer is 7"
        plain = got is not None and got.answer is not None and got.value
        if plain and not lead_in & (_HEDGE_WORDS | _REFERENCE_WORDS):
            return Extraction(got.answer, RULE_ANSWER_IS, got.span)
    return boxed


RULE_WORDS = {
    "math.final": {
        "boxed": "the content of the last \\boxed{...}",
        "fbox": "the content of the last \\fbox{...}",
        "boxed_unbraced": "the token after the last \\boxed without braces",
        "fbox_unbraced": "the token after the last \\fbox without braces",
        "boxes": "the last boxes, joined ('\\boxed{1} and \\boxed{-2}')",
        "unclosed": "the last box never closes (a cut response; no earlier box is used)",
        "malformed_box": "the last \\boxed has no argument",
        "empty_box": "the last box is empty or a placeholder, and nothing is stated after it",
        "final_answer": "the last 'final answer is X' statement",
        "answer_is": "the last 'the answer is X' / 'Answer: X' statement",
        "hedged": "the answer statement is conditional or hedged ('if n is even', 'or maybe'): no answer",
        "several_values": "the statement names a range or several values in prose: no answer",
        "math_env": "the last math environment ($...$, \\[...\\])",
        "math_envs": "the last math environments, joined",
        "last_number": "the last number of the last line, where it ends the answer",
        "unsure_number": "the last line's number is not plainly the answer (a step, exponent, condition): no answer",
        "none": "no box, statement, math or number",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""

RULE_STRENGTH = {
    "math.final": {"boxed": "format", "fbox": "format", "boxed_unbraced": "format", "fbox_unbraced": "format",
                   "boxes": "format", "final_answer": "statement", "answer_is": "statement", "math_env": "fallback",
                   "math_envs": "fallback", "last_number": "fallback"},
}
"""How strong a read each answer rule is (see `audit.extractors.STRENGTHS`); rules that read no answer are absent."""
