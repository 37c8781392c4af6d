"""math.mathverify@0.9.0: a second opinion through the pinned `math-verify` package.

Source: huggingface/Math-Verify, PyPI `math-verify==0.9.0` (Apache-2.0), which parses with
latex2sympy2_extended==1.11.0 on sympy==1.14.0. We call its public API only:

    gold = parse("\\\\boxed{" + reference + "}", parsing_timeout=None)
    pred = parse("\\\\boxed{" + answer + "}", parsing_timeout=None)
    verify(gold, pred, timeout_seconds=None)

with its default extraction configs (LaTeX then plain expressions, `first_match` fallback).
The extracted strings are wrapped in `\\boxed{}` because `parse` expects a whole response and
finds the answer by its patterns; boxed content is its highest-priority anchor.

Its own timeouts are off (they use `signal.alarm`, which fails outside the main thread and
would clash with ours); ours are on: this grader is isolated and every item runs in a worker
process under the per-item budget of `audit.graders.budget`.

Mapping to verdicts: `parse` found nothing in the reference → `parse_error_reference`; nothing
in the answer → `parse_error_answer`; otherwise `verify`'s bool. `verify` swallows exceptions
during comparison and returns False (its default `raise_on_error=False`, kept so that this
is the verdict math-verify users get); the reason says so when that can be told.

Known traps of math-verify itself (why it is a second opinion, not the grader): it rounds
floats to 6 decimals when either side is a float; `\\boxed{3}, \\boxed{5}` inside one answer
is joined into a set; text such as `\\text{yes}` is compared as a symbol; `x = 4` vs `4` and
`\\dfrac` vs `\\frac` are handled.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from audit.graders import Judgment, installed_version, register


@dataclass(frozen=True)
class MathVerifyConfig:
    package_version: str = "0.9.0"
    """The installed math-verify must be this version; otherwise every verdict is `error`."""
    budget_s: float = 5.0
    """Hard per-item budget enforced by our worker pool (math-verify's own timeouts are off)."""
    float_rounding: int = 6
    numeric_precision: int = 15
    strict: bool = True
    """verify()'s defaults, spelled out so that they are part of the fingerprint."""


CONFIG = MathVerifyConfig()


def _installed_problem(config: MathVerifyConfig) -> str | None:
    have = installed_version("math-verify")
    if have is None:
        return f"math-verify is not installed (pinned {config.package_version})"
    if have != config.package_version:
        return f"installed math-verify {have} differs from the pinned {config.package_version}"
    return None


@register("math.mathverify", "0.9.0", config=CONFIG, isolated=True, source="pypi:math-verify==0.9.0",
          description="Math-Verify parse + verify (its timeouts off, our per-item budget on)")
def mathverify_equiv(answer: str, reference: str, *, num_choices: int | None = None,
                     config: MathVerifyConfig = CONFIG) -> Judgment:
    problem = _installed_problem(config)
    if problem:
        return Judgment(None, "error", problem)
    # math-verify warns once per process that its timeout is disabled: we know, ours is on.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    from math_verify import parse, verify

    gold = parse("\\boxed{" + reference + "}", parsing_timeout=None)
    if not gold:
        return Judgment(None, "parse_error_reference", "math-verify extracted nothing from the reference")
    pred = parse("\\boxed{" + answer + "}", parsing_timeout=None)
    if not pred:
        return Judgment(None, "parse_error_answer", "math-verify extracted nothing from the answer")
    ok = verify(gold, pred, float_rounding=config.float_rounding, numeric_precision=config.numeric_precision,
                strict=config.strict, timeout_seconds=None)
    shown = f"{_show(pred[0])} vs {_show(gold[0])}"
    return Judgment(True, "correct", f"math-verify: equal ({shown})") if ok else \
        Judgment(False, "incorrect", f"math-verify: not equal ({shown})")


def _show(x: object, limit: int = 50) -> str:
    try:
        s = str(x)
    except Exception:  # printing some sympy objects can fail
        s = type(x).__name__
    return s if len(s) <= limit else s[: limit - 1] + "…"
