"""math.equiv@2: math.equiv@1 with assignments compared variable by variable and decimals judged
to the precision they state.

Source: math.equiv@1 (`audit.graders.math`; its sources are hendrycks/math, MATH-500 and the
normalizations of hendrycks, Qwen2.5-Math and Math-Verify) and a review of @1's verdicts that found
two wrong `correct`s and four false negatives, each pinned in tests/golden/graders/math_equiv2_cases.jsonl.
Everything not listed here is @1's rule (read @1's docstring): the pure string helpers and the
numeric helpers are imported from `audit.graders.math` unchanged, so their code is part of both
versions' fingerprints and cannot change under either.

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
from audit.graders.math import (  # @1's helpers, unchanged: string rewriting, splitting, numeric checks
    _BARE_FUNC_RE,
    _BASE_SUBSCRIPT_RE,
    _COMMAND_RE,
    _DEGREE_RE,
    _FRAC_RE,
    _INFINITY_RE,
    _MIXED_RE,
    _NUMBER_RE,
    _POW_TEN_RE,
    _RELATION_RE,
    _SAMPLE_VALUES,
    _SIMPLE_REPLACE,
    _SIZING_RE,
    _SLASH_RE,
    _SPACING_RE,
    _TEXTLIKE_RE,
    _THOUSANDS_PREFIX_RE,
    _TIMES_TEN_RE,
    _UNICODE,
    _UNION_SEPS,
    _UNIT_TEXT_RE,
    _UNIT_WORDS_RE,
    MAX_ANSWER_CHARS,
    MAX_ELEMENTS,
    MAX_EXACT_EXPONENT,
    MAX_NESTING,
    MAX_NORMALIZE_ROUNDS,
    MAX_NUMBER_DIGITS,
    MAX_PARSE_CHARS,
    MAX_TREE_NODES,
    SAMPLE_POINTS,
    Equation,
    Seq,
    Text,
    Union,
    WithUnit,
    _brace_single_args,
    _check_versions,
    _close,
    _depth_ok,
    _enclosing,
    _expand_pm,
    _fmt,
    _is_text,
    _is_variable,
    _NeedsSympy,
    _ParseError,
    _short,
    _SideError,
    _split_top,
    _squeeze_spaces,
    _unit_key,
    _unwrap_command,
    _unwrap_outer,
    _value,
    text_key,
)
from audit.graders.math import _to_sympy as _to_sympy_v1

# --------------------------------------------------------------------------- config


@dataclass(frozen=True)
class MathEquiv2Config:
    """Everything that changes a verdict besides code; part of the fingerprint. No relative tolerance."""

    budget_s: float = 5.0
    """Hard wall-clock budget per item for the symbolic step (timeout, never incorrect)."""
    boundary_digits: int = 40
    """A decimal's rounding margin below 10^-boundary_digits (50-digit evaluation) that sympy cannot
    decide exactly is a tie, accepted. Guards representation error only."""
    max_answer_chars: int = MAX_ANSWER_CHARS
    max_parse_chars: int = MAX_PARSE_CHARS
    max_nesting: int = MAX_NESTING
    max_elements: int = MAX_ELEMENTS
    max_exact_exponent: int = MAX_EXACT_EXPONENT
    max_number_digits: int = MAX_NUMBER_DIGITS
    max_tree_nodes: int = MAX_TREE_NODES
    sample_points: int = SAMPLE_POINTS
    sympy_version: str = "1.14.0"
    latex2sympy_version: str = "1.11.0"
    """Pinned library versions: a different install gives `error`, not silently different verdicts."""


CONFIG = MathEquiv2Config()

# --------------------------------------------------------------------------- normalization

_UNICODE_V2 = _UNICODE + (("\u2103", r"^\circ C"), ("\u2109", r"^\circ F"))
_DEGREE_UNIT_RE = re.compile(r"(?:\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\degree)\s*([CF])(?![A-Za-z])")
"""`6^\\circ C`: the letter is a unit (Celsius, Fahrenheit), not a factor."""
_BARE_SCRIPT_RE = re.compile(r"([_^])([A-Za-z0-9])(?=\s+[A-Za-z0-9])")
"""`\\log_2 8`: brace the one-character script so removing the space cannot join `_28`."""


def _normalize_once(s: str) -> str:
    for a, b in _UNICODE_V2:
        s = s.replace(a, b)
    s = s.strip()
    s = _unwrap_outer(s)
    for a, b in _SIMPLE_REPLACE:
        s = s.replace(a, b)
    s = _SIZING_RE.sub("", s)
    s = _SPACING_RE.sub(lambda m: m.group(0) if m.group(0) == "\\\\" else " ", s)
    s = _DEGREE_UNIT_RE.sub(r"\\text{\1}", s)
    s = _DEGREE_RE.sub("", s)
    s = _TEXTLIKE_RE.sub(r"\\text{", s)
    s = _INFINITY_RE.sub(r"\\infty", s)
    s = _BARE_FUNC_RE.sub(r"\\\1", s)
    s = _brace_single_args(s)
    s = _UNIT_WORDS_RE.sub(r"\1\\text{\2}\3", s)  # `5 cm^2` → `5\text{cm}^2`
    s = _BARE_SCRIPT_RE.sub(r"\1{\2}", s)
    s = _squeeze_spaces(s)
    s = re.sub(r"(?<![\d\\])\.(?=\d)", "0.", s)  # .5 → 0.5
    if s.endswith(".") and not s.endswith(".."):  # a sentence's period
        s = s[:-1]
    s = s.rstrip(",; ")
    return s


def normalize(s: str) -> str:
    """Canonical string form of an answer (string rewriting only, no parsing). Idempotent."""
    for _ in range(MAX_NORMALIZE_ROUNDS):
        t = _normalize_once(s)
        if t == s:
            return t
        s = t
    return s


# --------------------------------------------------------------------------- structure
# Text, Equation, Seq, Union and WithUnit are @1's node classes; these three are @2's.


@dataclass(frozen=True)
class Expr:
    latex: str
    """LaTeX handed to latex2sympy; decimals in it are read as exact fractions."""


@dataclass(frozen=True)
class Number:
    value: Fraction
    places: int | None = None
    """Digits after the decimal point as written (`0.330`: 3); None for an exact number."""
    exponent: int = 0
    """Power of ten of scientific notation (`1.5e3`: 3), which scales the stated precision."""

    @property
    def unit(self) -> Fraction | None:
        """One unit of the last stated digit (`0.33`: 1/100, `1.5e3`: 100); None when exact."""
        return None if self.places is None else Fraction(10) ** (self.exponent - self.places)


@dataclass(frozen=True)
class Assignment:
    variable: str
    """Comparison key of the left side: spaces and braces removed (`a_{1}` → `a_1`)."""
    value: object
    lhs: str
    """The left side as written."""
    rhs: str
    """The right side as written, for comparing with an equation; empty for `\\in`/`\\approx`."""


_GROUPING_RE = re.compile(r"[{}\s]")


def _assign(lhs: str, rhs: str, value: object) -> object:
    """`x = v` → Assignment; `(x, y) = (a, b)` → the tuple of assignments `x = a`, `y = b`."""
    if lhs.startswith("(") and isinstance(value, Seq) and value.kind == "tuple":
        names = _split_top(lhs[1:-1], (",",))
        if len(names) == len(value.items) and len({_GROUPING_RE.sub("", n) for n in names}) == len(names):
            return Seq("tuple", "(", ")", tuple(Assignment(_GROUPING_RE.sub("", n), v, n, "")
                                                for n, v in zip(names, value.items)))
    return Assignment(_GROUPING_RE.sub("", lhs), value, lhs, rhs)


def _assignment_or_equation(s: str, config: MathEquiv2Config) -> object:
    """`x = 4` → Assignment(x, 4); `a = b = c` → Assignment(a, c); `2+3 = 5` → 5; other equations → Equation."""
    for op in (r"\in", r"\approx"):
        parts = _split_top(s, (op,))
        if len(parts) == 2 and _is_variable(parts[0]):
            return _assign(parts[0], "", _parse_structure(parts[1], config, top=False))
    parts = _split_top(s, ("=",))
    if len(parts) == 1:
        return None
    if any(not p for p in parts):
        raise _ParseError(f"equation with an empty side: '{s}'")
    if _is_variable(parts[0]):
        return _assign(parts[0], parts[-1], _parse_structure(parts[-1], config, top=False))
    if len(parts) > 2 or not re.search(r"[A-Za-z]", _COMMAND_RE.sub("", parts[0])):
        return _parse_structure(parts[-1], config, top=False)
    return Equation(parts[0], parts[1], s)


def _parse_element(s: str, config: MathEquiv2Config) -> object:
    s = s.strip()
    if not s:
        raise _ParseError("empty element")
    if s.startswith("+") and not s.startswith("+-"):
        s = s[1:]
    eq = _assignment_or_equation(s, config)
    if eq is not None:
        return eq
    enc = _enclosing(s)
    if enc is not None:
        if not enc[2].strip() and enc[0] != r"\{":
            raise _ParseError(f"empty brackets '{s}'")
        return _parse_structure(s, config, top=False)
    if s in (r"\emptyset", r"\{\}"):
        return Seq("set", r"\{", r"\}", ())
    m = _UNIT_TEXT_RE.match(s)
    if m and m.group(1).strip() and not _is_text(m.group(1)):
        unit = m.group(2) + (m.group(3) or "")
        return WithUnit(_parse_element(m.group(1), config), unit)
    inner = _unwrap_command(s, r"\text")
    if inner is not None and not _is_text(inner) and inner.strip():
        return _parse_element(normalize(inner), config)
    if _is_text(s):
        return Text(text_key(s), s)
    m = _BASE_SUBSCRIPT_RE.match(s)
    if m and m.group(1).isdigit():
        s = m.group(1)
    num = _plain_number(s, config)
    if num is not None:
        return num
    if len(s) > config.max_parse_chars:
        raise _ParseError(f"element is {len(s):,} chars, over MAX_PARSE_CHARS={config.max_parse_chars}")
    return Expr(s)


def _stated(mantissa: str, exponent: int) -> Number:
    """A number from its written mantissa; digits after the point state its precision."""
    digits = mantissa.partition(".")[2]
    value = Fraction(mantissa) * Fraction(10) ** exponent
    return Number(value, len(digits) if digits else None, exponent)


def _plain_number(s: str, config: MathEquiv2Config) -> Number | None:
    """Integers, decimals, scientific notation, integer fractions and mixed numbers, exactly.
    A zero denominator is a parse error: division by zero is not a value."""
    if len(s) > config.max_number_digits:
        return None
    if _NUMBER_RE.match(s):
        mant, _, exp = s.lower().partition("e")
        if exp and abs(int(exp)) > config.max_exact_exponent:
            return None
        return _stated(mant, int(exp) if exp else 0)
    m = _TIMES_TEN_RE.match(s)
    if m:
        if abs(int(m.group(2))) > config.max_exact_exponent:
            return None
        return _stated(m.group(1), int(m.group(2)))
    m = _POW_TEN_RE.match(s)
    if m:
        if abs(int(m.group(2))) > config.max_exact_exponent:
            return None
        v = Fraction(10) ** int(m.group(2))
        return Number(-v if m.group(1) == "-" else v)
    for rx, num, den in ((_FRAC_RE, 2, 3), (_SLASH_RE, 1, 2), (_MIXED_RE, 3, 4)):
        m = rx.match(s)
        if m and int(m.group(den)) == 0:
            raise _ParseError(f"division by zero in '{s[:60]}'")
    m = _FRAC_RE.match(s)
    if m:
        v = Fraction(int(m.group(2)), int(m.group(3)))
        return Number(-v if m.group(1) == "-" else v)
    m = _SLASH_RE.match(s)
    if m:
        return Number(Fraction(int(m.group(1)), int(m.group(2))))
    m = _MIXED_RE.match(s)
    if m:
        v = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
        return Number(-v if m.group(1) == "-" else v)
    return None


def _parse_structure(s: str, config: MathEquiv2Config, top: bool = True) -> object:
    if not s:
        raise _ParseError("empty")
    if r"\boxed" in s or r"\fbox" in s:
        n = s.count(r"\boxed") + s.count(r"\fbox")
        raise _ParseError(f"{n} \\boxed{{}} groups in one answer; they are not joined into a set")
    if not _depth_ok(s, config.max_nesting):
        raise _ParseError(f"nested deeper than MAX_NESTING={config.max_nesting}")
    m = _THOUSANDS_PREFIX_RE.match(s) if top else None
    if m:
        return _parse_element(m.group(0).replace(",", "") + s[m.end():], config)
    parts = _split_top(s, _UNION_SEPS)
    if len(parts) > 1:
        if len(parts) > config.max_elements:
            raise _ParseError(f"more than MAX_ELEMENTS={config.max_elements} parts")
        return Union(tuple(_parse_structure(p, config, top=False) for p in parts))
    items = _split_top(s, (",", ";"))
    if len(items) > 1:
        if len(items) > config.max_elements:
            raise _ParseError(f"{len(items)} elements, over MAX_ELEMENTS={config.max_elements}")
        expanded: list[object] = []
        for it in items:
            pm = _expand_pm(it)
            expanded.extend(_parse_element(x, config) for x in (pm or [it]))
        return Seq("list", "", "", tuple(expanded))
    enc = _enclosing(s)
    if enc is not None:
        op, cl, inner = enc
        if op == r"\{" and not inner.strip():
            return Seq("set", op, cl, ())
        inner_items = _split_top(inner, (",", ";"))
        if len(inner_items) > config.max_elements:
            raise _ParseError(f"{len(inner_items)} elements, over MAX_ELEMENTS={config.max_elements}")
        if op == r"\{":
            expanded = []
            for it in inner_items:
                pm = _expand_pm(it)
                expanded.extend(_parse_element(x, config) for x in (pm or [it]))
            return Seq("set", op, cl, tuple(expanded))
        if len(inner_items) == 1:  # grouping: (5) → 5
            return _parse_element(inner, config)
        kind = "tuple" if (op, cl) in (("(", ")"), (r"\langle", r"\rangle")) else "interval"
        return Seq(kind, "(" if op == r"\langle" else op, ")" if cl == r"\rangle" else cl,
                   tuple(_parse_element(x, config) for x in inner_items))
    pm = _expand_pm(s)
    if pm is not None:
        return Seq("list", "", "", tuple(_parse_element(x, config) for x in pm))
    return _parse_element(s, config)


# --------------------------------------------------------------------------- comparison


@dataclass
class _Cmp:
    """Comparison context: fast (no sympy) or full; the reason of the deciding rule."""

    config: MathEquiv2Config
    fast: bool
    reason: str = ""


def _same(a: object, r: object, cx: _Cmp) -> bool:
    """Is answer node `a` equal to reference node `r`? Sets cx.reason on a decision."""
    if isinstance(a, Assignment) or isinstance(r, Assignment):
        return _same_assignment(a, r, cx)
    if _has_inequality(a) or _has_inequality(r):
        if cx.fast:
            raise _NeedsSympy()
        return _same_as_sets(a, r, cx)
    if isinstance(a, WithUnit) and isinstance(r, WithUnit):
        if _unit_key(a.unit) != _unit_key(r.unit):
            cx.reason = f"units differ: '{a.unit}' vs '{r.unit}'"
            return False
        return _same(a.value, r.value, cx)
    if isinstance(a, WithUnit):
        return _same(a.value, r, cx)
    if isinstance(r, WithUnit):
        return _same(a, r.value, cx)
    if isinstance(a, Seq) and a.kind == "list" and len(a.items) == 1:
        return _same(a.items[0], r, cx)
    if isinstance(r, Seq) and r.kind == "list" and len(r.items) == 1:
        return _same(a, r.items[0], cx)
    if isinstance(a, Seq) or isinstance(r, Seq):
        return _same_seq(a, r, cx)
    if isinstance(a, Union) or isinstance(r, Union):
        if not (isinstance(a, Union) and isinstance(r, Union)):
            cx.reason = "a union of intervals vs a single object"
            return False
        return _match_unordered(a.parts, r.parts, cx, "union parts")
    if isinstance(a, Text) or isinstance(r, Text):
        ka = a.key if isinstance(a, Text) else text_key(_raw(a))
        kr = r.key if isinstance(r, Text) else text_key(_raw(r))
        cx.reason = "same text" if ka == kr else f"text differs: '{ka}' vs '{kr}'"
        return ka == kr
    if isinstance(a, Equation) or isinstance(r, Equation):
        if not (isinstance(a, Equation) and isinstance(r, Equation)):
            cx.reason = "an equation vs a value"
            return False
        if cx.fast:
            raise _NeedsSympy()
        return _sympy_equations(a, r, cx)
    if isinstance(a, Number) and isinstance(r, Number):
        return _numbers_equal(a, r, cx)
    if isinstance(a, Expr) and isinstance(r, Expr) and a.latex == r.latex:
        cx.reason = "same expression"
        return True
    if cx.fast:
        raise _NeedsSympy()
    return _sympy_equal(a, r, cx)


def _same_assignment(a: object, r: object, cx: _Cmp) -> bool:
    """Both assignments: same variable and equal values. One assignment: against an equation,
    compared as equations; against anything else, its value is compared (@1's rule)."""
    if isinstance(a, Assignment) and isinstance(r, Assignment):
        if a.variable != r.variable:
            cx.reason = f"assignments to different variables: {a.variable} vs {r.variable}"
            return False
        ok = _same(a.value, r.value, cx)
        cx.reason = f"{a.variable}: {cx.reason}"
        return ok
    asg, other = (a, r) if isinstance(a, Assignment) else (r, a)
    if isinstance(other, Equation) and asg.rhs:
        if cx.fast:
            raise _NeedsSympy()
        eq = Equation(asg.lhs, asg.rhs, f"{asg.lhs}={asg.rhs}")
        try:
            ok = _sympy_equations(*((eq, other) if asg is a else (other, eq)), cx)
        except _SideError as e:  # not readable as an equation: @1's verdict stands
            cx.reason = f"an equation vs a value (not comparable as equations: {e})"
            return False
        cx.reason = f"assignment compared as an equation: {cx.reason}"
        return ok
    return _same(a.value, r, cx) if asg is a else _same(a, r.value, cx)


def _has_inequality(node: object) -> bool:
    if isinstance(node, Expr):
        return bool(_RELATION_RE.search(node.latex))
    if isinstance(node, Union):
        return any(_has_inequality(p) for p in node.parts)
    if isinstance(node, (WithUnit, Assignment)):
        return _has_inequality(node.value)
    return False


def _same_as_sets(a: object, r: object, cx: _Cmp) -> bool:
    """Inequalities in one variable against each other or against intervals: compare the real sets."""
    sa, sr = _real_set(a, cx.config, "answer"), _real_set(r, cx.config, "reference")
    if sa is not None and sr is not None:
        ok = sa == sr or (sa.is_subset(sr) is True and sr.is_subset(sa) is True)
        cx.reason = "the same set of real numbers" if ok else f"sets differ: {_short(sa)} vs {_short(sr)}"
        return bool(ok)
    if isinstance(a, Expr) and isinstance(r, Expr):
        return _sympy_equal(a, r, cx)  # relations in several variables
    cx.reason = "an inequality vs an object that is not a set of reals"
    return False


def _real_set(node: object, config: MathEquiv2Config, side: str):
    """The sympy set of reals a node describes (interval, union, one-variable inequality), or None."""
    import sympy

    if isinstance(node, (WithUnit, Assignment)):
        return _real_set(node.value, config, side)
    if isinstance(node, Union):
        parts = [_real_set(p, config, side) for p in node.parts]
        return None if any(p is None for p in parts) else sympy.Union(*parts)
    if isinstance(node, Seq) and node.kind in ("tuple", "interval") and len(node.items) == 2:
        lo, hi = (_leaf_sympy(x, config, side) if isinstance(x, (Number, Expr)) else None for x in node.items)
        if lo is None or hi is None or not (lo.is_extended_real and hi.is_extended_real):
            return None
        if (lo < hi) is not sympy.true:
            return None
        return sympy.Interval(lo, hi, left_open=node.open == "(", right_open=node.close == ")")
    if isinstance(node, Expr) and _RELATION_RE.search(node.latex):
        rel = _leaf_sympy(node, config, side)
        free = getattr(rel, "free_symbols", set())
        if len(free) != 1:
            return None
        try:
            return rel.as_set()
        except (NotImplementedError, TypeError, ValueError, AttributeError):
            return None
    return None


def _raw(node: object) -> str:
    if isinstance(node, Expr):
        return node.latex
    if isinstance(node, Number):
        return str(node.value)
    if isinstance(node, Equation):
        return node.raw
    return str(node)


def _precision(a: object, r: object) -> tuple[Number, str] | None:
    """The decimal whose stated precision decides, and its side: the reference's first."""
    if isinstance(r, Number) and r.places is not None:
        return r, "reference"
    if isinstance(a, Number) and a.places is not None:
        return a, "answer"
    return None


def _unit_text(u: Fraction) -> str:
    """A power of ten as a decimal: `0.01`, `100` (`1e-40` beyond 12 zeros)."""
    n = len(str(u.numerator)) - 1 if u.denominator == 1 else -(len(str(u.denominator)) - 1)
    if abs(n) > 12:
        return f"1e{n}"
    return str(u.numerator) if n >= 0 else "0." + "0" * (-n - 1) + "1"


def _show(n: Number) -> str:
    """A number as the reader wrote it: a decimal with its stated digits, else the exact fraction."""
    if n.places is None:
        return _fmt(n.value)
    scaled = n.value / Fraction(10) ** n.exponent
    digits = str(abs(scaled.numerator * 10 ** n.places // scaled.denominator)).rjust(n.places + 1, "0")
    text = ("-" if scaled < 0 else "") + digits[:-n.places] + "." + digits[-n.places:]
    text += f"e{n.exponent}" if n.exponent else ""
    return text if len(text) <= 40 else text[:37] + "…"


def _numbers_equal(a: Number, r: Number, cx: _Cmp) -> bool:
    if a.value == r.value:
        cx.reason = "equal numbers"
        return True
    judge = _precision(a, r)
    if judge is None:
        cx.reason = f"numbers differ: {_fmt(a.value)} vs {_fmt(r.value)}"
        return False
    num, side = judge
    unit = num.unit
    assert unit is not None
    ok = 2 * abs(a.value - r.value) <= unit
    cx.reason = (f"within half a unit of the {side}'s last stated digit ({_unit_text(unit)})" if ok else
                 f"{_show(a)} vs {_show(r)} differ by more than half a unit of the {side}'s last "
                 f"stated digit ({_unit_text(unit)})")
    return ok


def _same_seq(a: object, r: object, cx: _Cmp) -> bool:
    if not (isinstance(a, Seq) and isinstance(r, Seq)):
        one = a if isinstance(a, Seq) else r
        cx.reason = f"a {one.kind} of {len(one.items)} vs a single value"
        return False
    if _all_assignments(a) and _all_assignments(r):  # variable by variable, in any order
        return _match_unordered(a.items, r.items, cx, "assignments")
    unordered = {"list", "set"}
    if a.kind in unordered and r.kind in unordered:
        return _match_unordered(a.items, r.items, cx, "elements")
    if "list" in (a.kind, r.kind) and {a.kind, r.kind} <= {"list", "tuple"}:
        return _match_ordered(a.items, r.items, cx)
    if a.kind != r.kind or a.open != r.open or a.close != r.close:
        cx.reason = f"brackets differ: {a.open or '·'}…{a.close or '·'} vs {r.open or '·'}…{r.close or '·'}"
        return False
    return _match_ordered(a.items, r.items, cx)


def _all_assignments(s: Seq) -> bool:
    return s.kind in ("list", "tuple") and bool(s.items) and all(isinstance(x, Assignment) for x in s.items)


def _match_ordered(a: tuple, r: tuple, cx: _Cmp) -> bool:
    if len(a) != len(r):
        cx.reason = f"{len(a)} elements vs {len(r)}"
        return False
    for i, (x, y) in enumerate(zip(a, r)):
        if not _same(x, y, cx):
            cx.reason = f"element {i + 1}: {cx.reason}"
            return False
    cx.reason = f"all {len(a)} elements equal in order"
    return True


def _match_unordered(a: tuple, r: tuple, cx: _Cmp, what: str) -> bool:
    if len(a) != len(r):
        cx.reason = f"{len(a)} {what} vs {len(r)}"
        return False
    # Maximum bipartite matching; each pair compared at most once.
    memo: dict[tuple[int, int], bool] = {}

    def eq(i: int, j: int) -> bool:
        if (i, j) not in memo:
            memo[(i, j)] = _same(a[i], r[j], cx)
        return memo[(i, j)]

    match_of_r: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in range(len(r)):
            if j in seen or not eq(i, j):
                continue
            seen.add(j)
            if j not in match_of_r or augment(match_of_r[j], seen):
                match_of_r[j] = i
                return True
        return False

    for i in range(len(a)):
        if not augment(i, set()):
            cx.reason = f"answer element {i + 1} matches no reference element ({what}, any order)"
            return False
    cx.reason = f"all {len(a)} {what} match (any order)"
    return True


# --------------------------------------------------------------------------- sympy leaves


def _to_sympy(latex: str, config: MathEquiv2Config):
    """@1's reading, and division by zero (complex infinity, NaN) refused as a parse error."""
    import sympy

    expr = _to_sympy_v1(latex, config)
    if isinstance(expr, (sympy.Basic, sympy.MatrixBase)) and expr.has(sympy.zoo, sympy.nan):
        raise _ParseError(f"'{latex[:60]}' is undefined (division by zero)")
    return expr


def _leaf_sympy(node: object, config: MathEquiv2Config, side: str):
    import sympy

    if isinstance(node, Number):
        return sympy.Rational(node.value.numerator, node.value.denominator)
    if isinstance(node, Expr):
        try:
            return _to_sympy(node.latex, config)
        except _ParseError as e:
            raise _SideError(side, str(e)) from None
    raise _SideError(side, f"cannot compare {type(node).__name__} symbolically")


def _sympy_equal(a: object, r: object, cx: _Cmp) -> bool:
    import sympy

    ea = _leaf_sympy(a, cx.config, "answer")
    er = _leaf_sympy(r, cx.config, "reference")
    if isinstance(ea, sympy.MatrixBase) or isinstance(er, sympy.MatrixBase):
        if not (isinstance(ea, sympy.MatrixBase) and isinstance(er, sympy.MatrixBase)):
            cx.reason = "a matrix vs a non-matrix"
            return False
        if ea.shape != er.shape:
            cx.reason = f"matrix shapes differ: {ea.shape} vs {er.shape}"
            return False
        for k, (x, y) in enumerate(zip(ea, er)):
            if not _scalar_equal(x, y, None, cx):
                cx.reason = f"matrix entry {k + 1}: {cx.reason}"
                return False
        cx.reason = "all matrix entries equal"
        return True
    if isinstance(ea, sympy.Set) or isinstance(er, sympy.Set):
        if isinstance(ea, sympy.Set) and isinstance(er, sympy.Set) and ea == er:
            cx.reason = "equal sets"
            return True
        cx.reason = "sets differ" if isinstance(ea, sympy.Set) and isinstance(er, sympy.Set) else "a set vs a value"
        return False
    if isinstance(ea, sympy.core.relational.Relational) or isinstance(er, sympy.core.relational.Relational):
        return _relations_equal(ea, er, cx)
    return _scalar_equal(ea, er, _precision(a, r), cx)


def _relations_equal(ea, er, cx: _Cmp) -> bool:
    import sympy

    Rel = sympy.core.relational.Relational
    if not (isinstance(ea, Rel) and isinstance(er, Rel)):
        cx.reason = "a relation vs a value"
        return False
    ca, cr = ea.canonical, er.canonical
    if type(ca) is not type(cr):
        cx.reason = f"relations differ: {ca.rel_op} vs {cr.rel_op}"
        return False
    ok = _scalar_equal(ca.lhs - ca.rhs, cr.lhs - cr.rhs, None, cx)
    cx.reason = "same relation" if ok else f"relations differ: {cx.reason}"
    return ok


def _within_stated_precision(ea, er, judge: tuple[Number, str], cx: _Cmp) -> bool | None:
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
        if _value(ea) is None or _value(er) is None:
            return None
        try:
            margin = sympy.N(abs(diff) - half, 50)
        except (TypeError, ValueError, ArithmeticError, AttributeError):
            return None
        if not margin.is_Number:
            return None
        if abs(margin) > sympy.Float(10, 50) ** -cx.config.boundary_digits:
            ok = bool(margin < 0)
        else:  # at the boundary to 40 digits: decide exactly if sympy can, else accept as a tie
            exact = sympy.simplify(abs(diff) - half)
            ok = bool(exact <= 0) if exact.is_Rational else True
            tie = not exact.is_Rational or exact == 0
    stated = _unit_text(unit)
    if tie:
        cx.reason = f"exactly half a unit of the {side}'s last stated digit ({stated}) away (ties accepted)"
    elif ok:
        cx.reason = f"within half a unit of the {side}'s last stated digit ({stated})"
    else:
        cx.reason = f"differs by more than half a unit of the {side}'s last stated digit ({stated})"
    return ok


def _scalar_equal(ea, er, judge: tuple[Number, str] | None, cx: _Cmp) -> bool:
    import sympy

    config = cx.config
    if ea == er:
        cx.reason = "structurally equal"
        return True
    if not (isinstance(ea, sympy.Expr) and isinstance(er, sympy.Expr)):
        cx.reason = f"objects of different kinds: {type(ea).__name__} vs {type(er).__name__}"
        return False
    if (ea - er) == 0:  # sympy's automatic evaluation already cancels (rationals, like terms)
        cx.reason = "equal (difference is 0)"
        return True
    free = sorted(ea.free_symbols | er.free_symbols, key=lambda s: s.name)
    if not free:
        if judge is not None:
            ok = _within_stated_precision(ea, er, judge, cx)
            if ok is not None:
                return ok
        va, vr = _value(ea), _value(er)
        if va is not None and vr is not None and not _close(ea, er, va, vr, 1e-12):
            cx.reason = f"values differ: {_short(va)} vs {_short(vr)}"
            return False
        diff = sympy.simplify(ea - er)
        if diff == 0:
            cx.reason = "symbolically equal (simplify)"
            return True
        if diff.is_Rational:
            cx.reason = f"exactly different (difference {_short(diff)})"
            return False
        if va is not None and vr is not None and _close(ea, er, va, vr, 1e-50):
            cx.reason = "equal to 50 digits (not proven symbolically)"
            return True
        cx.reason = "not equal (simplify leaves a nonzero difference)"
        return False
    # expressions with variables: sample points first, then simplification (decimals are exact here)
    agreed = 0
    for k in range(config.sample_points):
        point = {s: sympy.Rational(_SAMPLE_VALUES[(k + j) % len(_SAMPLE_VALUES)]) for j, s in enumerate(free)}
        pa, pr = ea.subs(point), er.subs(point)
        va, vr = _value(pa), _value(pr)
        if va is None or vr is None:
            continue
        if not _close(pa, pr, va, vr, 1e-12):
            where = ", ".join(f"{s}={point[s]}" for s in free[:3])
            cx.reason = f"values differ at {where}"
            return False
        agreed += 1
    diff = sympy.simplify(ea - er)
    if diff == 0:
        cx.reason = "symbolically equal (simplify)"
        return True
    if agreed == config.sample_points:
        cx.reason = f"equal at all {agreed} sample points (simplify could not prove it)"
        return True
    cx.reason = "not equal (simplify leaves a nonzero difference)"
    return False


def _sympy_equations(a: Equation, r: Equation, cx: _Cmp) -> bool:
    import sympy

    try:
        da = _to_sympy(a.lhs, cx.config) - _to_sympy(a.rhs, cx.config)
    except (_ParseError, TypeError) as e:
        raise _SideError("answer", str(e)) from None
    try:
        dr = _to_sympy(r.lhs, cx.config) - _to_sympy(r.rhs, cx.config)
    except (_ParseError, TypeError) as e:
        raise _SideError("reference", str(e)) from None
    za, zr = sympy.simplify(da) == 0, sympy.simplify(dr) == 0
    if za or zr:
        cx.reason = "both equations are identities" if za and zr else "an identity vs an equation"
        return za and zr
    ratio = sympy.simplify(da / dr)
    if ratio.is_number and ratio != 0 and ratio.is_finite:
        cx.reason = "equations are constant multiples" if ratio != 1 else "equations are the same"
        return True
    cx.reason = "equations differ (not constant multiples)"
    return False


# --------------------------------------------------------------------------- the grader


def _prepare(answer: str, reference: str, config: MathEquiv2Config):
    """(verdict, None) when decided by strings alone, else (None, (answer_node, reference_node))."""
    if answer == reference:
        return Judgment(True, "correct", "identical strings"), None
    for side, s in (("answer", answer), ("reference", reference)):
        if len(s) > config.max_answer_chars:
            return Judgment(None, f"parse_error_{side}",
                           f"{side} is {len(s):,} chars, over MAX_ANSWER_CHARS={config.max_answer_chars}"), None
    na, nr = normalize(answer), normalize(reference)
    if not nr:
        return Judgment(None, "parse_error_reference", "reference is empty"), None
    if not na:
        return Judgment(None, "parse_error_answer", "answer is empty after normalization"), None
    if na == nr:
        return Judgment(True, "correct", "equal after normalization"), None
    try:
        node_r = _parse_structure(nr, config)
    except _ParseError as e:
        return Judgment(None, "parse_error_reference", str(e)), None
    try:
        node_a = _parse_structure(na, config)
    except _ParseError as e:
        return Judgment(None, "parse_error_answer", str(e)), None
    return None, (node_a, node_r)


def _decide(node_a, node_r, cx: _Cmp) -> Judgment:
    try:
        ok = _same(node_a, node_r, cx)
    except _SideError as e:
        return Judgment(None, f"parse_error_{e.side}", str(e))
    return Judgment(True, "correct", cx.reason) if ok else Judgment(False, "incorrect", cx.reason)


def math_equiv2_fast(answer: str, reference: str, *, num_choices: int | None = None,
                     config: MathEquiv2Config = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    verdict, nodes = _prepare(answer, reference, config)
    if verdict is not None:
        return verdict
    try:
        return _decide(*nodes, _Cmp(config, fast=True))
    except _NeedsSympy:
        return None


@register("math.equiv", "2", config=CONFIG, fast=math_equiv2_fast, isolated=True,
          description="Symbolic equivalence of final math answers (sympy + latex2sympy2_extended), "
                      "MATH conventions, assignments by variable, decimals to their stated precision, "
                      "bounded time",
          source="audit: math.equiv@1 revised after review (assignments, stated precision, division by zero)")
def math_equiv2(answer: str, reference: str, *, num_choices: int | None = None,
                config: MathEquiv2Config = CONFIG) -> Judgment:
    verdict, nodes = _prepare(answer, reference, config)
    if verdict is not None:
        return verdict
    problem = _check_versions(config)
    if problem:
        return Judgment(None, "error", problem)
    return _decide(*nodes, _Cmp(config, fast=False))
