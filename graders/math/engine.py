"""The math grading engine: one pipeline of methods, shared by every `math.equiv` version.

    answer, reference ──normalize──▶ strings ──parse──▶ nodes ──same──▶ Judgment
                                      (equal?)            (numbers, lists, sets, intervals,
                                                           equations, units, sympy leaves)

`MathEngine(config).grade(answer, reference)` is the full verdict; `.fast(...)` the verdict when
strings and exact plain numbers decide it (no sympy), else None. Every step is a method called
through the instance, so a version is a small subclass that overrides the steps whose rule it
changes, plus a frozen config dataclass (`audit.graders.math.v1`, `v2`, `v3`; each module's
docstring lists its rules and known traps). The steps:

1. Normalization (`normalize`, string only): `normalize_once` repeated until nothing
   changes (at most MAX_NORMALIZE_ROUNDS); its symbol, degree and space steps are methods of their own.
2. Structure (`parse`, `parse_element`): a top-level list, a bracketed tuple/interval/set, a union,
   `a \\pm b`; one element is read by the first of `element_readers` that takes it (`parse_equation`,
   brackets, units, text, `plain_number`, ...: an equation or assignment, a text answer, a plain number
   (exact, `fractions.Fraction`)), else it is an expression (`Expr`, for sympy).
3. Comparison (`same` and the methods it dispatches to): units, lists in or out of order (maximum
   bipartite matching), unions, text, equations (constant multiples), numbers, and sympy leaves:
   matrices entry by entry, sets, relations, scalars (`scalar_equal`: exact or symbolic, then
   numeric evaluation at 30 digits, `sympy.simplify`, sample points for expressions in variables).
4. Caps (`check_size`, and the `Caps` every config carries as `caps`): answer length, element length,
   nesting, list size, exponents (estimated in floats, towers never evaluated), tree size. Over a
   cap: `parse_error_answer` / `parse_error_reference` naming the cap. The per-item time budget
   (`budget_s`) is enforced around `grade` by `audit.graders.budget`, in a worker process.

Where the versions' rules differ the engine has a hook (`assign`, `decimal_number`, `divided_by_zero`,
`numbers_equal`, `judge_written`, `judge_values`, `values_differ`, `unproven_constants`,
`sample_tolerance`, `differ_exactly`, `unproven_functions`, `parse_alternatives`, `list_of`, `list_vs_tuple`, the
`element_readers` and their `trailing_text` and `base_numeral`, ...). Its
default is the rule most versions share (exact numbers, no tolerance, assignments kept, a zero
denominator refused), or @1's where a later version only adds a step (normalization, `read_sympy`);
`decimal_number` has none, as each version reads a written decimal its own way. Pure string
scanning lives in `audit.graders.math.latex`.

A version's fingerprint covers its class, every base class up to this engine (their sources and
everything their methods name) and its config, so editing the engine moves every version's
fingerprint; `audit lock --migrate` then accepts the new code only when each version's outputs on
the golden rows and the real data are byte-identical to the locked code's.

Traps when editing: the order of sympy calls is part of a version's behaviour (sympy caches results
across the items a worker grades), so a hook never evaluates anything its version did not; parse
errors' messages and node type names end up in verdict reasons (`cannot compare Seq symbolically`);
a class attribute that names a module constant is not fingerprinted (methods name constants, classes
hold none; `element_readers` names methods, which are).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, cast

from audit.graders import Judgment, installed_version
from audit.graders.math.latex import (
    BARE_FUNC_RE,
    BASE_SUBSCRIPT_RE,
    COMMAND_RE,
    DEGREE_RE,
    FRAC_RE,
    INFINITY_RE,
    MIXED_RE,
    NUMBER_RE,
    POW_TEN_RE,
    RELATION_RE,
    SIMPLE_REPLACE,
    SIZING_RE,
    SLASH_RE,
    SPACING_RE,
    TEXTLIKE_RE,
    THOUSANDS_PREFIX_RE,
    TIMES_TEN_RE,
    UNICODE,
    UNION_SEPS,
    UNIT_TEXT_RE,
    UNIT_WORDS_RE,
    brace_single_args,
    depth_ok,
    enclosing,
    expand_pm,
    is_text,
    is_variable,
    split_top,
    squeeze_spaces,
    text_key,
    unit_key,
    unwrap_command,
    unwrap_outer,
)

# --------------------------------------------------------------------------- caps


@dataclass(frozen=True)
class Caps:
    """The bounds every version runs under, one field of each version's config (so of its fingerprint):
    the size caps, named in the parse error of an answer over one (`MAX_NESTING=24`), and the pinned
    libraries."""

    max_answer_chars: int = 2_000
    """Longer answers or references (raw) are not graded unless they are identical strings."""
    max_parse_chars: int = 600
    """Longest single element handed to latex2sympy."""
    max_nesting: int = 24
    """Deepest brace/bracket nesting accepted."""
    max_elements: int = 32
    """Most elements in a list, set or tuple."""
    max_exact_exponent: int = 100_000
    """Largest integer exponent evaluated exactly; bigger towers (`10^{10^{10}}`) are over the cap."""
    max_number_digits: int = 1_000
    """Longest digit string read as an exact number."""
    max_tree_nodes: int = 2_000
    """Largest sympy expression tree compared."""
    sample_points: int = 4
    """Points at which expressions with variables are evaluated before simplification."""
    sympy_version: str = "1.14.0"
    latex2sympy_version: str = "1.11.0"
    """Pinned library versions: a different install gives `error`, not silently different verdicts."""


MAX_NORMALIZE_ROUNDS = 6
"""normalize() repeats its pass until nothing changes, at most this many times."""


class ParseError(Exception):
    """An element cannot be read; the message says why (it becomes the verdict's reason)."""


class NeedsSympy(Exception):
    """Raised by the fast path when a comparison needs the symbolic step."""


class SideError(Exception):
    """A side (`answer` or `reference`) cannot be read symbolically: a parse error of that side."""

    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side


# --------------------------------------------------------------------------- nodes


@dataclass(frozen=True)
class Text:
    key: str
    """Comparison key (`text_key`)."""
    raw: str


@dataclass(frozen=True)
class Expr:
    latex: str
    """LaTeX handed to latex2sympy; decimals in it are read as the exact fractions they write."""


@dataclass(frozen=True)
class Number:
    value: Fraction
    places: int | None = None
    """Digits after the decimal point as written, for the versions that judge decimals by them;
    None for an exact number (and for every number of a version that reads decimals exactly)."""
    exponent: int = 0
    """Power of ten of scientific notation (`1.5e3`: 3), which scales the stated precision."""

    @property
    def unit(self) -> Fraction | None:
        """One unit of the last stated digit (`0.33`: 1/100, `1.5e3`: 100); None when exact."""
        return None if self.places is None else Fraction(10) ** (self.exponent - self.places)


@dataclass(frozen=True)
class Equation:
    lhs: str
    rhs: str
    raw: str


@dataclass(frozen=True)
class Seq:
    kind: str
    """`list` (bare, unordered), `set` (\\{…\\}, unordered), `tuple` ((…) or ⟨…⟩), `interval`
    (mixed or square brackets)."""
    open: str
    close: str
    items: tuple


@dataclass(frozen=True)
class Union:
    parts: tuple


@dataclass(frozen=True)
class WithUnit:
    value: object
    unit: str


@dataclass(frozen=True)
class Assignment:
    variable: str
    """Comparison key of the left side: spaces and braces removed (`a_{1}` → `a_1`)."""
    value: object
    lhs: str
    """The left side as written."""
    rhs: str
    """The right side as written, for comparing with an equation; empty for `\\in`/`\\approx`."""


GROUPING_RE = re.compile(r"[{}\s]")


@dataclass
class Cmp:
    """Comparison context: fast (no sympy) or full; the reason of the deciding rule."""

    fast: bool
    reason: str = ""


# --------------------------------------------------------------------------- numeric helpers

_DECIMAL_RE = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.])")
_SCI_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([-+]?\d+)(?![\w.])")
SAMPLE_VALUES = ("0.7312", "1.6180", "-0.4142", "2.7183", "0.3091", "-1.3247")
"""Rational points at which expressions in variables are compared (cycled; each variable its own)."""


def exact_decimals(latex: str) -> str:
    r"""Decimal literals to exact fractions, `1.5e3` to `1.5\times10^{3}` (latex2sympy reads `1e3` as 1·e·3)."""
    latex = _SCI_RE.sub(r"{\1\\times10^{\2}}", latex)
    return _DECIMAL_RE.sub(lambda m: "{\\frac{" + m.group(1) + m.group(2) + "}{1" + "0" * len(m.group(2)) + "}}", latex)


def check_versions(config) -> str | None:
    """Why the installed sympy / latex2sympy2_extended differ from the config's pins, or None."""
    caps = config.caps
    for dist, want in (("sympy", caps.sympy_version), ("latex2sympy2_extended", caps.latex2sympy_version)):
        have = installed_version(dist)
        if have is None:
            return f"{dist} is not installed (pinned {want})"
        if have != want:
            return f"installed {dist} {have} differs from the pinned {want}; verdicts would not be reproducible"
    return None


def log10_abs(e) -> float | None:
    """An estimate of log10|e| for numeric trees of numbers, powers, products and sums, computed in
    floats without evaluating e (towers stay cheap); None when e is of another kind."""
    import math as pymath

    import sympy

    if e.is_Integer or e.is_Rational:
        p, q = abs(int(e.p)), int(e.q)
        if p == 0:
            return float("-inf")
        return (p.bit_length() - q.bit_length()) * pymath.log10(2)
    if e.is_Float:
        return pymath.log10(abs(float(e))) if e != 0 else float("-inf")
    if e in (sympy.pi, sympy.E):
        return 0.5
    if isinstance(e, sympy.Pow):
        lb, lx = log10_abs(e.base), log10_abs(e.exp)
        if lb is None or lx is None:
            return None
        if lx > 300:
            return float("inf") if lb != 0 else 0.0
        x = 10.0 ** lx
        return x * lb if (e.exp.is_extended_negative is not True) else -x * lb
    if isinstance(e, (sympy.Mul, sympy.Add)):
        parts = [log10_abs(a) for a in e.args]
        known = [p for p in parts if p is not None]
        if len(known) < len(parts):
            return None
        return sum(known) if isinstance(e, sympy.Mul) else max(known) + pymath.log10(len(known))
    return None


def numeric_value(expr):
    """A finite numeric value of expr (sympy number, 30 digits), or None."""
    import sympy

    try:
        v = sympy.N(expr, 30)
    except (TypeError, ValueError, ZeroDivisionError, ArithmeticError, AttributeError):
        return None
    if not getattr(v, "is_number", False) or v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
        return None
    re_, im_ = v.as_real_imag()
    if not (re_.is_Number and im_.is_Number):
        return None
    return v


def values_close(ea, er, va, vr, rel: float) -> bool:
    """|ea - er| <= rel * max(|va|, |vr|), the difference evaluated adaptively (no cancellation loss)."""
    import sympy

    d = numeric_value(ea - er)
    if d is None:
        d = va - vr
    scale = max(abs(va), abs(vr))
    if scale == 0:
        return bool(abs(d) == 0)
    return bool(abs(d) <= sympy.Float(rel, 30) * scale)


def short(x) -> str:
    """A sympy value for a reason: floats to 8 digits, at most 30 characters."""
    import sympy

    if isinstance(x, sympy.Float):
        x = sympy.N(x, 8)
    s = str(x)
    return s if len(s) <= 30 else s[:29] + "…"


def fmt(x: Fraction) -> str:
    """An exact number for a reason, at most 40 characters."""
    s = str(x)
    return s if len(s) <= 40 else s[:37] + "…"


# --------------------------------------------------------------------------- the engine


class MathEngine:
    """The pipeline of `math.equiv`; a version subclasses it (see the module docstring).

    `config` is the version's frozen config: every field a step reads (`budget_s`, the `caps`: size
    caps, `sample_points`, the pinned `sympy_version` / `latex2sympy_version`) is part of the fingerprint.
    """

    def __init__(self, config) -> None:
        self.config = config

    # -- entry points ---------------------------------------------------------------------------

    def grade(self, answer: str, reference: str) -> Judgment:
        """The full verdict (symbolic steps included); callers bound its time."""
        prepared = self.prepare(answer, reference)
        if isinstance(prepared, Judgment):
            return prepared
        problem = check_versions(self.config)
        if problem:
            return Judgment(None, "error", problem)
        node_a, node_r = prepared
        return self.decide(node_a, node_r, Cmp(fast=False))

    def fast(self, answer: str, reference: str) -> Judgment | None:
        """The verdict when strings and exact plain numbers decide it (no sympy), else None."""
        prepared = self.prepare(answer, reference)
        if isinstance(prepared, Judgment):
            return prepared
        try:
            node_a, node_r = prepared
            return self.decide(node_a, node_r, Cmp(fast=True))
        except NeedsSympy:
            return None

    def prepare(self, answer: str, reference: str) -> Judgment | tuple[object, object]:
        """The verdict when strings alone decide it, else the (answer, reference) nodes."""
        cap = self.config.caps.max_answer_chars
        if answer == reference:
            return Judgment(True, "correct", "identical strings")
        for side, s in (("answer", answer), ("reference", reference)):
            if len(s) > cap:
                why = f"{side} is {len(s):,} chars, over MAX_ANSWER_CHARS={cap}"
                return Judgment(None, f"parse_error_{side}", why)
        na, nr = self.normalize(answer), self.normalize(reference)
        if not nr:
            return Judgment(None, "parse_error_reference", "reference is empty")
        if not na:
            return Judgment(None, "parse_error_answer", "answer is empty after normalization")
        if na == nr:
            return Judgment(True, "correct", "equal after normalization")
        try:
            node_r = self.parse(nr)
        except ParseError as e:
            return Judgment(None, "parse_error_reference", str(e))
        try:
            node_a = self.parse(na)
        except ParseError as e:
            return Judgment(None, "parse_error_answer", str(e))
        return node_a, node_r

    def decide(self, node_a: object, node_r: object, cx: Cmp) -> Judgment:
        try:
            ok = self.same(node_a, node_r, cx)
        except SideError as e:
            return self.unreadable(e, node_r)
        return Judgment(True, "correct", cx.reason) if ok else Judgment(False, "incorrect", cx.reason)

    def unreadable(self, e: SideError, node_r: object) -> Judgment:
        """The verdict when a side cannot be read symbolically (`node_r`: the reference): a parse error of it."""
        return Judgment(None, f"parse_error_{e.side}", str(e))

    # -- normalization --------------------------------------------------------------------------

    def normalize(self, s: str) -> str:
        """Canonical string form of an answer (string rewriting only, no parsing). Idempotent."""
        for _ in range(MAX_NORMALIZE_ROUNDS):
            t = self.normalize_once(s)
            if t == s:
                return t
            s = t
        return s

    def normalize_once(self, s: str) -> str:
        """One pass: symbols to LaTeX, outer wrappers off, commands made canonical, degrees and
        spacing dropped, bare functions to commands, single arguments braced, units marked, spaces
        squeezed."""
        s = self.replace_symbols(s)
        s = s.strip()
        s = unwrap_outer(s)
        for a, b in SIMPLE_REPLACE:
            s = s.replace(a, b)
        s = SIZING_RE.sub("", s)
        s = SPACING_RE.sub(lambda m: m.group(0) if m.group(0) == "\\\\" else " ", s)
        s = self.drop_degrees(s)
        s = TEXTLIKE_RE.sub(r"\\text{", s)
        s = INFINITY_RE.sub(r"\\infty", s)
        s = BARE_FUNC_RE.sub(r"\\\1", s)
        s = brace_single_args(s)
        s = UNIT_WORDS_RE.sub(r"\1\\text{\2}\3", s)  # `5 cm^2` → `5\text{cm}^2`
        return self.squeeze(s)

    def replace_symbols(self, s: str) -> str:
        """Unicode minus signs, operators and constants to LaTeX (`−` → `-`, `π` → `\\pi`)."""
        for a, b in UNICODE:
            s = s.replace(a, b)
        return s

    def drop_degrees(self, s: str) -> str:
        """`90^\\circ` → `90`: degrees are dropped, never converted."""
        return DEGREE_RE.sub("", s)

    def squeeze(self, s: str) -> str:
        """Spaces removed (but between two letters and after a comma), `.5` → `0.5`, a trailing
        sentence period and trailing separators dropped."""
        s = squeeze_spaces(s)
        s = re.sub(r"(?<![\d\\])\.(?=\d)", "0.", s)  # .5 → 0.5
        if s.endswith(".") and not s.endswith(".."):  # a sentence's period
            s = s[:-1]
        s = s.rstrip(",; ")
        return s

    # -- structure ------------------------------------------------------------------------------

    def parse(self, s: str, top: bool = True) -> object:
        """The node for a normalized answer: list, set, tuple, interval, union, equation, number, …"""
        config = self.config
        if not s:
            raise ParseError("empty")
        if r"\boxed" in s or r"\fbox" in s:
            n = s.count(r"\boxed") + s.count(r"\fbox")
            raise ParseError(f"{n} \\boxed{{}} groups in one answer; they are not joined into a set")
        if not depth_ok(s, config.caps.max_nesting):
            raise ParseError(f"nested deeper than MAX_NESTING={config.caps.max_nesting}")
        m = THOUSANDS_PREFIX_RE.match(s) if top else None
        if m:
            return self.parse_element(m.group(0).replace(",", "") + s[m.end():])
        node = self.parse_alternatives(s)
        if node is not None:
            return node
        items = split_top(s, (",", ";"))
        if len(items) > 1:
            self.check_count(len(items))
            expanded: list[object] = []
            for it in items:
                pm = expand_pm(it)
                expanded.extend(self.parse_element(x) for x in (pm or [it]))
            return self.list_of(tuple(expanded))
        enc = enclosing(s)
        if enc is not None:
            op, cl, inner = enc
            if op == r"\{" and not inner.strip():
                return Seq("set", op, cl, ())
            inner_items = split_top(inner, (",", ";"))
            self.check_count(len(inner_items))
            if op == r"\{":
                expanded = []
                for it in inner_items:
                    pm = expand_pm(it)
                    expanded.extend(self.parse_element(x) for x in (pm or [it]))
                return Seq("set", op, cl, tuple(expanded))
            if len(inner_items) == 1:  # grouping: (5) → 5
                return self.parse_element(inner)
            kind = "tuple" if (op, cl) in (("(", ")"), (r"\langle", r"\rangle")) else "interval"
            return Seq(kind, "(" if op == r"\langle" else op, ")" if cl == r"\rangle" else cl,
                       tuple(self.parse_element(x) for x in inner_items))
        pm = expand_pm(s)
        if pm is not None:
            return Seq("list", "", "", tuple(self.parse_element(x) for x in pm))
        return self.parse_element(s)

    def parse_alternatives(self, s: str) -> object | None:
        """A union (`\\cup`, or `\\text{or}` between inequalities), or None when `s` has no separator."""
        config = self.config
        parts = split_top(s, UNION_SEPS)
        if len(parts) > 1:
            if len(parts) > config.caps.max_elements:
                raise ParseError(f"more than MAX_ELEMENTS={config.caps.max_elements} parts")
            return Union(tuple(self.parse(p, top=False) for p in parts))
        return None

    def check_count(self, n: int) -> None:
        if n > self.config.caps.max_elements:
            raise ParseError(f"{n} elements, over MAX_ELEMENTS={self.config.caps.max_elements}")

    def list_of(self, items: tuple) -> object:
        """A top-level comma list."""
        return Seq("list", "", "", items)

    element_readers: tuple[str, ...] = ("parse_equation", "read_group", "read_empty_set", "read_unit",
                                         "read_text_command", "read_text", "read_base_numeral", "plain_number")
    """The methods that read one element, tried in this order: the first that returns a node (not None)
    decides, and an element none of them reads is an expression (`expression`). A version overrides a
    reader or inserts its own (`readers_after`); as method names they are fingerprinted with the class."""

    @classmethod
    def readers_after(cls, inserted: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
        """This class's `element_readers` with `inserted[name]` put right after each reader `name`."""
        unknown = sorted(set(inserted) - set(cls.element_readers))
        if unknown:
            raise ValueError(f"no element reader named {', '.join(unknown)}")
        return tuple(x for name in cls.element_readers for x in (name, *inserted.get(name, ())))

    def parse_element(self, s: str) -> object:
        """One element (no top-level separators): the first of `element_readers` that reads it."""
        s = s.strip()
        if not s:
            raise ParseError("empty element")
        if s.startswith("+") and not s.startswith("+-"):
            s = s[1:]
        for name in self.element_readers:
            node = getattr(self, name)(s)
            if node is not None:
                return node
        return self.expression(s)

    def read_group(self, s: str) -> object | None:
        """A single-group wrapper: `(5)` → 5 (`\\text{(B)}` stays text); empty brackets are an error."""
        enc = enclosing(s)
        if enc is None:
            return None
        if not enc[2].strip() and enc[0] != r"\{":
            raise ParseError(f"empty brackets '{s}'")
        return self.parse(s, top=False)

    @staticmethod
    def read_empty_set(s: str) -> object | None:
        return Seq("set", r"\{", r"\}", ()) if s in (r"\emptyset", r"\{\}") else None

    def read_unit(self, s: str) -> object | None:
        """A value followed by `\\text{…}` (optionally `^2`, `^3`): read by `trailing_text`."""
        m = UNIT_TEXT_RE.match(s)
        if not m or not m.group(1).strip() or is_text(m.group(1)):
            return None
        return self.trailing_text(m.group(1), m.group(2), m.group(3) or "", s)

    def trailing_text(self, value: str, text: str, power: str, s: str) -> object:
        """`value\\text{text}power` (all of it `s`): the text is a unit, whatever it says."""
        return WithUnit(self.parse_element(value), text + power)

    def read_text_command(self, s: str) -> object | None:
        """`\\text{5}`: math written in a text command is read as math."""
        inner = unwrap_command(s, r"\text")
        if inner is not None and not is_text(inner) and inner.strip():
            return self.parse_element(self.normalize(inner))
        return None

    @staticmethod
    def read_text(s: str) -> object | None:
        """Words (`is_text`) are text, compared as text."""
        return Text(text_key(s), s) if is_text(s) else None

    def read_base_numeral(self, s: str) -> object | None:
        """Digits with a base subscript (`4210_{5}`): read by `base_numeral`."""
        m = BASE_SUBSCRIPT_RE.match(s)
        if not m or not m.group(1).isdigit():
            return None
        return self.base_numeral(m.group(1), int(m.group(2)), s)

    def base_numeral(self, digits: str, base: int, s: str) -> object:
        """The base is dropped (the question fixes it): the digits are read as a number."""
        num = self.plain_number(digits)
        return num if num is not None else self.expression(digits)

    def expression(self, s: str) -> Expr:
        """An element no reader took: an expression for sympy, within MAX_PARSE_CHARS."""
        cap = self.config.caps.max_parse_chars
        if len(s) > cap:
            raise ParseError(f"element is {len(s):,} chars, over MAX_PARSE_CHARS={cap}")
        return Expr(s)

    def parse_equation(self, s: str) -> object | None:
        """`x = 4` → the assignment of 4 to `x` (`assign`); `a = b = c` and `2+3 = 5` → their last part;
        other equations → Equation; `x \\in S`, `x \\approx v` → assignments; None when `s` has no `=`."""
        for op in (r"\in", r"\approx"):
            parts = split_top(s, (op,))
            if len(parts) == 2 and is_variable(parts[0]):
                return self.assign(parts[0], "", self.parse(parts[1], top=False))
        parts = split_top(s, ("=",))
        if len(parts) == 1:
            return None
        if any(not p for p in parts):
            raise ParseError(f"equation with an empty side: '{s}'")
        if is_variable(parts[0]):
            return self.assign(parts[0], parts[-1], self.parse(parts[-1], top=False))
        if len(parts) > 2 or not re.search(r"[A-Za-z]", COMMAND_RE.sub("", parts[0])):
            return self.parse(parts[-1], top=False)
        return Equation(parts[0], parts[1], s)

    def assign(self, lhs: str, rhs: str, value: object) -> object:
        """`x = v` → Assignment; `(x, y) = (a, b)` → the tuple of assignments `x = a`, `y = b`."""
        if lhs.startswith("(") and isinstance(value, Seq) and value.kind == "tuple":
            names = split_top(lhs[1:-1], (",",))
            if len(names) == len(value.items) and len({GROUPING_RE.sub("", n) for n in names}) == len(names):
                return Seq("tuple", "(", ")", tuple(Assignment(GROUPING_RE.sub("", n), v, n, "")
                                                    for n, v in zip(names, value.items, strict=True)))
        return Assignment(GROUPING_RE.sub("", lhs), value, lhs, rhs)

    def plain_number(self, s: str) -> Number | None:
        """Integers, decimals, scientific notation, integer fractions and mixed numbers, exactly."""
        config = self.config
        if len(s) > config.caps.max_number_digits:
            return None
        if NUMBER_RE.match(s):
            mant, _, exp = s.lower().partition("e")
            if exp and abs(int(exp)) > config.caps.max_exact_exponent:
                return None
            return self.decimal_number(mant, int(exp) if exp else 0)
        m = TIMES_TEN_RE.match(s)
        if m:
            if abs(int(m.group(2))) > config.caps.max_exact_exponent:
                return None
            return self.decimal_number(m.group(1), int(m.group(2)))
        m = POW_TEN_RE.match(s)
        if m:
            if abs(int(m.group(2))) > config.caps.max_exact_exponent:
                return None
            v = Fraction(10) ** int(m.group(2))
            return Number(-v if m.group(1) == "-" else v)
        return self.fraction_number(s)

    def decimal_number(self, mantissa: str, exponent: int) -> Number:
        """The number `mantissa × 10^exponent` as written (`1.50`, `1.5e3`, `2\\times10^{3}`): each
        version's rule (what a decimal point states)."""
        raise NotImplementedError(f"{type(self).__name__} must say how it reads a written decimal")

    def fraction_number(self, s: str) -> Number | None:
        """`\\frac{a}{b}`, `a/b`, `N\\frac{a}{b}` with integer literals, exactly; None for anything else."""
        for rx, den in ((FRAC_RE, 3), (SLASH_RE, 2), (MIXED_RE, 4)):
            m = rx.match(s)
            if m and int(m.group(den)) == 0:
                return self.divided_by_zero(s)
        m = FRAC_RE.match(s)
        if m:
            v = Fraction(int(m.group(2)), int(m.group(3)))
            return Number(-v if m.group(1) == "-" else v)
        m = SLASH_RE.match(s)
        if m:
            return Number(Fraction(int(m.group(1)), int(m.group(2))))
        m = MIXED_RE.match(s)
        if m:
            v = int(m.group(2)) + Fraction(int(m.group(3)), int(m.group(4)))
            return Number(-v if m.group(1) == "-" else v)
        return None

    def divided_by_zero(self, s: str) -> Number | None:
        """A literal fraction with a zero denominator: not a value, a parse error of its side."""
        raise ParseError(f"division by zero in '{s[:60]}'")

    # -- comparison -----------------------------------------------------------------------------

    def same(self, a: object, r: object, cx: Cmp) -> bool:
        """Is answer node `a` equal to reference node `r`? Sets cx.reason on a decision."""
        if isinstance(a, Assignment) or isinstance(r, Assignment):
            return self.same_assignment(a, r, cx)
        if self.has_inequality(a) or self.has_inequality(r):
            if cx.fast:
                raise NeedsSympy()
            return self.same_as_sets(a, r, cx)
        if isinstance(a, WithUnit) and isinstance(r, WithUnit):
            if unit_key(a.unit) != unit_key(r.unit):
                cx.reason = f"units differ: '{a.unit}' vs '{r.unit}'"
                return False
            return self.same(a.value, r.value, cx)
        if isinstance(a, WithUnit):
            return self.same(a.value, r, cx)
        if isinstance(r, WithUnit):
            return self.same(a, r.value, cx)
        if isinstance(a, Seq) and a.kind == "list" and len(a.items) == 1:
            return self.same(a.items[0], r, cx)
        if isinstance(r, Seq) and r.kind == "list" and len(r.items) == 1:
            return self.same(a, r.items[0], cx)
        if isinstance(a, Seq) or isinstance(r, Seq):
            return self.same_seq(a, r, cx)
        if isinstance(a, Union) or isinstance(r, Union):
            if not (isinstance(a, Union) and isinstance(r, Union)):
                cx.reason = "a union of intervals vs a single object"
                return False
            return self.match_unordered(a.parts, r.parts, cx, "union parts")
        if isinstance(a, Text) or isinstance(r, Text):
            ka = a.key if isinstance(a, Text) else text_key(self.raw(a))
            kr = r.key if isinstance(r, Text) else text_key(self.raw(r))
            cx.reason = "same text" if ka == kr else f"text differs: '{ka}' vs '{kr}'"
            return ka == kr
        if isinstance(a, Equation) or isinstance(r, Equation):
            if not (isinstance(a, Equation) and isinstance(r, Equation)):
                cx.reason = "an equation vs a value"
                return False
            if cx.fast:
                raise NeedsSympy()
            return self.equations_equal(a, r, cx)
        if isinstance(a, Number) and isinstance(r, Number):
            return self.numbers_equal(a, r, cx)
        if isinstance(a, Expr) and isinstance(r, Expr) and a.latex == r.latex:
            cx.reason = "same expression"
            return True
        if cx.fast:
            raise NeedsSympy()
        return self.sympy_equal(a, r, cx)

    def same_assignment(self, a: object, r: object, cx: Cmp) -> bool:
        """Both assignments: same variable and equal values. One assignment: against an equation,
        compared as equations; against anything else, its value is compared."""
        if isinstance(a, Assignment) and isinstance(r, Assignment):
            if a.variable != r.variable:
                cx.reason = f"assignments to different variables: {a.variable} vs {r.variable}"
                return False
            ok = self.same(a.value, r.value, cx)
            cx.reason = f"{a.variable}: {cx.reason}"
            return ok
        asg, other = (a, r) if isinstance(a, Assignment) else (cast(Assignment, r), a)
        if isinstance(other, Equation) and asg.rhs:
            if cx.fast:
                raise NeedsSympy()
            eq = Equation(asg.lhs, asg.rhs, f"{asg.lhs}={asg.rhs}")
            try:
                ok = self.equations_equal(*((eq, other) if asg is a else (other, eq)), cx)
            except SideError as e:  # not readable as an equation: an equation vs a value
                cx.reason = f"an equation vs a value (not comparable as equations: {e})"
                return False
            cx.reason = f"assignment compared as an equation: {cx.reason}"
            return ok
        return self.same(asg.value, other, cx) if asg is a else self.same(other, asg.value, cx)

    def same_seq(self, a: object, r: object, cx: Cmp) -> bool:
        if not (isinstance(a, Seq) and isinstance(r, Seq)):
            one = a if isinstance(a, Seq) else cast(Seq, r)
            cx.reason = f"a {one.kind} of {len(one.items)} vs a single value"
            return False
        if self.all_assignments(a) and self.all_assignments(r):  # variable by variable, in any order
            return self.match_unordered(a.items, r.items, cx, "assignments")
        unordered = {"list", "set"}
        if a.kind in unordered and r.kind in unordered:
            return self.match_unordered(a.items, r.items, cx, "elements")
        if "list" in (a.kind, r.kind) and {a.kind, r.kind} <= {"list", "tuple"}:
            return self.list_vs_tuple(a, r, cx)
        if a.kind != r.kind or a.open != r.open or a.close != r.close:
            cx.reason = f"brackets differ: {a.open or '·'}…{a.close or '·'} vs {r.open or '·'}…{r.close or '·'}"
            return False
        return self.match_ordered(a.items, r.items, cx)

    def list_vs_tuple(self, a: Seq, r: Seq, cx: Cmp) -> bool:
        """A bare list against a tuple: compared in order."""
        return self.match_ordered(a.items, r.items, cx)

    @staticmethod
    def all_assignments(s: Seq) -> bool:
        return s.kind in ("list", "tuple") and bool(s.items) and all(isinstance(x, Assignment) for x in s.items)

    def match_ordered(self, a: tuple, r: tuple, cx: Cmp) -> bool:
        if len(a) != len(r):
            cx.reason = f"{len(a)} elements vs {len(r)}"
            return False
        for i, (x, y) in enumerate(zip(a, r, strict=True)):
            if not self.same(x, y, cx):
                cx.reason = f"element {i + 1}: {cx.reason}"
                return False
        cx.reason = f"all {len(a)} elements equal in order"
        return True

    def match_unordered(self, a: tuple, r: tuple, cx: Cmp, what: str) -> bool:
        if len(a) != len(r):
            cx.reason = f"{len(a)} {what} vs {len(r)}"
            return False
        memo: dict[tuple[int, int], bool] = {}

        def eq(i: int, j: int) -> bool:  # each pair compared at most once
            if (i, j) not in memo:
                memo[(i, j)] = self.same(a[i], r[j], cx)
            return memo[(i, j)]

        match_of_r: dict[int, int] = {}

        def augment(i: int, seen: set[int]) -> bool:  # maximum bipartite matching
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

    def numbers_equal(self, a: Number, r: Number, cx: Cmp) -> bool:
        """Plain numbers: equal exactly (as rationals)."""
        if a.value == r.value:
            cx.reason = "equal numbers"
            return True
        cx.reason = f"numbers differ: {fmt(a.value)} vs {fmt(r.value)}"
        return False

    @staticmethod
    def raw(node: object) -> str:
        if isinstance(node, Expr):
            return node.latex
        if isinstance(node, Number):
            return str(node.value)
        if isinstance(node, Equation):
            return node.raw
        return str(node)

    # -- sets of reals --------------------------------------------------------------------------

    def has_inequality(self, node: object) -> bool:
        if isinstance(node, Expr):
            return bool(RELATION_RE.search(node.latex))
        if isinstance(node, Union):
            return any(self.has_inequality(p) for p in node.parts)
        if isinstance(node, (WithUnit, Assignment)):
            return self.has_inequality(node.value)
        return False

    def same_as_sets(self, a: object, r: object, cx: Cmp) -> bool:
        """Inequalities in one variable against each other or against intervals: compare the real sets."""
        decided = self.same_real_sets(a, r, cx)
        if decided is not None:
            return decided
        if isinstance(a, Expr) and isinstance(r, Expr):
            return self.sympy_equal(a, r, cx)  # relations in several variables
        cx.reason = "an inequality vs an object that is not a set of reals"
        return False

    def same_real_sets(self, a: object, r: object, cx: Cmp) -> bool | None:
        """Do the two nodes describe the same set of reals? None when either describes none."""
        sa, sr = self.real_set(a, "answer"), self.real_set(r, "reference")
        if sa is None or sr is None:
            return None
        ok = sa == sr or (sa.is_subset(sr) is True and sr.is_subset(sa) is True)
        cx.reason = "the same set of real numbers" if ok else f"sets differ: {short(sa)} vs {short(sr)}"
        return bool(ok)

    def real_set(self, node: object, side: str):
        """The sympy set of reals a node describes (interval, union, one-variable inequality), or None."""
        import sympy

        if isinstance(node, (WithUnit, Assignment)):
            return self.real_set(node.value, side)
        if isinstance(node, Union):
            parts = [self.real_set(p, side) for p in node.parts]
            return None if any(p is None for p in parts) else sympy.Union(*parts)
        if isinstance(node, Seq) and node.kind in ("tuple", "interval") and len(node.items) == 2:
            lo, hi = (self.leaf_sympy(x, side) if isinstance(x, (Number, Expr)) else None for x in node.items)
            if lo is None or hi is None or not (lo.is_extended_real and hi.is_extended_real):
                return None
            if (lo < hi) is not sympy.true:
                return None
            return sympy.Interval(lo, hi, left_open=node.open == "(", right_open=node.close == ")")
        if isinstance(node, Expr) and RELATION_RE.search(node.latex):
            rel = self.leaf_sympy(node, side)
            free: set[Any] = getattr(rel, "free_symbols", set())
            if len(free) != 1:
                return None
            try:
                return rel.as_set()
            except (NotImplementedError, TypeError, ValueError, AttributeError):
                return None
        return None

    # -- sympy leaves ---------------------------------------------------------------------------

    def read_sympy(self, latex: str):
        """The sympy object latex2sympy reads from `latex` (decimals exact, `i` the imaginary unit),
        its size checked; ParseError when it cannot be read."""
        expr = self.imaginary_unit(self.latex_to_sympy(latex), latex)
        self.check_size(expr)
        expr = self.before_evaluation(expr)
        try:  # latex2sympy leaves some products and powers unevaluated; sizes were checked above
            expr = expr.doit()
        except Exception:
            pass
        return expr

    def latex_to_sympy(self, latex: str):
        """latex2sympy's reading of `latex` (decimals exact), one object; ParseError when it has none."""
        from latex2sympy2_extended.latex2sympy2 import ConversionConfig, latex2sympy

        try:
            expr = latex2sympy(exact_decimals(latex), is_real=True, convert_degrees=False, normalization_config=None,
                               conversion_config=ConversionConfig(interpret_as_mixed_fractions=False,
                                                                  lowercase_symbols=False))
        except Exception as e:  # latex2sympy raises bare Exceptions with multi-line messages
            raise ParseError(f"latex2sympy cannot read '{latex[:60]}': {str(e).splitlines()[0][:80]}") from None
        if isinstance(expr, (list, tuple)):
            raise ParseError(f"'{latex[:60]}' reads as several objects")
        return expr

    def imaginary_unit(self, expr, latex: str):
        """`i` is the imaginary unit in a final answer."""
        import sympy

        i_syms = [s for s in getattr(expr, "free_symbols", ()) if getattr(s, "name", None) == "i"]
        if i_syms:
            expr = expr.subs({s: sympy.I for s in i_syms})
        return expr

    def before_evaluation(self, expr):
        """The expression as read, its size checked, before `doit`: unchanged (a version may rewrite it)."""
        return expr

    def check_size(self, expr) -> None:
        """Refuse trees over MAX_TREE_NODES and numeric powers over MAX_EXACT_EXPONENT (towers included),
        judged from float estimates, never by evaluating the power."""
        import math as pymath

        import sympy

        caps = self.config.caps
        if isinstance(expr, sympy.MatrixBase):
            for e in expr:
                self.check_size(e)
            return
        if not isinstance(expr, sympy.Basic):
            return
        limit = pymath.log10(caps.max_exact_exponent)
        nodes = 0
        for node in sympy.preorder_traversal(expr):
            nodes += 1
            if nodes > caps.max_tree_nodes:
                raise ParseError(f"expression over MAX_TREE_NODES={caps.max_tree_nodes}")
            if isinstance(node, sympy.Pow) and node.base.is_number and node.exp.is_number:
                if node.base in (0, 1, -1):
                    continue
                lx = log10_abs(node.exp)
                if lx is not None and lx > limit:
                    size = "too many digits to estimate" if lx == float("inf") else f"about {lx:.3g} digits"
                    raise ParseError(f"an exponent with {size} is over MAX_EXACT_EXPONENT={caps.max_exact_exponent}")

    def to_sympy(self, latex: str, side: str):
        """`read_sympy`, a failure being a parse error of `side` (`side_error`)."""
        try:
            return self.read_sympy(latex)
        except ParseError as e:
            raise self.side_error(side, e) from None

    def side_error(self, side: str, e: ParseError) -> SideError:
        """The parse error `e` of reading one side's leaf, as that side's error."""
        return SideError(side, str(e))

    def leaf_sympy(self, node: object, side: str):
        import sympy

        if isinstance(node, Number):
            return sympy.Rational(node.value.numerator, node.value.denominator)
        if isinstance(node, Expr):
            return self.to_sympy(node.latex, side)
        raise SideError(side, f"cannot compare {type(node).__name__} symbolically")

    def sympy_equal(self, a: object, r: object, cx: Cmp) -> bool:
        """Two leaves (numbers, expressions) through sympy: matrices entry by entry, sets, relations, scalars."""
        import sympy

        ea = self.leaf_sympy(a, "answer")
        er = self.leaf_sympy(r, "reference")
        written = (a, r)
        if isinstance(ea, sympy.MatrixBase) or isinstance(er, sympy.MatrixBase):
            if not (isinstance(ea, sympy.MatrixBase) and isinstance(er, sympy.MatrixBase)):
                cx.reason = "a matrix vs a non-matrix"
                return False
            if ea.shape != er.shape:
                cx.reason = f"matrix shapes differ: {ea.shape} vs {er.shape}"
                return False
            for k, (x, y) in enumerate(zip(ea, er, strict=True)):
                if not self.scalar_equal(x, y, written, cx):
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
            return self.relations_equal(ea, er, cx)
        return self.scalar_equal(ea, er, written, cx)

    def relations_equal(self, ea, er, cx: Cmp) -> bool:
        import sympy

        Rel = sympy.core.relational.Relational
        if not (isinstance(ea, Rel) and isinstance(er, Rel)):
            cx.reason = "a relation vs a value"
            return False
        ca, cr = ea.canonical, er.canonical
        if type(ca) is not type(cr):
            cx.reason = f"relations differ: {ca.rel_op} vs {cr.rel_op}"
            return False
        ok = self.scalar_equal(ca.lhs - ca.rhs, cr.lhs - cr.rhs, None, cx)
        cx.reason = "same relation" if ok else f"relations differ: {cx.reason}"
        return ok

    def scalar_equal(self, ea, er, written: tuple | None, cx: Cmp) -> bool:
        """Equal sympy values. `written`: the (answer, reference) leaf nodes they were read from, whose
        notation may decide the numeric rule; None for derived values (a relation's two sides)."""
        import sympy

        if ea == er:
            cx.reason = "structurally equal"
            return True
        if not (isinstance(ea, sympy.Expr) and isinstance(er, sympy.Expr)):
            cx.reason = f"objects of different kinds: {type(ea).__name__} vs {type(er).__name__}"
            return False
        if (ea - er) == 0:  # sympy's automatic evaluation already cancels (rationals, like terms)
            cx.reason = "equal (difference is 0)"
            return True
        free: list[Any] = sorted(ea.free_symbols | er.free_symbols, key=lambda s: s.name)
        if not free:
            return self.constants_equal(ea, er, written, cx)
        return self.functions_equal(ea, er, free, written, cx)

    def constants_equal(self, ea, er, written: tuple | None, cx: Cmp) -> bool:
        """Constants: a version's notation rule, then values at 30 digits, then `simplify`; two values
        equal to 50 digits that sympy cannot prove equal are `correct`, saying so."""
        import sympy

        decided = self.judge_written(ea, er, written, cx)
        if decided is not None:
            return decided
        va, vr = numeric_value(ea), numeric_value(er)
        if va is not None and vr is not None:
            decided = self.judge_values(ea, er, va, vr, written, cx)
            if decided is not None:
                return decided
        diff = sympy.simplify(ea - er)
        if diff == 0:
            cx.reason = "symbolically equal (simplify)"
            return True
        if diff.is_Rational:
            cx.reason = f"exactly different (difference {self.difference_text(diff)})"
            return False
        return self.unproven_constants(ea, er, diff, va, vr, cx)

    def judge_written(self, ea, er, written: tuple | None, cx: Cmp) -> bool | None:
        """A verdict decided by how the leaves were written, before any evaluation; None: no such rule."""
        return None

    def judge_values(self, ea, er, va, vr, written: tuple | None, cx: Cmp) -> bool | None:
        """A verdict from the two values (30 digits): a clear difference decides; None: not decided."""
        if not values_close(ea, er, va, vr, 1e-12):
            return self.values_differ(va, vr, cx)
        return None

    def values_differ(self, va, vr, cx: Cmp) -> bool:
        cx.reason = f"values differ: {short(va)} vs {short(vr)}"
        return False

    @staticmethod
    def difference_text(diff) -> str:
        """An exact (rational) difference for a reason."""
        return short(diff)

    def unproven_constants(self, ea, er, diff, va, vr, cx: Cmp) -> bool:
        """Constants whose difference `simplify` leaves nonzero and not rational (`va`, `vr`: their values,
        or None): equal to 50 digits is `correct`, saying it is not proven."""
        if va is not None and vr is not None and values_close(ea, er, va, vr, 1e-50):
            cx.reason = "equal to 50 digits (not proven symbolically)"
            return True
        cx.reason = "not equal (simplify leaves a nonzero difference)"
        return False

    def functions_equal(self, ea, er, free: list, written: tuple | None, cx: Cmp) -> bool:
        """Expressions in variables: sample points first (any clear difference decides), then simplification."""
        import sympy

        agreed = 0
        for k in range(self.config.caps.sample_points):
            point = {s: sympy.Rational(SAMPLE_VALUES[(k + j) % len(SAMPLE_VALUES)]) for j, s in enumerate(free)}
            pa, pr = ea.subs(point), er.subs(point)
            if self.differ_exactly(pa, pr, free, point, cx):
                return False
            va, vr = numeric_value(pa), numeric_value(pr)
            if va is None or vr is None:
                continue
            if not values_close(pa, pr, va, vr, self.sample_tolerance(written)):
                cx.reason = f"values differ at {self.point_text(free, point)}"
                return False
            agreed += 1
        diff = sympy.simplify(ea - er)
        if diff == 0:
            cx.reason = "symbolically equal (simplify)"
            return True
        return self.unproven_functions(diff, agreed, cx)

    @staticmethod
    def point_text(free: list, point: dict) -> str:
        """A sample point for a reason: its first three variables."""
        return ", ".join(f"{s}={point[s]}" for s in free[:3])

    def differ_exactly(self, pa, pr, free: list, point: dict, cx: Cmp) -> bool:
        """True (with the reason set) when the values `pa`, `pr` at `point` differ exactly, before any
        evaluation: no such rule (sympy is not asked)."""
        return False

    def sample_tolerance(self, written: tuple | None) -> float:
        """Relative tolerance at a sample point: representation error only."""
        return 1e-12

    def unproven_functions(self, diff, agreed: int, cx: Cmp) -> bool:
        """Expressions whose difference `simplify` leaves nonzero, equal at `agreed` sample points: `correct`
        (saying so) when that is every sample point, an identity simplification cannot prove."""
        if agreed == self.config.caps.sample_points:
            cx.reason = f"equal at all {agreed} sample points (simplify could not prove it)"
            return True
        cx.reason = "not equal (simplify leaves a nonzero difference)"
        return False

    def equations_equal(self, a: Equation, r: Equation, cx: Cmp) -> bool:
        """`A = B` equals `C = D` when `A - B` is a nonzero constant multiple of `C - D`."""
        import sympy

        try:
            da = self.read_sympy(a.lhs) - self.read_sympy(a.rhs)
        except (ParseError, TypeError) as e:
            raise SideError("answer", str(e)) from None
        try:
            dr = self.read_sympy(r.lhs) - self.read_sympy(r.rhs)
        except (ParseError, TypeError) as e:
            raise SideError("reference", str(e)) from None
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
