"""math.equiv@1: symbolic equivalence of final math answers (MATH-style), bounded and explained.

Sources: the answer conventions of MATH (hendrycks/math, MIT) and MATH-500 (openai/prm800k);
the list of normalizations that other graders apply (hendrycks `_strip_string`, Qwen2.5-Math
`strip_string`, Math-Verify / latex2sympy2_extended `normalize_latex`), re-decided here one by
one. Parsing of LaTeX into sympy uses latex2sympy2_extended==1.11.0 on sympy==1.14.0 (pinned).
Its rules are pinned in tests/golden/graders/math_equiv_cases.jsonl.

`MathEquiv1` is the engine (`audit.graders.math.engine`, read its docstring for the pipeline)
with @1's rules where the versions differ: assignments dropped to their value, a relative
tolerance for decimals, a zero denominator left to sympy. Configured by the frozen
`MathEquivConfig`. Superseded by @2 and @3 (kept so that results graded with it reproduce).

Normalization (string only, idempotent): unicode minus and symbols to LaTeX; unwrap outer `$…$`,
`\\(…\\)`, `\\[…\\]`, `\\boxed{…}`, `\\fbox{…}`, `**…**` and TeX grouping `{…}`;
`\\dfrac`/`\\tfrac`/`\\cfrac` → `\\frac`; drop `\\left`/`\\right`/`\\big…`, `\\displaystyle`, `\\!` and
spacing commands, `^\\circ`/`°`, `\\%`/`%`, `\\$`; `\\mathrm`/`\\textbf`/`\\mbox`… → `\\text`;
`\\frac12` → `\\frac{1}{2}`, `\\sqrt2` → `\\sqrt{2}`, `\\sqrt(x)` → `\\sqrt{x}`, `x^(2)` → `x^{2}`, bare
`sqrt`/`pi`/`sin`… → commands, `{,}` → `,`; spaces removed except between two letters and after a
comma; trailing sentence period dropped. Plain numbers are compared exactly with Python fractions
(the fast path, no sympy); everything else is parsed by latex2sympy and compared by sympy in a
worker process under the per-item budget (see `audit.graders.budget`).

Decisions (each one a place where graders differ)
--------------------------------------------------
- `x = 4` vs `4`: an assignment whose left side is a variable (a letter or up to 3 letters, a Greek
  letter, optional subscript/prime/arguments: `x`, `a_1`, `f(x)`, `AB`, `\\theta`) is replaced by its
  right side, on either side. A chain `a = b = c` keeps the last part; so does `2+3 = 5` (no
  variables on the left). Any other equation is compared as an equation: `A = B` equals `C = D`
  when `A - B` is a nonzero constant multiple of `C - D`. Normal-form demands of the question
  (`A > 0`, gcd 1) are not checked: the grader does not see the question.
- Plain-text equations never collapse to 0: an equation whose sides do not parse is a parse error,
  and text is compared as text.
- Numbers: exact rational comparison. A relative tolerance (`rel_tol`, default 1e-6) applies only
  when one side is written as a decimal (`0.3333333` vs `\\frac13`; `5.` counts as a decimal);
  `\\frac{1}{2^{99}}` vs `\\frac{1}{2^{98}}` is decided exactly, never by rounding. Scientific notation
  `1e3`, `1.5E-2`, `2\\times10^{3}`, `10^{3}` are numbers. Thousands separators: `10,080`,
  `10{,}080`, `10,\\!080`, `1\\,000` are one number only when the whole answer has that shape
  (`1, 234` is a list).
- Percentages: the percent sign is dropped (`50\\%` == `50`); `50\\%` vs `0.5` is incorrect. MATH
  states percentage answers as the number before the sign, and the question fixes the scale.
- Degrees: `^\\circ` is dropped (`90^\\circ` == `90`); degrees are not converted to radians.
- Mixed numbers: an element that is exactly `N\\frac{a}{b}` with integer literals is N + a/b
  (`2\\frac{1}{2}` == `\\frac52`); inside larger expressions juxtaposition is a product.
- Units: a trailing `\\text{…}` (optionally `^2`) or trailing word after a number is a unit. When
  both sides carry units they must match (text, case-insensitive, plural `s` ignored); when one
  side has none, the unit is ignored (`5\\text{ cm}` == `5`).
- Base subscripts on numerals (`4210_{5}`) are dropped: the base is fixed by the question.
- Lists: a top-level comma list is unordered (MATH: "enter all solutions, separated by commas");
  `\\{…\\}` is an unordered set; `(…)` and `\\langle…\\rangle` are ordered tuples; intervals keep their
  bracket types (`[2,\\infty)` != `(2,\\infty)`); a `\\cup` union is unordered over its parts. A bare
  list compared with a tuple is compared in order; a one-element list equals its element.
  `a \\pm b` is the unordered pair {a+b, a-b}. An inequality in one variable is the set of reals it
  describes: `x > 2` == `(2,\\infty)`, `x<2 \\text{ or } x>3` == `(-\\infty,2)\\cup(3,\\infty)`,
  `2 \\le x < 3` == `[2,3)`; relations in several variables are compared as relations.
- Two `\\boxed{}` in one answer (`\\boxed{3}, \\boxed{5}`) are a parse error: they are never joined
  into a set silently.
- Words: a run of two or more letters that is not a LaTeX command (`Devon`, `yes`, `AB`, `4:30
  p.m.`) makes the element text, compared case-insensitively without spaces, parentheses around a
  single token (`\\text{(B)}` == `B`) and a trailing period. Words are never parsed as products of
  one-letter symbols (`nodev` != `Devon`). Colons (`4:30`) are text, not ratios. Consequently
  `2xy` vs `2yx` is incorrect (a known, documented false negative).
- `i` is the imaginary unit; `e` is Euler's number (latex2sympy's reading).
- Symbolic equality: structural, then numeric evaluation (30 digits; a clear difference is
  `incorrect` at once), then `sympy.simplify(a - b) == 0`. Constant expressions equal to 50 digits
  that sympy cannot prove equal are `correct` with a reason saying "not proven"; expressions with
  variables are checked at SAMPLE_POINTS fixed points first (any clear difference: `incorrect`),
  and when simplification cannot prove an identity that holds at every point, `correct` with a
  reason saying so.
- Caps (the engine's `Caps`, the config's `caps`, so they are part of the fingerprint): raw
  length MAX_ANSWER_CHARS, element length MAX_PARSE_CHARS, nesting MAX_NESTING, list size
  MAX_ELEMENTS, numeric exponents MAX_EXACT_EXPONENT (estimated in floats, towers never
  evaluated), tree size MAX_TREE_NODES. Over a cap: `parse_error_answer`/`parse_error_reference`
  with the cap named in the reason (identical strings are still `correct`).
- Verdicts: an answer or reference that cannot be parsed is `parse_error_answer` /
  `parse_error_reference`, never `incorrect`; the budget hit is `timeout`.

Known traps that must not be repeated (tests pin each): two different plain-text equations both
parsing to 0 and comparing equal; `\\frac{1}{2^{99}}` == `\\frac{1}{2^{98}}` by rounding; bare words
parsed as products of symbols; two boxed answers silently turned into a set; `4:30` read as the
ratio 2/15.

Known wrong verdicts of @1, fixed by later versions and kept here (a registered version never
changes): `x=2, y=3` == `x=3, y=2` (the variables are dropped); the relative tolerance credits
`419.9998` for 420 and `0.9999999` for 1 (@2); `1/0` == `2/0` (both sympy's `zoo`; @2); decimals
approximating exact values (`0.3333333` for `\\frac13`; @3 credits only exact numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from audit.graders import Judgment, register
from audit.graders.math.engine import (
    Caps,
    Cmp,
    Expr,
    MathEngine,
    Number,
    fmt,
    values_close,
)


@dataclass(frozen=True)
class MathEquivConfig:
    """Everything that changes a verdict besides code; part of the fingerprint."""

    rel_tol: float = 1e-6
    """Relative tolerance, used only when one side is written as a decimal."""
    budget_s: float = 5.0
    """Hard wall-clock budget per item for the symbolic step (timeout, never incorrect)."""
    caps: Caps = Caps()
    """The size caps and pinned libraries, shared by every version."""


CONFIG = MathEquivConfig()

_WRITTEN_DECIMAL_RE = re.compile(r"\d\.\d|\d[eE][-+]?\d")
"""An expression written with a decimal (`0.5x`) or scientific notation: the tolerance applies."""


class MathEquiv1(MathEngine):
    """The engine with @1's rules: assignments are their values, decimals within `rel_tol`."""

    def __init__(self, config: MathEquivConfig = CONFIG) -> None:
        super().__init__(config)

    def assign(self, lhs: str, rhs: str, value: object) -> object:
        """`x = 4` is 4: the variable is dropped (so `x=2, y=3` == `x=3, y=2`, fixed in @2)."""
        return value

    def decimal_number(self, mantissa: str, exponent: int) -> Number:
        """The exact value; a number written with a point (`0.5`, `5.`) is a decimal (`places` set)."""
        places = len(mantissa.partition(".")[2]) if "." in mantissa else None
        return Number(Fraction(mantissa) * Fraction(10) ** exponent, places)

    def divided_by_zero(self, s: str) -> Number | None:
        """Not a plain number: sympy reads it (as complex infinity, so `1/0` == `2/0`; fixed in @2)."""
        return None

    @staticmethod
    def writes_decimal(node: object) -> bool:
        if isinstance(node, Number):
            return node.places is not None
        if isinstance(node, Expr):
            return bool(_WRITTEN_DECIMAL_RE.search(node.latex))
        return False

    def decimal(self, written: tuple | None) -> bool:
        """One of the two leaves is written as a decimal: the relative tolerance applies."""
        return written is not None and (self.writes_decimal(written[0]) or self.writes_decimal(written[1]))

    def numbers_equal(self, a: Number, r: Number, cx: Cmp) -> bool:
        if a.value == r.value or not (self.writes_decimal(a) or self.writes_decimal(r)):
            return super().numbers_equal(a, r, cx)
        tol = self.config.rel_tol * max(abs(a.value), abs(r.value))
        if abs(a.value - r.value) <= tol:
            cx.reason = f"decimal within relative tolerance {self.config.rel_tol:g}"
            return True
        cx.reason = (f"numbers differ beyond relative tolerance {self.config.rel_tol:g}: "
                     f"{fmt(a.value)} vs {fmt(r.value)}")
        return False

    def judge_values(self, ea, er, va, vr, written: tuple | None, cx: Cmp) -> bool | None:
        if not self.decimal(written):
            return super().judge_values(ea, er, va, vr, written, cx)
        ok = values_close(ea, er, va, vr, self.config.rel_tol)
        cx.reason = (f"decimal within relative tolerance {self.config.rel_tol:g}" if ok else
                     f"values differ beyond relative tolerance {self.config.rel_tol:g}")
        return ok

    def sample_tolerance(self, written: tuple | None) -> float:
        return self.config.rel_tol if self.decimal(written) else super().sample_tolerance(written)


def math_equiv_fast(answer: str, reference: str, *, num_choices: int | None = None,
                    config: MathEquivConfig = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    return MathEquiv1(config).fast(answer, reference)


@register("math.equiv", "1", config=CONFIG, fast=math_equiv_fast, isolated=True,
          description="Symbolic equivalence of final math answers (sympy + latex2sympy2_extended), "
                      "MATH conventions, exact numbers, bounded time",
          source="audit (normalizations re-decided from hendrycks/math, Qwen2.5-Math, Math-Verify)")
def math_equiv(answer: str, reference: str, *, num_choices: int | None = None,
               config: MathEquivConfig = CONFIG) -> Judgment:
    return MathEquiv1(config).grade(answer, reference)
