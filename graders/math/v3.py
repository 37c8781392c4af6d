"""math.equiv@3: exact numbers, labelled and "and"-joined answers, one engine class.

Source: math.equiv@2 (`audit.graders.math.v2`, itself @1 revised; read both docstrings) and a review of
@2 against Math-Verify's published test tables (math-verify==0.9.0 sdist, `tests/`), the Qwen2.5-Math
CoT responses and PRM800K final answers in ../shared/data, and issue 10; revised before its first
release after an adversarial review (2026-12-01) that found false credits in rules 1, 2 and 8 and in
@2's unit rule. Every rule below is pinned in tests/golden/graders/math_equiv3_cases.jsonl by a real
case named after its source, and every row of that review in tests/golden/graders/math_equiv3_review.jsonl.

`MathEquiv3` is a subclass of `MathEquiv2` (so @2's normalization, LaTeX reading and division-by-zero
rule stand), configured by the frozen `MathEquiv3Config`; it overrides the steps below. Decimals are
read as the exact rationals they write (`decimal_number` keeps no stated precision), so @2's
precision rule never applies.

What changes from @2
--------------------
1. Numbers are equal only when they are equal exactly (as rationals): `4.50` == `4.5`, `0.5` ==
   `\\frac12`, but `0.33`, `0.333` != `\\frac13`, `3.14` != `\\pi`, `1.41` != `\\sqrt2`, `2.7` != `e`,
   `4.54` != `4.5`. @2 judged decimals to their stated precision; that credited approximations of
   exact values (the very failure that retracted a lab's HLE figure). A tolerance exists only as a
   named policy (`NumericTolerance`, with the official grader that names it) in a config; none by
   default, and the verdict's reason names the policy when it decides.
2. No credit without a proof. Two values are equal when they are the same exact number, or when sympy
   proves their difference zero (automatic evaluation, `simplify`, then `expand`, `trigsimp`, `radsimp`
   and, for algebraic numbers, the minimal polynomial). Numbers only ever REJECT: values that differ at
   30 digits, or expressions in variables that differ at a sample point (exactly, at rational points),
   are not equal; values that agree to 50 digits, or at every sample point, but are not proven equal are
   `incorrect`, saying so (`\\pi + e^{-1000}` != `\\pi`; `3.141592653589793 r^2` != `\\pi r^2`;
   `0.3333333333333333x` != `\\frac{x}{3}`; `x + 10^{-20}` != `x`). Known cost: a true identity sympy
   cannot prove (`\\arctan 1 + \\arctan 2 + \\arctan 3` = `\\pi`) is refused.
3. `number = expression` (`7 = 11a+c`) states the number's value: it is read as the value 7 labelled
   by the expression, not reduced to the expression (@2 credited `11a+c` and refused `7`). A chain's
   value is its last constant part (`x = 5+5+1 = 11`), and a chain must be TRUE: its constant parts must
   be equal (`x = 3 = 4`, `2\\cdot 3 = 7`, `2+2=5`, `\\pi = 3` are incorrect, whatever the reference).
   `0 = expression` stays an equation (a zero side is an equation's standard form). `expression = number`
   with a non-label on the left stays an equation (`x + z = 1`, `x^2/4 + y^2/3 = 1`).
4. Labels: a left side that names a quantity is a label, not an equation: a variable (as before),
   `|AB|`, ratios of names `A:B`, `V_{1}:V_{2}`, `S_{MBCN}:S`, fractions of names `\\frac{NO}{BO}`,
   `\\angle ABC`, `\\overline{AB}`, long subscripts, an area `[ABC]`, `\\det A`, a trigonometric or
   logarithmic function of a name (`\\cos\\theta`, `\\tan x`), an inverse function `f^{-1}(x)`,
   `x_{\\max}`, a norm `\\|v\\|`, a probability `P(\\text{heads})`, `\\Pr(A)`, and words
   (`\\text{Area of } \\triangle ABC`, `\\#\\text{ways}`). Against a bare value the value is compared
   (`|AB| = 1` == `1`, `V_1:V_2 = 11:21` == `11:21`); two labels must name the same thing. `\\pi` is a
   constant, never a label. A labelled number keeps its thousands separators (`n = 1,000`, `x = 10,\\!080`).
5. Answers joined by words: `1 and -2`, `21, 16 and 11`, `\\text{ and }`, `\\quad\\text{and}\\quad`
   and `or` between values or tuples (`(11,7) or (7,11)`) are lists. `or` between inequalities is
   still a union of sets (`x<2 \\text{ or } x>3`). `;` separating groups that contain commas
   (`p=5,q=2;p=7,q=2`) separates solutions.
6. Lists of assignments: to distinct variables (`x=2, y=3`) they are an ordered tuple against bare
   values (@2 matched them in any order, crediting `3, 2`), in the order written, except that `x`, `y`,
   `z` are put in that order (`y=2, x=1` == `(1, 2)`); to one variable (`x=1, x=-2`, `a=4, -8, -10`) or
   to an indexed family (`x_1=…, x_2=…`) they are that variable's set of values, in any order.
   `(x, y) = (5, 8) and (8, 5)`: later bare tuples are values of the same variables. Repeated identical
   elements of an answer list count once when the reference has no repeats. `(\\pm 1, 2)` is the two
   tuples `(1, 2), (-1, 2)`.
7. Sets of reals: inequalities whose middle is a named quantity (`0 < f(x) < 1`) are the interval they
   bound (`(0,1)`); `\\mathbb{R}` is `(-\\infty, \\infty)`; `\\{x \\mid x > 2\\}` is the set its inequality
   describes; a union of intervals equals the interval it makes (`(1,2] \\cup [2,4)` == `(1,4)`);
   `]1,2]` and `[1,2[` are `(1,2]` and `[1,2)`; a one-element set equals its element (`\\{2\\}` == `2`).
   An inequality against a non-real bound (`x > -2+7i`) is no set of reals: `incorrect`.
8. Trailing words: only a unit is dropped (`5\\text{ cm}` == `5`; lengths, areas, volumes, masses, times,
   money, angles, percent, temperatures, `units`, a few counted nouns such as `ways`, `people`), also
   glued (`5cm`; one-letter units only in `\\text{}`: `5m` is 5·m); `thousand`, `million`, `billion`,
   `dozen` multiply (`5\\text{ thousand}` == `5000`); any other trailing text makes the answer text, equal
   only to the same text (`5 squared`, `2\\text{ or 3}`, `5\\text{ is not the answer}` != `5`).
9. Notation: `\\begin{array}{…}…\\end{array}` (in any brackets) and `bmatrix` are the `pmatrix` with
   the same entries; thousands written `11,\\! 111` are one number (a plain `32, 349` stays a list);
   math delimiters inside an answer (`\\(1\\) and \\(-2\\)`) and a lone `$` are dropped; repeating
   decimals `0.1\\overline{6}`, `0.\\bar{3}`, `0.(3)`, `0.\\dot{3}` are the exact rationals they denote;
   `\\quadx` is `\\quad x`; `{n \\choose k}` is `\\binom{n}{k}`; `\\color`, `\\hspace`, `\\phantom{…}` are
   dropped; `5²` is `5^{2}`; `\\sin 30^\\circ` is the sine of 30 degrees (elsewhere degrees are dropped,
   as before); an odd root of a negative number is real (`\\sqrt[3]{-8}` == `-2`); `4210_{5}` is a base-5
   numeral: equal to the same digits in base 5 or without a base, or (written against a bare number) to
   its value (`10_2` == `2`), never to the same digits in another base; digits separated by spaces are
   separate values (`1 2 3` != `123`), except thousands groups (`10 000`).
10. `x \\approx v`: with a label on the left, the value it states is v (`x \\approx 0.33` == `0.33`).
   After an exact value (`x = \\frac13 \\approx 0.33`, `\\pi \\approx 3.14`, `e \\approx 2.718`) the
   exact value is stated, and the approximation must round it to within one unit of its last digit
   (`x = 5 \\approx 7` is incorrect).
11. A huge answer against an ordinary reference is `incorrect`, never an error or a timeout: exact
   numbers are compared without writing them out (`10^{4400}`, `1e10000`), and a value over a size cap
   (`(10!)!`, `e^{e^{e^{e^e}}}`, read without evaluating it) is compared by its order of magnitude.

Known limits (pinned in the tables): decimal commas (`1000,99`) are lists, not numbers; ratios are
text (`11:21` != `22:42`); answers in another variable name are different (`f(x)` != `f(y)`);
parenthetical notes are text (`x=2 (double root)` != `2`); `\\zeta(2)` is not evaluated.
"""

from __future__ import annotations

import math as pymath
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import cast

from audit.graders import Judgment, register
from audit.graders.math.engine import (
    GROUPING_RE,
    Assignment,
    Caps,
    Cmp,
    Equation,
    Expr,
    NeedsSympy,
    Number,
    ParseError,
    Seq,
    SideError,
    Text,
    Union,
    WithUnit,
    fmt,
    numeric_value,
    short,
)
from audit.graders.math.latex import (
    GREEK,
    NUMBER_RE,
    RELATION_RE,
    TIMES_TEN_RE,
    balanced,
    enclosing,
    expand_pm,
    is_variable,
    match_brace,
    split_top,
    text_key,
)
from audit.graders.math.v2 import _BARE_SCRIPT_RE, MathEquiv2

# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class NumericTolerance:
    """A numeric tolerance that a benchmark's official grader names; never a default."""

    name: str
    """Short name recorded in every verdict it decides (e.g. `gsm8k-official`)."""
    source: str
    """The official grader that names it: repository, path, commit."""
    rel: str = "0"
    """Relative tolerance as an exact decimal string."""
    abs: str = "0"
    """Absolute tolerance as an exact decimal string."""


@dataclass(frozen=True)
class MathEquiv3Config:
    """Everything that changes a verdict besides code; part of the fingerprint."""

    budget_s: float = 5.0
    """Hard wall-clock budget per item for the symbolic step (timeout, never incorrect)."""
    tolerance: NumericTolerance | None = None
    """A named numeric tolerance; None (exact numbers) unless a benchmark's official grader names one."""
    caps: Caps = Caps()
    """The size caps and pinned libraries, shared by every version; here `max_exact_exponent` is also the
    most digits of a factorial or an exponential evaluated exactly (rule 11)."""


CONFIG = MathEquiv3Config()

# --------------------------------------------------------------------------- nodes and errors


@dataclass(frozen=True)
class Chain:
    """`x = 2+3 = 5`: the value a chain states, and its constant parts, which must all be equal (rule 3)."""

    value: object
    parts: tuple
    raw: str


@dataclass(frozen=True)
class Approx:
    """`\\pi \\approx 3.14`: an exact value and the approximation written after it (rule 10)."""

    value: object
    approx: Fraction
    unit: Fraction
    """One unit of the approximation's last written digit."""
    raw: str


@dataclass(frozen=True)
class BaseNumber:
    """`4210_{5}`: digits in a base (rule 9)."""

    digits: str
    """Without leading zeros (`0` for zero)."""
    base: int

    @property
    def value(self) -> int:
        return int(self.digits, self.base)


class TooLarge(ParseError):
    """A value over a size cap, read without evaluating it; `log10`: its order of magnitude when known."""

    def __init__(self, message: str, log10: float | None):
        super().__init__(message)
        self.log10 = log10


class NonReal(ParseError):
    """A relation with a non-real side (`x > -2+7i`): no set of reals."""


class TooLargeSide(SideError):
    def __init__(self, side: str, message: str, log10: float | None):
        super().__init__(side, message)
        self.log10 = log10


class NonRealSide(SideError):
    pass

# --------------------------------------------------------------------------- patterns

_THOUSANDS_BANG_RE = re.compile(r"(\d)\s*(?:,|\{,\})\s*\\!\s*(?=\d{3}(?!\d))")
"""`11,\\! 111`: a thousands separator with TeX's negative space, whatever spaces follow it."""
_BRACED_COMMA_RE = re.compile(r"(\d)\s*\{\s*,\s*\}\s*(?=\d{3}(?!\d))")
"""`14 {, }916`: a thousands separator in braces, with stray spaces."""
_DOUBLED_BACKSLASH_RE = re.compile(
    r"(?<!\\)\\\\(?=(?:frac|dfrac|tfrac|sqrt|left|right|pi|le|ge|leq|geq|lt|gt|ne|neq|cdot|times|infty|text|"
    r"mathrm|boxed|in|cup|pm|circ)(?![A-Za-z]))")
"""`\\\\frac` (a JSON- or raw-string-escaped `\\frac`): a line break followed by the letters `frac` means
nothing in TeX, so it is read as the command."""
_UPRIGHT_LETTER_RE = re.compile(r"\\(?:mathrm|mathit|operatorname)\s*\{\s*([A-Za-z])\s*\}")
"""`\\mathrm{e}`, `\\mathrm{i}`: an upright constant is the letter (@2 read it as text)."""
_INNER_DELIMITERS_RE = re.compile(r"(?<!\\)\\[()\[\]]|(?<!\\)\$")
"""Math delimiters left inside an answer (`\\(1\\) and \\(-2\\)`, `12 $ and $13`) and a lone `$` (`$1,000`):
never content (`\\$` is a dollar sign, dropped by @2's pass)."""
_REPEATING_RE = re.compile(
    r"^([-+]?)(\d*)\.(\d*)(?:\\overline\{(\d+)\}|\\bar\{(\d+)\}|\((\d+)\)|\\dot\{(\d)\})$")
"""`0.\\overline{3}`, `1.2\\overline{45}`, `0.\\bar{3}`, `0.(3)`, `0.\\dot{3}`: a repeating decimal, an exact
rational."""
_QUAD_RE = re.compile(r"\\q?quad")
"""`\\quad`, `\\qquad`, also glued to the next word (`\\quadx_{2}`)."""
_ARRAY_RE = re.compile(
    r"(?:\\left\s*)?([(\[]?)\s*\\begin\{(?:array\}\{[^{}]*|[bB]?matrix|smallmatrix)\}(.*?)"
    r"\\end\{(?:array|[bB]?matrix|smallmatrix)\}\s*(?:\\right\s*)?([)\]]?)", re.DOTALL)
_TEXT_CONNECTOR_RE = re.compile(r"\\(?:text|mbox|textrm|mathrm|textnormal|textbf)\s*\{\s*(and|or)\s*\}")
_WORD_CONNECTOR_RE = re.compile(r"(?<![A-Za-z\\])(and|or)(?![A-Za-z])")
_OR_SEPS = (r"\lor", r"\vee", r"\text{or}")
_CHOOSE_BRACED_RE = re.compile(r"(?<!\\)\{\s*([^{}]+?)\s*\\choose\s*([^{}]+?)\s*\}")
_CHOOSE_RE = re.compile(r"^([^{}]+?)\s*\\choose\s*([^{}]+)$")
"""`{5 \\choose 2}`, `5 \\choose 2`: the binomial coefficient `\\binom{5}{2}`."""
_INVISIBLE_RE = re.compile(r"\\(?:hspace|vspace|hphantom|vphantom|phantom|color)\*?\s*(?=\{)")
"""Commands whose argument is never content: spacing, invisible boxes, a colour name."""
_TEXTCOLOR_RE = re.compile(r"\\textcolor\s*\{[^{}]*\}")
_REALS_RE = re.compile(r"\\(?:mathbb\s*(?:\{\s*R\s*\}|R(?![A-Za-z]))|R(?![A-Za-z]))(?!\s*[\^_])")
"""`\\mathbb{R}`: every real number, `(-\\infty,\\infty)` (not `\\mathbb{R}^2`)."""
_FRENCH_INTERVAL_RE = re.compile(r"^([\[\]])(.+),(.+)([\[\]])$")
_SUPERSCRIPTS = (("\u00b2", "^{2}"), ("\u00b3", "^{3}"), ("\u00b9", "^{1}"), ("\u2070", "^{0}"), ("\u2074", "^{4}"))
_TRIG_DEGREES_RE = re.compile(
    r"((?<![A-Za-z])\\(?:sin|cos|tan|cot|sec|csc)|(?<![A-Za-z\\])(?:sin|cos|tan|cot|sec|csc))(?![A-Za-z])\s*"
    r"([({])?\s*([-+]?\d+(?:\.\d+)?)\s*(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![A-Za-z])|\\degree(?![A-Za-z]))"
    r"\s*([)}])?")
"""`\\sin 30^\\circ`, `\\cos(60^\\circ)`: a trigonometric function of degrees (rule 9)."""
_SPACED_DIGITS_RE = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?:\s+\d+(?:\.\d+)?)+(?![\d.])")
_SPACE_THOUSANDS_RE = re.compile(r"\d{1,3}(?: \d{3})+(?:\.\d+)?")
SEPARATE = "\u2423"
"""Marks the space between two numbers that are not one thousands-grouped number (`1 2 3`); never glued."""
_LABELLED_THOUSANDS_RE = re.compile(r"^([^=]+?)=([-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?)($|\\text\{.*)$")
_SET_BUILDER_RE = re.compile(
    r"^\\\{\s*([A-Za-z])\s*(?:\\in\s*\(-\\infty,\\infty\)\s*)?(?:\\mid|\||:)\s*(.+?)\s*\\\}$")
_LABEL_PREFIX_RE = re.compile(r"^(?:m\s*)?\\(?:angle|measuredangle|overline|overarc|widehat|overrightarrow|vec)\s*")
_NAME_RE = re.compile(
    r"^(?:[A-Za-z]{1,4}|\\(?:" + GREEK + r")|\\text\{[A-Za-z ]{1,20}\}|\{[A-Za-z]{1,4}\})"
    r"(?:_\{?[A-Za-z0-9]{1,6}\}?)?'*(?:\([A-Za-z0-9, ]{0,12}\))?$")
"""A name inside a label: `AB`, `V_{1}`, `S_{MBCN}`, `\\theta`, `f(x)`."""
_ONE_NAME = r"(?:[A-Za-z]|\\(?:" + GREEK + r")|\\mathbf\{[A-Za-z]\}|\\vec\{?[A-Za-z]\}?)"
_NAMED_LABEL_RE = re.compile(
    r"^(?:\[[A-Z]{2,8}\]"  # [ABC]: an area
    r"|\\det\s*(?:\(\s*<N>\s*\)|\{?\s*<N>\s*\}?)"  # \det A
    r"|\\(?:sin|cos|tan|cot|sec|csc|log|ln)(?:\^\{?2\}?)?\s*(?:\(\s*<N>\s*\)|\{\s*<N>\s*\}|<N>)"  # \cos\theta
    r"|[A-Za-z]\^\{-1\}\s*\(\s*[A-Za-z0-9]{1,6}\s*\)"  # f^{-1}(x)
    r"|<N>_\{\\(?:max|min)\}"  # x_{\max}
    r"|\\\|\s*<N>\s*\\\||\\lVert\s*<N>\s*\\rVert"  # \|v\|
    r"|(?:P|\\Pr|\\mathbb\{P\})\s*\([^()=<>]{1,40}\)"  # P(\text{heads})
    # \text{Area of } \triangle ABC
    r"|(?:\\#\s*)?(?:\\text\{[A-Za-z' ]{1,30}\}\s*)+(?:\\(?:triangle|angle)\s*[A-Z]{1,4})?"
    r")$".replace("<N>", _ONE_NAME))
"""Labels that name a quantity through a function or words (rule 4)."""
_INDEXED_RE = re.compile(r"^([A-Za-z]+|\\[A-Za-z]+)_\{?\d+\}?$")
"""`x_1`, `x_{2}`: members of an indexed family (roots of one unknown)."""
_CONSTANT_COMMANDS_RE = re.compile(r"\\(?:frac|sqrt|pi|cdot|times|div|infty|circ|left|right|ln|log|sin|cos|tan)"
                                   r"(?![A-Za-z])")
_PLAIN_DECIMAL_RE = re.compile(r"^[-+]?\d+(?:\.(\d+))?$")
_COORDINATES = ("x", "y", "z")

_UNIT_NAMES = frozenset("""
mm cm dm m km in inch inches ft foot feet yd yard yards mi mile miles meter meters metre metres centimeter
centimeters centimetre centimetres millimeter millimeters millimetre millimetres kilometer kilometers kilometre
kilometres acre acres hectare hectares unit units g kg mg gram grams kilogram kilograms milligram milligrams lb lbs
pound pounds oz ounce ounces ton tons tonne tonnes s sec secs second seconds min mins minute minutes h hr hrs hour
hours day days week weeks month months year years yr yrs am pm a.m p.m dollar dollars cent cents yuan euro euros
rupee rupees yen degree degrees deg radian radians rad percent pct percentage l ml liter liters litre litres gallon
gallons gal quart quarts pint pints cup cups mph kph way ways people person persons student students child children
boy boys girl girls handshake handshakes
""".split())
"""Words that name a unit or what is counted: dropped after a number (rule 8). Nothing that scales,
negates or adds to the number (`thousand`, `squared`, `halves`, `or`, `not`) is here."""
_UNIT_LETTERS = frozenset("mgshlLCFK")
_UNIT_PHRASE_RE = re.compile(
    r"^(?:(?:square|sq\.?|cubic|cu\.?)\s*)?([a-z.]+)(?:\s*(?:/|per)\s*([a-z.]+))?(?:\s*\^\s*\{?[23]\}?)?$")
_MULTIPLIERS = {"hundred": 100, "thousand": 1000, "million": 10 ** 6, "billion": 10 ** 9, "trillion": 10 ** 12,
                "dozen": 12}
"""Words after a number that scale it exactly (`5\\text{ thousand}` is 5000)."""
_GLUED_UNIT_RE = re.compile(r"^([-+]?\d+(?:\.\d+)?)(cm|mm|km|kg|mg|ft|mph|kph|ml)(\^\{?[23]\}?)?$")
"""`5cm`: a unit of two or more letters glued to a number (`5m` stays 5·m)."""


def is_unit(text: str) -> bool:
    """Is `text` (the words after a number) a unit from the whitelist (rule 8)?"""
    t = text.strip()
    if t in _UNIT_LETTERS or t in ("st", "nd", "rd", "th"):  # `5\text{th}`: an ordinal suffix
        return True
    t = re.sub(r"\s+", " ", t.lower()).rstrip(".")
    m = _UNIT_PHRASE_RE.match(t)
    return m is not None and all(w is None or w.rstrip(".") in _UNIT_NAMES or w in _UNIT_NAMES for w in m.groups())


def _log10_int(n: int) -> float:
    """log10 of a positive integer of any size, in floats."""
    shift = max(n.bit_length() - 64, 0)
    return pymath.log10(n >> shift) + shift * pymath.log10(2)


def magnitude(e) -> float | None:
    """An estimate of log10|e| for trees of numbers, powers, products, sums, exponentials and factorials,
    computed in floats without evaluating e (towers stay cheap); None when e is of another kind.
    Sums give an upper bound only (terms may cancel)."""
    import sympy

    if e.is_Integer or e.is_Rational:
        p, q = abs(int(e.p)), int(e.q)
        if p == 0:
            return float("-inf")
        return _log10_int(p) - _log10_int(q)
    if e.is_Float:
        return pymath.log10(abs(float(e))) if e != 0 else float("-inf")
    if e == sympy.pi:
        return pymath.log10(pymath.pi)
    if e == sympy.E:
        return pymath.log10(pymath.e)
    if isinstance(e, sympy.Pow):
        lb, lx = magnitude(e.base), magnitude(e.exp)
        if lb is None or lx is None:
            return None
        if lx > 300:
            return float("inf") if lb != 0 else 0.0
        x = 10.0 ** lx
        return x * lb if (e.exp.is_extended_negative is not True) else -x * lb
    if isinstance(e, sympy.exp):
        lx = magnitude(e.args[0])
        if lx is None:
            return None
        if lx > 300:
            return float("inf") if e.args[0].is_extended_negative is not True else float("-inf")
        x = 10.0 ** lx * pymath.log10(pymath.e)
        return x if e.args[0].is_extended_negative is not True else -x
    if isinstance(e, sympy.factorial):
        lx = magnitude(e.args[0])
        if lx is None or e.args[0].is_extended_negative:
            return None
        if lx > 300:
            return float("inf")
        return pymath.lgamma(10.0 ** lx + 1) / pymath.log(10)
    if isinstance(e, (sympy.Mul, sympy.Add)):
        parts = [magnitude(a) for a in e.args]
        known = [p for p in parts if p is not None]
        if len(known) < len(parts):
            return None
        return sum(known) if isinstance(e, sympy.Mul) else max(known) + pymath.log10(len(known))
    return None


def exact_text(x: Fraction) -> str:
    """An exact number for a reason without writing out a huge one (`about 10^4400`)."""
    if max(x.numerator.bit_length(), x.denominator.bit_length()) <= 3_000:
        return fmt(x)
    k = (abs(x.numerator).bit_length() - x.denominator.bit_length()) * pymath.log10(2)
    return f"{'-' if x < 0 else ''}about 10^{k:.0f}"


def sympy_text(x) -> str:
    """`short`, without writing out a huge exact number."""
    if getattr(x, "is_Rational", False):
        return exact_text(Fraction(int(x.p), int(x.q)))
    return short(x)


class MathEquiv3(MathEquiv2):
    """@2 with exact numbers, proofs, labels, word-joined lists, assignments in order; see the module docstring."""

    def __init__(self, config: MathEquiv3Config = CONFIG) -> None:
        super().__init__(config)
        self._held: dict[object, bool] = {}

    # -- entry point (rule 11) ------------------------------------------------------------------

    def unreadable(self, e: SideError, node_r: object) -> Judgment:
        """The engine's parse error; an answer over a size cap against an ordinary reference is `incorrect`."""
        log10 = e.log10 if isinstance(e, TooLargeSide) and e.side == "answer" else None
        if log10 is not None and self.far_from(log10, node_r):
            size = "astronomically large" if pymath.isinf(log10) else f"about 10^{log10:.3g}"
            return Judgment(False, "incorrect", f"not equal: the answer is {size} ({e}); "
                                                f"the reference is an ordinary number")
        return super().unreadable(e, node_r)

    def far_from(self, log10: float | None, reference: object) -> bool:
        """Is a value of magnitude 10^log10 (an estimate) surely not the reference's value?"""
        if log10 is None or pymath.isnan(log10) or log10 == float("-inf"):
            return False  # unknown, or the answer may be 0
        if isinstance(reference, Assignment):
            reference = reference.value
        if not isinstance(reference, (Number, Expr)):
            return False
        try:
            er = self.leaf_sympy(reference, "reference")
        except SideError:
            return False
        vr = numeric_value(er) if getattr(er, "is_number", False) else None
        if vr is None:
            return False
        if vr == 0:
            return True  # the answer is a product of powers of nonzero numbers, never 0
        lr = pymath.log10(float(abs(vr))) if abs(vr) > 0 else float("-inf")
        return abs(lr) <= 300 and abs(log10) >= 1_000 and abs(lr) <= abs(log10) / 10

    # -- normalization (rules 5, 7, 9) ----------------------------------------------------------

    def normalize_once(self, s: str) -> str:
        """@2's pass between a step before it (thousands, `\\quad`, matrices, word connectors, invisible
        commands, binomials, the reals) and one after (stray separators, French intervals)."""
        s = _DOUBLED_BACKSLASH_RE.sub(r"\\", s)
        s = _THOUSANDS_BANG_RE.sub(r"\1,", s)
        s = _BRACED_COMMA_RE.sub(r"\1,", s)
        s = _QUAD_RE.sub(" ", s)
        s = _UPRIGHT_LETTER_RE.sub(r"\1", s)
        s = self.drop_invisible(s)
        s = _CHOOSE_BRACED_RE.sub(r"\\binom{\1}{\2}", s)
        s = _CHOOSE_RE.sub(r"\\binom{\1}{\2}", s)
        s = _REALS_RE.sub(r"(-\\infty,\\infty)", s)
        dollars = len(re.findall(r"(?<!\\)\$", s))
        if dollars % 2 or _INNER_DELIMITERS_RE.search(s.strip()[1:-1]):  # a lone `$` (currency) or inner
            s = _INNER_DELIMITERS_RE.sub(" ", s)  # delimiters go; an outer `$…$` alone is @2's to unwrap
        s = _ARRAY_RE.sub(self._as_pmatrix, s)
        s = _TEXT_CONNECTOR_RE.sub(lambda m: f" {m.group(1)} ", s)
        s = self._top_level_sub(_WORD_CONNECTOR_RE, lambda m: " , " if m.group(1) == "and" else r" \text{or} ", s)
        s = super().normalize_once(s)
        s = re.sub(r",\s*(?=,)", "", s)  # `16, and 11` → `16, , 11` → `16, 11`
        s = s.strip(", ")
        if s.startswith(r"\text{or}"):
            s = s[len(r"\text{or}"):]
        return self.french_interval(s)

    @staticmethod
    def drop_invisible(s: str) -> str:
        """`\\hspace{1cm}`, `\\phantom{6}`, `\\color{red}` go with their argument; `\\textcolor{red}{5}` is `5`."""
        s = _TEXTCOLOR_RE.sub("", s)
        for _ in range(8):
            m = _INVISIBLE_RE.search(s)
            if not m:
                break
            end = match_brace(s, m.end())
            if end < 0:
                break
            s = s[:m.start()] + s[end + 1:]
        return s

    @staticmethod
    def french_interval(s: str) -> str:
        """`]1,2]` → `(1,2]`, `[1,2[` → `[1,2)`: a bracket turned outwards is open."""
        m = _FRENCH_INTERVAL_RE.match(s)
        if not m or (m.group(1) == "[" and m.group(4) == "]"):
            return s
        inner = m.group(2) + "," + m.group(3)
        if not balanced(inner) or len(split_top(inner, (",",))) != 2:
            return s
        return ("(" if m.group(1) == "]" else "[") + inner + (")" if m.group(4) == "[" else "]")

    def replace_symbols(self, s: str) -> str:
        """@2's symbols, and superscript digits (`5²` → `5^{2}`)."""
        for a, b in _SUPERSCRIPTS:
            s = s.replace(a, b)
        return super().replace_symbols(s)

    def drop_degrees(self, s: str) -> str:
        """A trigonometric function of degrees takes radians (`\\sin 30^\\circ` → `\\sin{\\frac{30\\pi}{180}}`);
        other degree signs are dropped as before."""
        def radians(m: re.Match) -> str:
            opened, closed = m.group(2), m.group(4)
            if (opened or closed) and (opened, closed) not in (("(", ")"), ("{", "}")):
                return m.group(0)
            return f"{m.group(1)}{{\\frac{{{m.group(3)}\\pi}}{{180}}}}"

        return super().drop_degrees(_TRIG_DEGREES_RE.sub(radians, s))

    def squeeze(self, s: str) -> str:
        """@2's squeeze; numbers separated only by spaces stay apart (`1 2 3`), unless they are
        thousands groups (`10 000`). @2's script bracing (`\\log_2 8`) goes first, as in @2."""
        def mark(m: re.Match) -> str:
            run = re.sub(r"\s+", " ", m.group(0))
            return run if _SPACE_THOUSANDS_RE.fullmatch(run) else re.sub(r" ", SEPARATE, run)

        s = _BARE_SCRIPT_RE.sub(r"\1{\2}", s)
        return super().squeeze(_SPACED_DIGITS_RE.sub(mark, s))

    @staticmethod
    def _as_pmatrix(m: re.Match) -> str:
        opened, body, closed = m.group(1), m.group(2), m.group(3)
        matrix = r"\begin{pmatrix}" + body.strip() + r"\end{pmatrix}"
        if bool(opened) != bool(closed):  # a bracket that belongs to something else: keep it
            return opened + matrix + closed
        return matrix

    @staticmethod
    def _top_level_sub(pattern: re.Pattern, repl, s: str) -> str:
        """`pattern.sub(repl, s)` outside TeX braces only (`\\text{Devon and Evelyn}` keeps its `and`)."""
        out, depth, start = [], 0, 0
        i = 0
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "{":
                if depth == 0:
                    out.append(pattern.sub(repl, s[start:i]))
                    start = i
                depth += 1
            elif c == "}" and depth > 0:
                depth -= 1
                if depth == 0:
                    out.append(s[start:i + 1])
                    start = i + 1
            i += 1
        out.append(pattern.sub(repl, s[start:]) if depth == 0 else s[start:])
        return "".join(out)

    # -- structure (rules 3-8) -------------------------------------------------------------------

    def parse(self, s: str, top: bool = True) -> object:
        """The engine's parse, after three readings of a whole answer: a labelled thousands number
        (`n = 1,000`), set-builder notation (`\\{x \\mid x > 2\\}`), one tuple with one `\\pm`."""
        if top:
            m = _LABELLED_THOUSANDS_RE.match(s)
            if m and not m.group(1).lstrip().startswith("(") and self.is_label(m.group(1)):
                s = f"{m.group(1)}={m.group(2).replace(',', '')}{m.group(3)}"
        m = _SET_BUILDER_RE.match(s)
        if m and RELATION_RE.search(m.group(2)) and re.search(rf"(?<![A-Za-z\\]){m.group(1)}(?![A-Za-z])", m.group(2)):
            return self.parse_element(m.group(2))
        enc = enclosing(s) if top else None
        if enc and enc[:2] == ("(", ")") and s.count(r"\pm") + s.count(r"\mp") == 1 and \
                len(split_top(enc[2], (",",))) > 1:
            pm = expand_pm(s)
            if pm and len(pm) == 2:
                return Seq("list", "", "", tuple(self.parse(x, top=False) for x in pm))
        return super().parse(s, top)

    def parse_alternatives(self, s: str) -> object | None:
        """`;` between solutions that contain commas, then `\\cup` (a union), then `or` (a union of
        inequalities, else one list of values); None when `s` has none of them."""
        groups = split_top(s, (";",))
        if len(groups) > 1 and any(len(split_top(g, (",",))) > 1 for g in groups):
            self.check_count(len(groups))
            return Seq("list", "", "", tuple(self.as_group(self.parse(g, top=False)) for g in groups))
        parts = split_top(s, (r"\cup",))
        if len(parts) > 1:
            self.check_count(len(parts))
            return Union(tuple(self.parse(p, top=False) for p in parts))
        parts = split_top(s, _OR_SEPS)
        if len(parts) > 1:
            self.check_count(len(parts))
            nodes = tuple(self.parse(p, top=False) for p in parts)
            if any(RELATION_RE.search(p) for p in parts):
                return Union(nodes)  # x<2 or x>3: a union of sets of reals
            flat = tuple(y for x in nodes for y in (x.items if isinstance(x, Seq) and x.kind == "list" else (x,)))
            return self.list_of(flat)  # `21, 16 or 11`: one list
        return None

    @staticmethod
    def as_group(node: object) -> object:
        """One solution of a `;`-separated answer: its comma list is a tuple (`p=5,q=2` is (p,q)=(5,2))."""
        if isinstance(node, Seq) and node.kind == "list":
            return Seq("tuple", "(", ")", node.items)
        return node

    def list_of(self, items: tuple) -> object:
        """A top-level list, with its assignments read (rule 6)."""
        first = items[0]
        rest = items[1:]
        if rest and not any(self._has_assignment(x) for x in rest):
            if isinstance(first, Assignment):  # `a = 4, -8, -10`: values of one variable
                items = (first,) + tuple(Assignment(first.variable, x, first.lhs, "") for x in rest)
            elif self._assignment_tuple(first):  # `(x, y) = (5, 8), (8, 5)`
                names = [x.variable for x in first.items]
                items = (first,) + tuple(
                    Seq("tuple", "(", ")", tuple(Assignment(n, v, n, "") for n, v in zip(names, x.items, strict=True)))
                    if isinstance(x, Seq) and x.kind == "tuple" and len(x.items) == len(names) else x
                    for x in rest)
        if all(isinstance(x, Assignment) for x in items) and len({x.variable for x in items}) == 1:
            first = items[0]
            return Assignment(first.variable, Seq("list", "", "", tuple(x.value for x in items)), first.lhs, "")
        return Seq("list", "", "", items)

    @staticmethod
    def _assignment_tuple(node: object) -> bool:
        return isinstance(node, Seq) and node.kind == "tuple" and bool(node.items) and \
            all(isinstance(x, Assignment) for x in node.items)

    def _has_assignment(self, node: object) -> bool:
        return isinstance(node, Assignment) or self._assignment_tuple(node)

    element_readers = MathEquiv2.readers_after({"read_empty_set": ("read_separated",),
                                                "read_unit": ("read_glued_unit",)})
    """The engine's readers, and rule 9's spaced digits and glued units; rules 8 and 9 override
    `trailing_text` and `base_numeral`, rules 3 and 10 `parse_equation`."""

    @staticmethod
    def read_separated(s: str) -> object | None:
        """`1 2 3` (marked by `squeeze`): separate numbers are not one number, the element is text."""
        return Text(text_key(s), s) if SEPARATE in s else None

    def read_glued_unit(self, s: str) -> object | None:
        """`5cm`: a number and a unit of two or more letters glued to it (rule 9)."""
        m = _GLUED_UNIT_RE.match(s)
        return WithUnit(self.parse_element(m.group(1)), m.group(2) + (m.group(3) or "")) if m else None

    def trailing_text(self, value: str, text: str, power: str, s: str) -> object:
        """Rule 8: `5\\text{ cm}` is 5 with a unit, `5\\text{ thousand}` is 5000, `5\\text{ squared}` is text."""
        if is_unit(text):
            return super().trailing_text(value, text, power, s)
        scale = _MULTIPLIERS.get(text.strip().lower())
        num = self.plain_number(value.strip()) if scale and not power else None
        if num is not None:
            return Number(num.value * scale)
        return Text(text_key(s), s)

    def base_numeral(self, digits: str, base: int, s: str) -> object:
        """`4210_{5}`: a numeral in base 2-36 (rule 9); digits the base does not have make it text."""
        if not 2 <= base <= 36 or any(int(d, 36) >= base for d in digits):
            return Text(text_key(s), s)
        return BaseNumber(digits.lstrip("0") or "0", base)

    def parse_equation(self, s: str) -> object | None:
        """Labels, assignments, `number = expression`, chains, approximations and equations (rules 3, 4,
        10); None if `s` has no `=`, `\\in` or `\\approx`."""
        approx = split_top(s, (r"\approx",))
        if len(approx) > 1:
            if not approx[0]:
                raise ParseError(f"approximation with an empty side: '{s}'")
            exact = approx[0]
            if len(approx) == 2 and self.is_label(exact) and not self._is_euler(exact, approx[1]):
                return self.assign(exact, "", self.parse(approx[1], top=False))  # `x \approx 0.33`: the value it states
            node = self.parse_exact(exact)  # `x = \frac13 \approx 0.33`: the exact value before the approximation
            if node is None:
                node = self.parse_element(exact)
            return self.approximated(node, approx[1])
        return self.parse_exact(s)

    def parse_exact(self, s: str) -> object | None:
        """`\\in`, labels, chains and equations of an exact statement; None without `=` or `\\in`."""
        parts = split_top(s, (r"\in",))
        if len(parts) == 2 and self.is_label(parts[0]):
            return self.assign(parts[0], "", self.parse(parts[1], top=False))
        parts = split_top(s, ("=",))
        if len(parts) == 1:
            return None
        if any(not p for p in parts):
            raise ParseError(f"equation with an empty side: '{s}'")
        if self.is_label(parts[0]):
            value = self._chain_value(parts[1:])
            return self.assign(parts[0], value, self.chained(parts[1:], value))
        if all(self.is_constant(p) for p in parts):  # `2+3 = 5`: true chains only
            return self.chained(parts, parts[-1])
        if self.is_constant(parts[0]) and not self._is_zero(parts[0]):  # `7 = 11a+c`: the value 7
            value = self._chain_value(parts)
            label = "=".join(p for p in parts if p != value)
            return Assignment(GROUPING_RE.sub("", label), self.chained(parts, value), label, value)
        if len(parts) > 2:
            value = self._chain_value(parts)
            return self.chained(parts, value)
        return Equation(parts[0], parts[1], s)

    def chained(self, parts: list[str], value: str) -> object:
        """The node of `value`; a Chain when two or more parts are constants (all must be equal)."""
        node = self.parse(value, top=False)
        consts = [p for p in parts if self.is_constant(p)]
        if len(consts) < 2:
            return node
        return Chain(node, tuple(self.parse(p, top=False) for p in consts), "=".join(parts))

    def approximated(self, node: object, approx: str) -> object:
        """An exact value followed by `\\approx approx` (rule 10): the approximation, when a plain decimal,
        is kept to be checked against the value."""
        m = _PLAIN_DECIMAL_RE.match(approx.strip())
        if not m:
            return node
        unit = Fraction(1, 10 ** len(m.group(1) or ""))
        if isinstance(node, Assignment):
            return replace(node, value=Approx(node.value, Fraction(approx.strip()), unit, approx))
        return Approx(node, Fraction(approx.strip()), unit, approx)

    @staticmethod
    def _is_euler(left: str, approx: str) -> bool:
        """`e \\approx 2.718`: Euler's number (its approximation says so), not a label `e`."""
        m = _PLAIN_DECIMAL_RE.match(approx.strip())
        if left != "e" or not m:
            return False
        return abs(Fraction(approx.strip()) - Fraction(pymath.e)) <= Fraction(1, 10 ** len(m.group(1) or ""))

    def _chain_value(self, parts: list[str]) -> str:
        """The value a chain `a = b = c` states: its last constant part, else its last part."""
        consts = [p for p in parts if self.is_constant(p)]
        return consts[-1] if consts and len(parts) > 1 else parts[-1]

    @staticmethod
    def is_constant(s: str) -> bool:
        """No variables: only digits, operators and constant commands (`\\frac`, `\\sqrt`, `\\pi`, …)."""
        return not re.search(r"[A-Za-z]", _CONSTANT_COMMANDS_RE.sub("", s))

    @staticmethod
    def _is_zero(s: str) -> bool:
        return bool(re.fullmatch(r"[-+]?0+(?:\.0*)?", s.strip()))

    def is_label(self, s: str) -> bool:
        """A left side that names a quantity (rule 4): a variable, `|AB|`, `A:B`, `\\frac{NO}{BO}`, `\\angle A`,
        `[ABC]`, `\\det A`, `\\cos\\theta`, `f^{-1}(x)`, `x_{\\max}`, `\\|v\\|`, `P(A)`, words; never `\\pi`."""
        s = s.strip()
        if s == r"\pi":
            return False
        if is_variable(s) or _NAMED_LABEL_RE.match(s):
            return True
        s = _LABEL_PREFIX_RE.sub("", s)
        if len(s) > 2 and s[0] == "|" and s[-1] == "|":
            s = s[1:-1].strip()
        frac = re.fullmatch(r"\\frac\{([^{}]+)\}\{([^{}]+)\}", s)
        if frac:
            return all(_NAME_RE.match(self._name(x)) for x in frac.groups())
        parts = s.split(":") if ":" in s else s.split("/")
        return all(_NAME_RE.match(self._name(p)) for p in parts)

    @staticmethod
    def _name(s: str) -> str:
        s = _LABEL_PREFIX_RE.sub("", s.strip())
        if len(s) > 2 and s[0] == "|" and s[-1] == "|":
            s = s[1:-1]
        return s.strip()

    def decimal_number(self, mantissa: str, exponent: int) -> Number:
        """Rule 1: a decimal is the exact rational it writes (`4.50` == `4.5`); no stated precision is kept."""
        return Number(Fraction(mantissa) * Fraction(10) ** exponent)

    def fraction_number(self, s: str) -> Number | None:
        """@2's fractions, and a repeating decimal (`0.1\\overline{6}`, `0.\\bar{3}`, `0.(3)`, `0.\\dot{3}`)
        as the exact rational it denotes."""
        m = _REPEATING_RE.match(s)
        if m:  # 0.1\overline{6} = (16 - 1) / 90
            sign, whole, fixed = m.group(1), m.group(2), m.group(3)
            rep = next(g for g in m.groups()[3:] if g is not None)
            repeating = Fraction(int(rep), 10 ** len(rep) - 1)
            v = int(whole or 0) + (Fraction(int(fixed or 0)) + repeating) / 10 ** len(fixed)
            return Number(-v if sign == "-" else v)
        return super().fraction_number(s)

    # -- comparison (rules 1, 3, 6, 7, 9, 10) ----------------------------------------------------

    def same(self, a: object, r: object, cx: Cmp) -> bool:
        """The engine's comparison after the checks of this version: a chain or an approximation must hold
        (a false one in the answer is incorrect, in the reference a parse error); base numerals; a union of
        intervals against an interval."""
        for side, node in (("answer", a), ("reference", r)):
            inner = node.value if isinstance(node, Assignment) else node
            if isinstance(inner, (Chain, Approx)) and not self.holds(inner, side, cx):
                if side == "reference":
                    raise SideError("reference", f"the reference states a false equality: {cx.reason}")
                return False
        if isinstance(a, (Chain, Approx)):
            return self.same(a.value, r, cx)
        if isinstance(r, (Chain, Approx)):
            return self.same(a, r.value, cx)
        wrapped = (Assignment, WithUnit, Seq, Union)
        if (isinstance(a, BaseNumber) or isinstance(r, BaseNumber)) and not isinstance(a, wrapped) and \
                not isinstance(r, wrapped):
            return self.same_base(a, r, cx)
        if isinstance(a, Union) != isinstance(r, Union) and isinstance(a if isinstance(r, Union) else r, Seq) and \
                not self.has_inequality(a) and not self.has_inequality(r):
            if cx.fast:
                raise NeedsSympy()
            decided = self.same_real_sets(a, r, cx)
            if decided is not None:
                return decided
        return super().same(a, r, cx)

    def holds(self, node: Chain | Approx, side: str, cx: Cmp) -> bool:
        """Is a chain true (its constant parts equal) or an approximation a rounding of its value (rules 3, 10)?"""
        if node in self._held:
            if not self._held[node]:
                cx.reason = f"'{getattr(node, 'raw', '')}' is false"
            return self._held[node]
        inner = node.value
        if isinstance(inner, (Chain, Approx)) and not self.holds(inner, side, cx):
            ok = False
        elif isinstance(node, Chain):
            ok = True
            for p in node.parts[1:]:
                sub = Cmp(fast=cx.fast)
                try:
                    ok = self.same(node.parts[0], p, sub)
                except SideError as e:
                    raise SideError(side, str(e)) from None
                if not ok:
                    cx.reason = f"a false equality: '{node.raw}' ({sub.reason})"
                    break
        else:
            ok = self.rounds_to(inner, node, side, cx)
        self._held[node] = ok
        return ok

    def rounds_to(self, value: object, node: Approx, side: str, cx: Cmp) -> bool:
        """Is `node.approx` within one unit of its last digit of `value`? True when `value` has no number."""
        if isinstance(value, Number):
            ok = self.rounding_of(value.value, node)
        elif isinstance(value, Expr):
            if cx.fast:
                raise NeedsSympy()
            import sympy

            try:
                ev = self.leaf_sympy(value, side)
            except SideError:
                return True
            if getattr(ev, "free_symbols", True) or not getattr(ev, "is_number", False):
                return True
            v = numeric_value(ev)
            if v is None or not v.is_real:
                return True
            ok = self.rounding_of(sympy.Rational(v.evalf(40)) if v.is_Float else sympy.Rational(v), node)
        else:
            return True
        if not ok:
            cx.reason = f"a false approximation: {node.raw} is not {self.raw(value)} rounded or truncated"
        return ok

    @staticmethod
    def rounding_of(v, node: Approx) -> bool:
        """Is `node.approx` `v` rounded (within half a unit of its last digit) or truncated (toward zero)?"""
        a, unit = Fraction(node.approx), node.unit
        v = Fraction(int(v.p), int(v.q)) if hasattr(v, "p") else Fraction(v)
        if 2 * abs(v - a) <= unit:
            return True
        return (a == 0 or (a > 0) == (v > 0)) and 0 <= abs(v) - abs(a) < unit

    def same_base(self, a: object, r: object, cx: Cmp) -> bool:
        """Rule 9: a base-b numeral equals the same digits in base b, or without a base; written against a
        bare number, it also equals its value (`10_2` == `2`)."""
        if isinstance(a, BaseNumber) and isinstance(r, BaseNumber):
            ok = a.base == r.base and a.digits == r.digits
            cx.reason = ("the same numeral" if ok else
                         f"numerals differ: {a.digits} in base {a.base} vs {r.digits} in base {r.base}")
            return ok
        num, other = (r, a) if isinstance(a, BaseNumber) else (a, cast(BaseNumber, r))
        if not (isinstance(num, Number) and num.value.denominator == 1 and num.value >= 0):
            cx.reason = f"a base-{other.base} numeral vs a value that is not a whole number"
            return False
        if str(num.value.numerator) == other.digits:
            cx.reason = f"the digits of the base-{other.base} numeral (written without its base)"
            return True
        if other is a and other.value == num.value:
            cx.reason = f"the base-{other.base} numeral {other.digits} is {num.value.numerator}"
            return True
        cx.reason = f"a base-{other.base} numeral {other.digits} vs {exact_text(num.value)}"
        return False

    def same_seq(self, a: object, r: object, cx: Cmp) -> bool:
        """Rule 6: assignments to distinct variables against bare values are compared in the order
        written (`x`, `y`, `z` in that order); to one variable or an indexed family, in any order.
        Rule 7: a one-element set equals its element. Everything else as in @2."""
        if isinstance(a, Seq) != isinstance(r, Seq):
            one, other = (a, r) if isinstance(a, Seq) else (cast(Seq, r), a)
            if one.kind == "set" and len(one.items) == 1 and not isinstance(one.items[0], Seq):
                element = one.items[0]
                ok = self.same(element, other, cx) if one is a else self.same(other, element, cx)
                cx.reason = f"a one-element set vs its element: {cx.reason}"
                return ok
        if isinstance(a, Seq) and isinstance(r, Seq):
            sa, sr = self.all_assignments(a), self.all_assignments(r)
            if sa != sr and a.kind in ("list", "tuple") and r.kind in ("list", "tuple"):
                named: Seq = a if sa else r
                if self._distinct_names(named):  # `x=2, y=3` vs `2, 3`: in the order written
                    names = [x.variable for x in named.items]
                    if sorted(names) in (["x", "y"], ["x", "y", "z"]):
                        named = Seq(named.kind, named.open, named.close,
                                    tuple(sorted(named.items, key=lambda x: _COORDINATES.index(x.variable))))
                    answer, reference = (named, r) if sa else (a, named)
                    return self.match_ordered(answer.items, reference.items, cx)
                return self.match_unordered(a.items, r.items, cx, "values")
        return super().same_seq(a, r, cx)

    def list_vs_tuple(self, a: Seq, r: Seq, cx: Cmp) -> bool:
        pair = a if a.kind == "tuple" else r
        if self.may_be_interval(pair, cx):  # `1, 3` vs `(1, 3)`: two values vs perhaps an open interval
            cx.reason = "a bare list vs a pair that may be an open interval (brackets decide)"
            return False
        return super().list_vs_tuple(a, r, cx)

    def may_be_interval(self, pair: Seq, cx: Cmp) -> bool:
        """`(a, b)` with real constants a < b reads as an open interval as well as a point."""
        if len(pair.items) != 2 or not all(isinstance(x, (Number, Expr)) for x in pair.items):
            return False
        if all(isinstance(x, Number) for x in pair.items):
            return pair.items[0].value < pair.items[1].value
        if cx.fast:
            raise NeedsSympy()
        import sympy

        try:
            lo, hi = (self.leaf_sympy(x, "reference") for x in pair.items)
        except SideError:
            return False
        if not all(getattr(x, "is_extended_real", False) and not getattr(x, "free_symbols", True) for x in (lo, hi)):
            return False
        return (lo < hi) is sympy.true

    @staticmethod
    def _distinct_names(s: Seq) -> bool:
        """Assignments to distinct variables that are not one indexed family (`x_1`, `x_2`)."""
        names = [x.variable for x in s.items]
        if len(set(names)) != len(names):
            return False
        bases = {m.group(1) for m in (_INDEXED_RE.match(n) for n in names) if m}
        return not (len(bases) == 1 and all(_INDEXED_RE.match(n) for n in names))

    def match_unordered(self, a: tuple, r: tuple, cx: Cmp, what: str) -> bool:
        if len(set(r)) == len(r) and len(set(a)) < len(a):  # the answer repeats an element; the reference does not
            a = tuple(dict.fromkeys(a))
        return super().match_unordered(a, r, cx, what)

    def numbers_equal(self, a: Number, r: Number, cx: Cmp) -> bool:
        """Rule 1: exact, unless the config names an official tolerance (recorded in the reason)."""
        if a.value == r.value:
            cx.reason = "equal numbers"
            return True
        tol = self.config.tolerance
        if tol is not None:
            bound = max(Fraction(tol.abs), Fraction(tol.rel) * max(abs(a.value), abs(r.value)))
            if abs(a.value - r.value) <= bound:
                cx.reason = f"within the tolerance of {tol.name} (rel {tol.rel}, abs {tol.abs})"
                return True
        cx.reason = f"numbers differ: {exact_text(a.value)} vs {exact_text(r.value)}"
        return False

    def raw(self, node: object) -> str:
        if isinstance(node, Number):
            return exact_text(node.value)
        return super().raw(node)

    # -- sets of reals (rule 7) -----------------------------------------------------------------

    def same_as_sets(self, a: object, r: object, cx: Cmp) -> bool:
        """The engine's comparison of sets of reals; an answer's inequality against a non-real bound is
        no set of reals: incorrect."""
        try:
            return super().same_as_sets(a, r, cx)
        except NonRealSide as e:
            if e.side == "reference":
                raise
            cx.reason = f"not a set of reals: {e}"
            return False

    def real_set(self, node: object, side: str):
        if isinstance(node, (Chain, Approx)):
            return self.real_set(node.value, side)
        if isinstance(node, Expr) and RELATION_RE.search(node.latex):
            named = self.named_interval(node.latex, side)
            if named is not None:
                return named
        return super().real_set(node, side)

    def named_interval(self, latex: str, side: str):
        """`0 < f(x) < 1`, `a \\ge 2`: bounds of a named quantity, read without solving; else None."""
        import sympy

        pieces = re.split(r"(<|>|\\(?:le|ge|lt|gt)(?![a-zA-Z]))", latex)
        if len(pieces) not in (3, 5) or r"\ne" in latex:
            return None
        terms, ops = pieces[0::2], pieces[1::2]
        named = [i for i, t in enumerate(terms) if is_variable(t.strip()) and not self.is_constant(t)]
        if len(named) != 1 or any(not self.is_constant(t) for i, t in enumerate(terms) if i != named[0]):
            return None
        less = [op in ("<", r"\le", r"\lt") for op in ops]
        strict = [op in ("<", ">", r"\lt", r"\gt") for op in ops]
        if len(set(less)) != 1:
            return None
        try:
            bounds = [None if i == named[0] else self.to_sympy(t.strip(), side) for i, t in enumerate(terms)]
        except SideError:
            return None
        if not less[0]:  # `hi > x > lo` → `lo < x < hi`
            bounds, strict = bounds[::-1], strict[::-1]
        k = bounds.index(None)
        lo = bounds[k - 1] if k > 0 else -sympy.oo
        hi = bounds[k + 1] if k + 1 < len(bounds) else sympy.oo
        lo_open = strict[k - 1] if k > 0 else True
        hi_open = strict[k] if k < len(strict) else True
        if not (getattr(lo, "is_extended_real", False) and getattr(hi, "is_extended_real", False)):
            return None
        return sympy.Interval(lo, hi, left_open=lo_open, right_open=hi_open)

    # -- sympy leaves (rules 1, 2, 9, 11) -------------------------------------------------------

    def read_sympy(self, latex: str):
        """@2's reading, with: a lone decimal read as its number (latex2sympy reads `{\\frac{15}{10}}` as a
        set); an odd root of a negative number real (`\\sqrt[3]{-8}` = -2); a relation with a non-real side a
        `NonReal` error; exponentials and factorials over the caps refused, unevaluated (`TooLarge`)."""
        import sympy

        if NUMBER_RE.match(latex) or TIMES_TEN_RE.match(latex):
            num = self.plain_number(latex)
            if num is not None:
                return sympy.Rational(num.value.numerator, num.value.denominator)
        return super().read_sympy(latex)

    def latex_to_sympy(self, latex: str):
        """The engine's reading; a one-element set without `\\{` is TeX grouping (`{\\frac{15}{10}}`), its element."""
        import sympy

        expr = super().latex_to_sympy(latex)
        if isinstance(expr, sympy.FiniteSet) and len(expr) == 1 and r"\{" not in latex:
            expr = next(iter(expr))
        return expr

    def imaginary_unit(self, expr, latex: str):
        """The engine's `i`; `x > -2+7i` is a `NonReal` error (sympy refuses to order non-real numbers)."""
        try:
            return super().imaginary_unit(expr, latex)
        except TypeError as e:
            raise NonReal(f"'{latex[:60]}' compares a non-real number ({str(e)[:60]})") from None

    def before_evaluation(self, expr):
        """An odd root of a negative number, as written, is the real root (`\\sqrt[3]{-8}` = -2)."""
        import sympy

        if isinstance(expr, sympy.Basic):
            expr = expr.replace(self._negative_odd_root, self._real_root)
        return expr

    @staticmethod
    def _negative_odd_root(e) -> bool:
        """`(-8)^{1/3}` as written (before evaluation): a negative number to a power with an odd denominator."""
        return bool(getattr(e, "is_Pow", False) and e.exp.is_Rational and not e.exp.is_Integer and e.exp.q % 2 == 1
                    and e.base.is_number and e.base.is_extended_negative is True)

    @staticmethod
    def _real_root(e):
        import sympy

        root = sympy.Pow(-e.base, e.exp)
        return -root if e.exp.p % 2 else root

    def check_size(self, expr) -> None:
        """The engine's caps, and exponentials and factorials over MAX_EXACT_EXPONENT digits; an expression
        over a cap raises `TooLarge` with its order of magnitude when that can be estimated (no sums)."""
        import sympy

        try:
            super().check_size(expr)
        except ParseError as e:
            if "MAX_TREE_NODES" in str(e):
                raise
            raise TooLarge(str(e), self.reliable_magnitude(expr)) from None
        if not isinstance(expr, sympy.Basic):
            return
        cap = self.config.caps.max_exact_exponent
        for node in sympy.preorder_traversal(expr):
            if isinstance(node, (sympy.exp, sympy.factorial)) and node.args[0].is_number:
                digits = magnitude(node)
                if digits is not None and abs(digits) > cap:
                    what = "an exponential" if isinstance(node, sympy.exp) else "a factorial"
                    size = "too many digits to estimate" if pymath.isinf(digits) else f"about {abs(digits):.3g} digits"
                    raise TooLarge(f"{what} with {size} is over MAX_EXACT_EXPONENT={cap}",
                                   self.reliable_magnitude(expr))

    @staticmethod
    def reliable_magnitude(expr) -> float | None:
        """log10 of |expr| when no sum can cancel it (powers, products, exponentials, factorials of
        numbers); else None."""
        import sympy

        if not isinstance(expr, sympy.Basic) or expr.free_symbols or expr.has(sympy.Add):
            return None
        return magnitude(expr)

    def side_error(self, side: str, e: ParseError) -> SideError:
        """The engine's side error, of its own kind for rules 7 and 11."""
        if isinstance(e, TooLarge):
            return TooLargeSide(side, str(e), e.log10)
        if isinstance(e, NonReal):
            return NonRealSide(side, str(e))
        return super().side_error(side, e)

    def judge_values(self, ea, er, va, vr, written: tuple | None, cx: Cmp) -> bool | None:
        """Rule 2 for constants: a difference at 30 digits rejects (the engine's rule); with a named tolerance,
        values it does not reject are decided by it, never by `simplify`."""
        decided = super().judge_values(ea, er, va, vr, written, cx)
        if decided is None and self.config.tolerance is not None:
            return self.values_differ(va, vr, cx)
        return decided

    @staticmethod
    def difference_text(diff) -> str:
        return sympy_text(diff)

    def unproven_constants(self, ea, er, diff, va, vr, cx: Cmp) -> bool:
        """Rule 2: equal only when proven; values equal to 50 digits without a proof are not equal."""
        proof = self.proves_zero(diff)
        if proof:
            cx.reason = f"symbolically equal ({proof})"
            return True
        cx.reason = ("not proven equal: the values agree to 30 digits but sympy cannot prove the difference zero "
                     "(no credit without a proof)" if va is not None and vr is not None else
                     "not proven equal (simplify leaves a nonzero difference)")
        return False

    def values_differ(self, va, vr, cx: Cmp) -> bool:
        tol = self.config.tolerance
        if tol is not None:
            import sympy

            bound = max(sympy.Rational(tol.abs), sympy.Rational(tol.rel) * max(abs(va), abs(vr)))
            if abs(va - vr) <= bound:
                cx.reason = f"within the tolerance of {tol.name} (rel {tol.rel}, abs {tol.abs})"
                return True
        return super().values_differ(va, vr, cx)

    def differ_exactly(self, pa, pr, free: list, point: dict, cx: Cmp) -> bool:
        """Rule 2 for expressions in variables: values at a (rational) sample point that differ exactly reject."""
        d = pa - pr
        if getattr(d, "is_Rational", False) and d != 0:
            cx.reason = f"values differ at {self.point_text(free, point)} (exactly, by {sympy_text(d)})"
            return True
        return False

    def unproven_functions(self, diff, agreed: int, cx: Cmp) -> bool:
        """Rule 2: equal only when sympy proves the difference zero; agreeing at sample points is no proof."""
        proof = self.proves_zero(diff)
        if proof:
            cx.reason = f"symbolically equal ({proof})"
            return True
        cx.reason = ("not proven equal: simplify leaves a nonzero difference (agreeing at sample points "
                     "is no proof)")
        return False

    @staticmethod
    def proves_zero(diff) -> str | None:
        """The name of an exact rewriting that turns `diff` into 0 (`expand`, `trigsimp`, `radsimp`, the
        minimal polynomial of an algebraic number), or None. Never a numeric test."""
        import sympy

        tactics = (("expand", sympy.expand), ("trigsimp", lambda d: sympy.trigsimp(sympy.expand_trig(d))),
                   ("radsimp", sympy.radsimp))
        for name, tactic in tactics:
            try:
                if tactic(diff) == 0:
                    return name
            except Exception:  # a rewriting sympy cannot do proves nothing
                continue
        if not diff.free_symbols and diff.is_algebraic is True:
            t = sympy.Dummy("t")
            try:
                if sympy.minimal_polynomial(diff, t) == t:
                    return "minimal polynomial"
            except Exception:  # noqa: S110 - not algebraic after all, or too hard: no proof
                pass
        return None


# --------------------------------------------------------------------------- registration


def math_equiv3_fast(answer: str, reference: str, *, num_choices: int | None = None,
                     config: MathEquiv3Config = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    return MathEquiv3(config).fast(answer, reference)


@register("math.equiv", "3", config=CONFIG, fast=math_equiv3_fast, isolated=True,
          description="Symbolic equivalence of final math answers: exact numbers, no credit without a proof, "
                      "labelled values, lists joined by words, assignments in order, only units dropped, "
                      "bounded time",
          source="audit: math.equiv@2 revised after issue 10 (Math-Verify's tables, Qwen and PRM800K data) and "
                 "an adversarial review before release (2026-12-01)")
def math_equiv3(answer: str, reference: str, *, num_choices: int | None = None,
                config: MathEquiv3Config = CONFIG) -> Judgment:
    return MathEquiv3(config).grade(answer, reference)
