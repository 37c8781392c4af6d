r"""GSM8K graders: lm-eval's exact_match as the gsm8k task configures it, and the same on exact numbers.

Source: EleutherAI/lm-evaluation-harness, `lm_eval/tasks/gsm8k/gsm8k.yaml` @
b733598568fde3afa0e008892f8e7bb18cd472b6 (metric_list: exact_match, ignore_case true,
ignore_punctuation false, regexes_to_ignore `,`, `\$`, `(?s).*#### `, `\.$`) and
`lm_eval/api/metrics.py::exact_match_hf_evaluate` (each regex removed with `re.sub`, in that
order, from both prediction and reference; then lower case; then string equality).

The reference is the task's target: the whole GSM8K solution. `(?s).*#### ` removes everything up
to the last `#### `, so the reference is the value on the solution's `####` line (a bare value
works too).

gsm8k.exact_match@b733598
    lm-eval's metric exactly. Traps kept: `18.00` != `18`, `18.5.` reads `18.5`, `-0` != `0`.

gsm8k.numeric@1
    Source: audit. The same normalisation; then, when both sides are plain numbers, they are
    compared as exact rationals (`18.00` == `18`, `.5` == `0.5`), never with a tolerance; other
    strings compare as lm-eval's do (lower case, equal).
    Trap (fixed in @2): commas are dropped before the number is read, and `2/3` is no plain number,
    so the extractor's `2` of `#### 2/3` is all this grader ever sees (gsm8k.answer@1).

gsm8k.numeric@2
    Source: audit. For gsm8k.answer@2's whole numbers: each side (the reference after its last
    `#### `) is read as one exact rational: `-3`, `1,000.5` (commas only between groups of three
    digits), `3.5`, `.5`, `2/3`, `−3` (U+2212), with a leading `$` and a final period dropped.
    Equal rationals are correct (`18.00` == `18`, `4/2` == `2`); anything else that is not one
    number (`2 2/3`, `1,00`, `2/0`) is incorrect with the reason, unless it equals the reference
    as text after lm-eval's normalisation. Never a tolerance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from audit.graders import Judgment, register

SOURCE = "EleutherAI/lm-evaluation-harness lm_eval/tasks/gsm8k/gsm8k.yaml @ b733598568fde3afa0e008892f8e7bb18cd472b6"


@dataclass(frozen=True)
class Gsm8kMetricConfig:
    """The gsm8k task's exact_match settings, spelled out so that they are part of the fingerprint."""

    regexes_to_ignore: tuple[str, ...] = (",", "\\$", "(?s).*#### ", "\\.$")
    ignore_case: bool = True


CONFIG = Gsm8kMetricConfig()
_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)")


def _normalize(s: str, config: Gsm8kMetricConfig) -> str:
    for pattern in config.regexes_to_ignore:
        s = re.sub(pattern, "", s)
    return s.lower() if config.ignore_case else s


@register("gsm8k.exact_match", "b733598", config=CONFIG, source=SOURCE,
          description="lm-eval gsm8k exact_match: drop , $ up-to-'#### ' and a final period, lower case, equal")
def exact_match(answer: str, reference: str, *, num_choices: int | None = None,
                config: Gsm8kMetricConfig = CONFIG) -> Judgment:
    a, r = _normalize(answer, config), _normalize(reference, config)
    if a == r:
        return Judgment(True, "correct", f"equal after lm-eval's normalisation: '{a[:40]}'")
    return Judgment(False, "incorrect", f"'{a[:40]}' vs '{r[:40]}' after lm-eval's normalisation")


@register("gsm8k.numeric", "1", config=CONFIG, source="audit (lm-eval's gsm8k normalisation, exact numbers)",
          description="GSM8K: lm-eval's normalisation, then exact numbers (18.00 == 18), no tolerance")
def numeric(answer: str, reference: str, *, num_choices: int | None = None,
            config: Gsm8kMetricConfig = CONFIG) -> Judgment:
    a, r = _normalize(answer, config).strip(), _normalize(reference, config).strip()
    if not r:
        return Judgment(None, "parse_error_reference", "the reference has no value after its '#### '")
    if _NUMBER.fullmatch(a) and _NUMBER.fullmatch(r):
        if Fraction(a) == Fraction(r):
            return Judgment(True, "correct", f"equal numbers: {a[:30]} and {r[:30]}")
        return Judgment(False, "incorrect", f"numbers differ: {a[:30]} vs {r[:30]}")
    if a == r:
        return Judgment(True, "correct", f"equal after lm-eval's normalisation: '{a[:40]}'")
    return Judgment(False, "incorrect", f"'{a[:40]}' vs '{r[:40]}' after lm-eval's normalisation")


_EXACT = re.compile(r"(?P<num>-?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|-?\.[0-9]+)"
                    r"(?:/(?P<den>(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?))?")


def _exact_number(s: str) -> Fraction | None:
    """The one number `s` writes, exactly (see gsm8k.numeric@2), or None."""
    s = s.strip().replace("−", "-").replace(" ", "").replace("\t", "")
    s = s.removeprefix("$").removesuffix(".")
    if s.startswith("-$"):
        s = "-" + s[2:]
    m = _EXACT.fullmatch(s)
    if m is None:
        return None
    value = Fraction(m.group("num").replace(",", ""))
    if m.group("den") is None:
        return value
    den = Fraction(m.group("den").replace(",", ""))
    return value / den if den else None


@register("gsm8k.numeric", "2", config=CONFIG, source="audit (GSM8K answers as exact rationals, fractions included)",
          description="GSM8K: the whole number each side writes (2/3, -3, 1,000.5) as an exact rational; no tolerance")
def numeric_whole(answer: str, reference: str, *, num_choices: int | None = None,
                  config: Gsm8kMetricConfig = CONFIG) -> Judgment:
    ref_text = re.sub(r"(?s).*#### ", "", reference).strip()
    if not ref_text:
        return Judgment(None, "parse_error_reference", "the reference has no value after its '#### '")
    a, r = _exact_number(answer), _exact_number(ref_text)
    if r is None:
        if _normalize(answer, config).strip() == _normalize(reference, config).strip():
            return Judgment(True, "correct", f"equal after lm-eval's normalisation: '{answer.strip()[:40]}'")
        return Judgment(None, "parse_error_reference", f"the reference '{ref_text[:40]}' is not one number")
    if a is None:
        return Judgment(False, "incorrect", f"the answer '{answer.strip()[:40]}' is not one number")
    if a == r:
        return Judgment(True, "correct", f"equal numbers: {answer.strip()[:30]} and {ref_text[:30]}")
    return Judgment(False, "incorrect", f"numbers differ: {answer.strip()[:30]} vs {ref_text[:30]}")
