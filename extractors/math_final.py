r"""The final answer of a free-form math response: boxes, "final answer is" statements, math, numbers.

math.final@1
    Source: audit (our own), after studying what Math-Verify 0.9.0 (huggingface/Math-Verify,
    `math_verify/parser.py`, Apache-2.0) extracts: boxed content first, then "final answer is"
    statements, then LaTeX environments, then plain numbers, with environments joined by
    "and"/"or"/commas. Reimplemented from its behaviour and its published tests, not its code;
    where it reads something we consider unsafe we differ (listed under Traps).
    Rules, first that fires wins:
    1. The last `\boxed{…}` / `\fbox{…}` (balanced braces, as boxed@1), rules `boxed`, `fbox`,
       `boxed_unbraced`, `fbox_unbraced`. When the boxes before it are joined to it only by
       punctuation and at most `max_join_words` words ending in "and"/"or" (`\boxed{1} and
       \boxed{-2}`, `\boxed{(2,2)} \quad\text{and}\quad \boxed{(6,2)}`, `\boxed{1},\boxed{2}`), the
       answer is all of them, joined by ", " (or `\text{ or }` after an "or"), rule `boxes`.
       A last box that never closes gives no answer (`unclosed`: a cut response, no earlier box
       is used); `\boxed{}` gives `empty_box`; `\boxed` with no argument `malformed_box`.
       Unescaped `$` inside a box are dropped (`\boxed{12 $ and $13}`); a joined part repeated word
       for word counts once (a restated box); a `label =` right before a joined box stays with its
       value (`y_1 = \boxed{…} and y_2 = \boxed{…}`).
    2. No box, or a "final answer" statement after the last box (the box was a step): the last
       "final answer" statement, rule `final_answer`: "The final answer is
       $X$", "Final Answer: X", "Final Answer: The volume of $V$ is X" (the first " is " within
       `statement_window` characters and the same sentence, else the text after the colon).
       X is the math environment that starts there (joined as in 1), or the plain text up to the
       sentence's end when it has at most `max_statement_words` words, or its leading number.
    3. The same after the last "answer" ("The answer is X", "Answer: X"), rule `answer_is`.
    4. The last number of the last non-empty line (`-5`, `1,000.99`, `2/3`, `.4`, `1 000`,
       `\frac{10}{9}`; units may follow), when no math environment ends after it on that line, rule
       `last_number` ("…so the error increases by 100%." after the last `$$…$$`). A number glued to
       letters (`AZYUK2A`) is not one.
    5. The last math environment `$…$`, `$$…$$`, `\(…\)`, `\[…\]` (inline ones on one line; `\$` is
       a dollar sign, not a delimiter), rule `math_env`; several joined as in 1, `math_envs`.
    6. Nothing: `none`.
    The span is that of the answer in the text; for joined answers, from the first part's start
    to the last part's end (each part lies inside it).
    Traps: a box in a restated problem or a worked example late in the text wins (as in boxed@1);
    a last `$…$` that is a check rather than the answer (`$5^2 = 25$`) is read as the answer when
    no box or statement exists; a decimal comma (`1000,99`) is not a decimal. Differences from
    Math-Verify on purpose: boxes far apart are not joined (`\boxed{1} no no no no no \boxed{2}`
    gives 2, as there), an unclosed box is never read, the first box never beats the last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from audit.extractors import RULE_NONE, Extraction, register
from audit.extractors._scan import last_of
from audit.extractors.boxed import RULE_EMPTY, _last_box


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
    """A plain-text statement answer with more words is prose: only its leading number is read."""


CONFIG = MathFinalConfig()

RULE_BOXES = "boxes"
RULE_FINAL_ANSWER = "final_answer"
RULE_ANSWER_IS = "answer_is"
RULE_MATH_ENV = "math_env"
RULE_MATH_ENVS = "math_envs"
RULE_LAST_NUMBER = "last_number"

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
_NUMBER = re.compile(
    r"(?<![A-Za-z0-9_.\\])(?:-?\\frac\{\d+\}\{\d+\}|-?(?:\d+(?:(?:[.,]|[ ](?=\d{3}(?!\d)))\d+)*|\.\d+)(?:/\d+)?)"
    r"(?!\d)(?![.,]\d)")
"""A plain number: `-5`, `1,000.99`, `.4`, `2/3`, `1 000`, `\\frac{10}{9}`; units may follow (`100m`), letters may
not precede (`AZYUK2A` holds none)."""
_LABEL_BEFORE = re.compile(r"(?:[A-Za-z]{1,3}(?:_\{?[A-Za-z0-9]{1,3}\}?)?|\([A-Za-z, ]{1,20}\))\s*=\s*$")
"""`y_2 = ` right before a box: the part's label (`y_1 = \\boxed{…} and y_2 = \\boxed{…}`)."""
_LEADING_NUMBER = re.compile(r"[-+]?\$?\d[\d,]*(?:\.\d+)?(?:/\d+)?\s*(?:%|\\%)?")


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
    if not content:
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


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


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


# --------------------------------------------------------------------------- statements and numbers


def _statement(text: str, m: re.Match, envs, config: MathFinalConfig) -> tuple[str, tuple[int, int]] | None:
    """The answer a statement states after its anchor `m` ("final answer", "answer"), or None."""
    at = m.end()
    window = text[at: at + config.statement_window]
    is_m = _IS.search(window)
    if is_m and not _SENTENCE_END.search(window[: is_m.start()]):
        at += is_m.end()
    at = _LEAD.match(text, at).end()
    for k, env in enumerate(envs):
        if env[0] == at:
            got = _env_answer(text, envs, k, True, config)
            return (got[0], got[1]) if got else None
    end_m = _SENTENCE_END.search(text, at)
    end = end_m.start() if end_m else len(text)
    hope = text.find("I hope", at, end)
    end = hope if hope >= 0 else end
    phrase = text[at:end].strip().rstrip(".*\"'`\\").strip()
    if not phrase or "\\boxed" in phrase:
        return None
    start = text.find(phrase, at)
    span = (start, start + len(phrase))
    phrase = _clean(phrase)  # `$10,455$` after currency dollars broke the pairing of delimiters
    if not phrase:
        return None
    if len(phrase.split()) > config.max_statement_words:  # prose: its leading number, or its only number
        lead = _LEADING_NUMBER.match(phrase)
        numbers = _NUMBER.findall(phrase)
        if lead is not None:
            phrase = lead.group(0).strip()
        elif len(numbers) == 1:
            phrase = numbers[0]
        else:
            return None
        start = text.find(phrase, span[0])
        span = (start, start + len(phrase)) if start >= 0 else span
    return phrase, span


@register("math.final", "1", config=CONFIG,
          rules=("boxed", "fbox", "boxed_unbraced", "fbox_unbraced", "boxes", "unclosed", "malformed_box", "empty_box",
                 "final_answer", "answer_is", "math_env", "math_envs", "last_number", "none"),
          description="Final answer of a free-form math response: last box(es), a final-answer statement, "
                      "the last math environment or number")
def math_final(text: str, *, finish_reason: str | None = None, config: MathFinalConfig = CONFIG) -> Extraction:
    envs = _math_envs(text)
    boxed = _boxes(text, config)
    if boxed is not None:
        final = last_of(_FINAL_ANCHOR.finditer(text))
        if boxed.span is None or final is None or final.start() < boxed.span[1]:
            return boxed
        got = _statement(text, final, envs, config)  # "Final Answer: …" after the last box states it again, or corrects it
        return Extraction(got[0], RULE_FINAL_ANSWER, got[1]) if got else boxed
    for anchor, rule in ((_FINAL_ANCHOR, RULE_FINAL_ANSWER), (_ANSWER_ANCHOR, RULE_ANSWER_IS)):
        m = last_of(anchor.finditer(text))
        got = _statement(text, m, envs, config) if m else None
        if got is not None:
            return Extraction(got[0], rule, got[1])
    stripped = text.rstrip()
    after = max(envs[-1][3] if envs else 0, stripped.rfind("\n") + 1)
    number = last_of(_NUMBER.finditer(stripped, after))
    if number is not None:  # a plain number on the last line, after the last environment, is the later statement
        return Extraction(number.group(0), RULE_LAST_NUMBER, number.span())
    if envs:
        env = _env_answer(text, envs, len(envs) - 1, False, config)
        if env is not None:
            answer, span, joined = env
            return Extraction(answer, RULE_MATH_ENVS if joined else RULE_MATH_ENV, span)
    return Extraction(None, RULE_NONE)


RULE_WORDS = {
    "math.final": {
        "boxed": "the content of the last \\boxed{...}",
        "fbox": "the content of the last \\fbox{...}",
        "boxed_unbraced": "the token after the last \\boxed without braces",
        "fbox_unbraced": "the token after the last \\fbox without braces",
        "boxes": "the last boxes, joined ('\\boxed{1} and \\boxed{-2}')",
        "unclosed": "the last box never closes (a cut response; no earlier box is used)",
        "malformed_box": "the last \\boxed has no argument",
        "empty_box": "the last box is empty",
        "final_answer": "the last 'final answer is X' statement",
        "answer_is": "the last 'the answer is X' / 'Answer: X' statement",
        "math_env": "the last math environment ($...$, \\[...\\])",
        "math_envs": "the last math environments, joined",
        "last_number": "the last number of the last line",
        "none": "no box, statement, math or number",
    },
}
"""What each rule means, in words, per extractor name (shown by `audit grade` and `audit diff`)."""
