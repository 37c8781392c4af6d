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
