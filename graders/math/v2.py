"""math.equiv@2: math.equiv@1 with assignments compared variable by variable and decimals judged
to the precision they state.

Source: math.equiv@1 (`audit.graders.math.v1`; its sources are hendrycks/math, MATH-500 and the
normalizations of hendrycks, Qwen2.5-Math and Math-Verify) and a review of @1's verdicts that found
two wrong `correct`s and four false negatives, each pinned in tests/golden/graders/math_equiv2_cases.jsonl.
Everything not listed here is @1's rule (read @1's docstring).

`MathEquiv2` is the engine (`audit.graders.math.engine`) with the steps below overridden, configured
by the frozen `MathEquiv2Config` (no relative tolerance; `boundary_digits`). It keeps assignments
(the engine's `assign`), refuses a zero denominator (the engine's `divided_by_zero`), and overrides
`replace_symbols`, `drop_degrees` and `squeeze` (rules 5, 6), `read_sympy` (rule 4), `decimal_number`,
`numbers_equal` and `judge_written` (rule 3).

What changes from @1
--------------------
1. Assignments keep their variable. `x = 2` is an assignment node (variable `x`, value 2), not the
   value 2. When both sides are assignments they are compared variable by variable: the same set
   of variables, each with an equal value (`x=2, y=3` == `y=3, x=2`; `x=2, y=3` != `x=3, y=2`;
   `a=2` != `b=2`). `(x, y) = (2, 3)` is the two assignments `x=2, y=3`. An assignment against a
   bare value keeps @1's rule, the value is compared (`x = 4` == `4`: the lab note's failure mode
   stays fixed), and so does a list of assignments against a list of bare values.
2. An assignment against an equation is compared as an equation (`y = 2x + 1` == `2x - y + 1 = 0`,
   constant multiples, @1's equation rule). If either side cannot be read as an equation, the
   verdict stays @1's: `incorrect`, an equation vs a value. No new `correct` without a proof.
3. Decimals are judged to the precision they state, never by a relative tolerance (@1's 1e-6
   accepted `419.9998` for 420, `0.9999999` for 1 and `1000000.0` for 1000001). See below.
4. Division by zero is not a value: `1/0`, `\\frac{1}{0}`, anything sympy evaluates to complex
   infinity or NaN (`\\frac{0}{0}`, `\\tan\\frac{\\pi}{2}`) is a parse error of its side (@1: `1/0`
   == `2/0`, both `zoo`). Identical strings are still `correct`, as for every other parse error.
5. `\\log_2 8`: a one-character sub- or superscript followed by a space is braced before spaces are
   removed (`\\log_{2}8`, not `\\log_28`).
6. `6^\\circ C`, `6^\\circ F` (and `℃`, `℉`): the letter after a degree sign is a unit
   (`6\\text{C}`), not a factor `6·C`; units then follow @1's rule (`6^\\circ C` == `6`, != `6^\\circ F`).

Decimals: the rule
------------------
A decimal literal states its precision: `0.3333` says "0.3333 to the nearest 0.0001"; in
scientific notation the mantissa states it (`1.5\\times10^{3}`: to the nearest 100). Integers,
fractions and expressions are exact. Whole numbers written with a point and no digits after it are
exact. When two numeric values differ:
- the reference is a decimal: the REFERENCE's stated precision decides. Correct iff the answer's
  value (exact, or the value of the decimal it wrote) is within half a unit of the reference's last
  digit, ties accepted: `\\frac13` == `0.33`, `\\frac12` == `0.5`, `0.333` == `0.33`; `0.3` !=
  `0.33` (fewer digits than the reference states); `420` != `419.9998`. For decimal answers this is
  exact.hle@1's rule.
- else, the answer is a decimal: the ANSWER's stated precision decides. Correct iff the exact
  reference rounds to the answer at the answer's digits (half a unit, ties accepted):
  `0.3333` == `\\frac13`, `420.0` == `420`, `3.1416` == `\\pi`; `3.1415` != `\\pi`, `419.9998` !=
  `420`, `0.9999999` != `1`, `1000000.0` != `1000001`.
- neither is a decimal: exact, as in @1.
This applies where a whole element is a number (`_plain_number`: sign, decimals, thousands
separators, `1.5e3`, `1.5\\times10^{3}`), also inside lists, tuples, intervals and units. A decimal
inside an expression (`0.5x`, `\\frac{31.95}{2}`, `2.5\\pi`) is read as the exact fraction it writes,
with no slack at all. Known cost: a decimal reference that is in fact an exact value (`4.5` meaning
9/2) accepts an answer that rounds to it (`4.54`); the grader does not see the question. In
MATH-500, 7 of the 9 decimal references are such exact values (`4.5`, `0.15`, `.35625`, ...), 2 are
rounded as the question asks (`1.25`, `5.4 \text{ cents}`).
Comparisons are exact (Fractions; sympy Rationals); against an irrational reference (`\\pi`,
`\\sqrt2`) the margin |answer - reference| - half-unit is evaluated to 50 digits, and only a margin
below 10^-boundary_digits (40) that sympy cannot decide exactly counts as a tie (accepted): a
guard against representation error, not a tolerance.

Known false negatives left (documented, pinned in the table): answers in another variable name
(`f(x) = 2x+1` vs `y = 2x+1`, both assignments); inequalities with decimals are compared as exact
sets (`x > 0.33` != `x > \\frac13`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from audit.graders import Judgment, register
from audit.graders.math.engine import (
    Caps,
    Cmp,
    MathEngine,
    Number,
    ParseError,
    fmt,
    numeric_value,
)


@dataclass(frozen=True)
class MathEquiv2Config:
    """Everything that changes a verdict besides code; part of the fingerprint. No relative tolerance."""

    budget_s: float = 5.0
    """Hard wall-clock budget per item for the symbolic step (timeout, never incorrect)."""
    boundary_digits: int = 40
    """A decimal's rounding margin below 10^-boundary_digits (50-digit evaluation) that sympy cannot
    decide exactly is a tie, accepted. Guards representation error only."""
    caps: Caps = Caps()
    """The size caps and pinned libraries, shared by every version."""


CONFIG = MathEquiv2Config()

_TEMPERATURES = (("\u2103", r"^\circ C"), ("\u2109", r"^\circ F"))
"""`℃`, `℉`: a degree sign and a unit letter (rule 6)."""
_DEGREE_UNIT_RE = re.compile(r"(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\degree)\s*([CF])(?![A-Za-z])")
"""`6^\\circ C`: the letter is a unit (Celsius, Fahrenheit), not a factor."""
_BARE_SCRIPT_RE = re.compile(r"([_^])([A-Za-z0-9])(?=\s+[A-Za-z0-9])")
"""`\\log_2 8`: brace the one-character script so removing the space cannot join `_28`."""


def precision(a: object, r: object) -> tuple[Number, str] | None:
    """The decimal whose stated precision decides, and its side: the reference's first."""
    if isinstance(r, Number) and r.places is not None:
        return r, "reference"
    if isinstance(a, Number) and a.places is not None:
        return a, "answer"
    return None


def unit_text(u: Fraction) -> str:
    """A power of ten as a decimal: `0.01`, `100` (`1e-40` beyond 12 zeros)."""
    n = len(str(u.numerator)) - 1 if u.denominator == 1 else -(len(str(u.denominator)) - 1)
    if abs(n) > 12:
        return f"1e{n}"
    return str(u.numerator) if n >= 0 else "0." + "0" * (-n - 1) + "1"


def show(n: Number) -> str:
    """A number as the reader wrote it: a decimal with its stated digits, else the exact fraction."""
    if n.places is None:
        return fmt(n.value)
    scaled = n.value / Fraction(10) ** n.exponent
    digits = str(abs(scaled.numerator * 10 ** n.places // scaled.denominator)).rjust(n.places + 1, "0")
    text = ("-" if scaled < 0 else "") + digits[:-n.places] + "." + digits[-n.places:]
    text += f"e{n.exponent}" if n.exponent else ""
    return text if len(text) <= 40 else text[:37] + "…"


class MathEquiv2(MathEngine):
    """The engine with @2's rules: assignments by variable, decimals to their stated precision."""

    def __init__(self, config: MathEquiv2Config = CONFIG) -> None:
        super().__init__(config)

    # -- normalization (rules 5, 6) -------------------------------------------------------------

    def replace_symbols(self, s: str) -> str:
        s = super().replace_symbols(s)
        for a, b in _TEMPERATURES:
            s = s.replace(a, b)
        return s

    def drop_degrees(self, s: str) -> str:
        return super().drop_degrees(_DEGREE_UNIT_RE.sub(r"\\text{\1}", s))

    def squeeze(self, s: str) -> str:
        return super().squeeze(_BARE_SCRIPT_RE.sub(r"\1{\2}", s))

    # -- numbers (rule 3) -----------------------------------------------------------------------

    def decimal_number(self, mantissa: str, exponent: int) -> Number:
        """A number from its written mantissa; digits after the point state its precision (`5.` is exact)."""
        digits = mantissa.partition(".")[2]
        value = Fraction(mantissa) * Fraction(10) ** exponent
        return Number(value, len(digits) if digits else None, exponent)

    def numbers_equal(self, a: Number, r: Number, cx: Cmp) -> bool:
        judge = precision(a, r) if a.value != r.value else None
        if judge is None:
            return super().numbers_equal(a, r, cx)
        num, side = judge
        unit = num.unit
        assert unit is not None
        ok = 2 * abs(a.value - r.value) <= unit
        cx.reason = (f"within half a unit of the {side}'s last stated digit ({unit_text(unit)})" if ok else
                     f"{show(a)} vs {show(r)} differ by more than half a unit of the {side}'s last "
                     f"stated digit ({unit_text(unit)})")
        return ok

    def judge_written(self, ea, er, written: tuple | None, cx: Cmp) -> bool | None:
        """A decimal leaf: |ea - er| <= half a unit of its last stated digit decides (None: cannot evaluate)."""
        judge = precision(*written) if written is not None else None
        if judge is None:
            return None
        return self.within_stated_precision(ea, er, judge, cx)

    def within_stated_precision(self, ea, er, judge: tuple[Number, str], cx: Cmp) -> bool | None:
        """|ea - er| <= half a unit of the judging decimal's last digit, decided exactly where sympy can;
        None when the values cannot be evaluated (the caller's exact path decides)."""
        import sympy

        num, side = judge
        unit = num.unit
        assert unit is not None
        half = sympy.Rational(unit.numerator, unit.denominator) / 2
        diff = ea - er
        tie = False
        if diff.is_Rational:
            ok = bool(abs(diff) <= half)
            tie = bool(abs(diff) == half)
        else:
            if numeric_value(ea) is None or numeric_value(er) is None:
                return None
            try:
                margin = sympy.N(abs(diff) - half, 50)
            except (TypeError, ValueError, ArithmeticError, AttributeError):
                return None
            if not margin.is_Number:
                return None
            if abs(margin) > sympy.Float(10, 50) ** -self.config.boundary_digits:
                ok = bool(margin < 0)
            else:  # at the boundary to 40 digits: decide exactly if sympy can, else accept as a tie
                exact = sympy.simplify(abs(diff) - half)
                ok = bool(exact <= 0) if exact.is_Rational else True
                tie = not exact.is_Rational or exact == 0
        stated = unit_text(unit)
        if tie:
            cx.reason = f"exactly half a unit of the {side}'s last stated digit ({stated}) away (ties accepted)"
        elif ok:
            cx.reason = f"within half a unit of the {side}'s last stated digit ({stated})"
        else:
            cx.reason = f"differs by more than half a unit of the {side}'s last stated digit ({stated})"
        return ok

    # -- sympy leaves (rule 4) ------------------------------------------------------------------

    def read_sympy(self, latex: str):
        """@1's reading, and division by zero (complex infinity, NaN) refused as a parse error."""
        import sympy

        expr = super().read_sympy(latex)
        if isinstance(expr, (sympy.Basic, sympy.MatrixBase)) and expr.has(sympy.zoo, sympy.nan):
            raise ParseError(f"'{latex[:60]}' is undefined (division by zero)")
        return expr


def math_equiv2_fast(answer: str, reference: str, *, num_choices: int | None = None,
                     config: MathEquiv2Config = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    return MathEquiv2(config).fast(answer, reference)


@register("math.equiv", "2", config=CONFIG, fast=math_equiv2_fast, isolated=True,
          description="Symbolic equivalence of final math answers (sympy + latex2sympy2_extended), "
                      "MATH conventions, assignments by variable, decimals to their stated precision, "
                      "bounded time",
          source="audit: math.equiv@1 revised after review (assignments, stated precision, division by zero)")
def math_equiv2(answer: str, reference: str, *, num_choices: int | None = None,
                config: MathEquiv2Config = CONFIG) -> Judgment:
    return MathEquiv2(config).grade(answer, reference)
