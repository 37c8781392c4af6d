"""math.equiv@3: exact numbers, labelled and "and"-joined answers, one engine class.

Source: math.equiv@2 (`audit.graders.math.v2`, itself @1 revised; read both docstrings) and a review of
@2 against Math-Verify's published test tables (math-verify==0.9.0 sdist, `tests/`), the Qwen2.5-Math
CoT responses and PRM800K final answers in ../shared/data, and issue 10. Every rule below is pinned
in tests/golden/graders/math_equiv3_cases.jsonl by a real case named after its source.

`MathEquiv3` is a subclass of `MathEquiv2` (so @2's normalization, LaTeX reading and division-by-zero
rule stand), configured by the frozen `MathEquiv3Config`; it overrides the steps below. Decimals are
read as the exact rationals they write (`decimal_number` keeps no stated precision), so @2's
precision rule never applies.

What changes from @2
--------------------
1. Numbers are equal only when they are equal exactly (as rationals): `4.50` == `4.5`, `0.5` ==
   `\\frac12`, but `0.33`, `0.333` != `\\frac13`, `3.14` != `\\pi`, `1.41` != `\\sqrt2`, `2.7` != `e`,
   `4.54` != `4.5`. @2 judged decimals to their stated precision; that credited approximations of
   exact values (the very failure that retracted a lab's HLE figure). A finite decimal is a rational
   number, so against an irrational value it is never "equal to 50 digits, not proven": that path is
   closed whenever either side is rational or writes a decimal. A tolerance exists only as a named
   policy (`NumericTolerance`, with the official grader that names it) in a config; none by default,
   and the verdict's reason names the policy when it decides.
2. `number = expression` (`7 = 11a+c`) states the number's value: it is read as the value 7 labelled
   by the expression, not reduced to the expression (@2 credited `11a+c` and refused `7`). A chain's
   value is its last constant part (`x = 5+5+1 = 11`). `0 = expression` stays an equation (a zero
   side is an equation's standard form). `expression = number` with a non-label on the left stays
   an equation (`x + z = 1`, `x^2/4 + y^2/3 = 1`).
3. Labels: a left side that names a quantity is a label, not an equation: a variable (as before),
   `|AB|`, ratios of names `A:B`, `V_{1}:V_{2}`, `S_{MBCN}:S`, fractions of names `\\frac{NO}{BO}`,
   `\\angle ABC`, `\\overline{AB}`, long subscripts. Against a bare value the value is compared
   (`|AB| = 1` == `1`, `V_1:V_2 = 11:21` == `11:21`); two labels must name the same thing.
4. Answers joined by words: `1 and -2`, `21, 16 and 11`, `\\text{ and }`, `\\quad\\text{and}\\quad`
   and `or` between values or tuples (`(11,7) or (7,11)`) are lists. `or` between inequalities is
   still a union of sets (`x<2 \\text{ or } x>3`). `;` separating groups that contain commas
   (`p=5,q=2;p=7,q=2`) separates solutions.
5. Lists of assignments: to distinct variables (`x=2, y=3`) they are an ordered tuple against bare
   values (@2 matched them in any order, crediting `3, 2`); to one variable (`x=1, x=-2`, `a=4, -8,
   -10`) or to an indexed family (`x_1=…, x_2=…`) they are that variable's set of values, in any
   order. `(x, y) = (5, 8) and (8, 5)`: later bare tuples are values of the same variables.
   Repeated identical elements of an answer list count once when the reference has no repeats.
6. Inequalities whose middle is a named quantity (`0 < f(x) < 1`) are the interval they bound
   (`(0,1)`).
7. Notation: `\\begin{array}{…}…\\end{array}` (in any brackets) and `bmatrix` are the `pmatrix` with
   the same entries; thousands written `11,\\! 111` are one number (a plain `32, 349` stays a list);
   math delimiters inside an answer (`\\(1\\) and \\(-2\\)`) and a lone `$` are dropped; a repeating
   decimal `0.1\\overline{6}` is the exact rational it denotes;
   `\\quadx` is `\\quad x`; what follows the first `\\approx` of a chain is dropped (`x = \\frac13
   \\approx 0.33` states \\frac13).
8. Expressions with variables that simplification cannot prove equal are checked at irrational
   points too (after @2's rational sample points): an answer built to agree at the sample points is
   refused.

Known limits (pinned in the table): decimal commas (`1000,99`) are lists, not numbers; ratios are
text (`11:21` != `22:42`); answers in another variable name are different (`f(x)` != `f(y)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from audit.graders import Judgment, register
from audit.graders.math.engine import (
    GROUPING_RE,
    MAX_ANSWER_CHARS,
    MAX_ELEMENTS,
    MAX_EXACT_EXPONENT,
    MAX_NESTING,
    MAX_NUMBER_DIGITS,
    MAX_PARSE_CHARS,
    MAX_TREE_NODES,
    SAMPLE_POINTS,
    Assignment,
    Cmp,
    Equation,
    Expr,
    NeedsSympy,
    Number,
    ParseError,
    Seq,
    SideError,
    Union,
    numeric_value,
    values_close,
)
from audit.graders.math.latex import GREEK, RELATION_RE, is_variable, split_top
from audit.graders.math.v2 import MathEquiv2

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
    check_points: int = 3
    """Irrational points at which an unproven identity in variables must also hold."""
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


CONFIG = MathEquiv3Config()

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
_REPEATING_RE = re.compile(r"^([-+]?)(\d*)\.(\d*)\\overline\{(\d+)\}$")
"""`0.\\overline{3}`, `1.2\\overline{45}`: a repeating decimal, an exact rational."""
_QUAD_RE = re.compile(r"\\q?quad")
"""`\\quad`, `\\qquad`, also glued to the next word (`\\quadx_{2}`)."""
_ARRAY_RE = re.compile(
    r"(?:\\left\s*)?([(\[]?)\s*\\begin\{(?:array\}\{[^{}]*|[bB]?matrix|smallmatrix)\}(.*?)"
    r"\\end\{(?:array|[bB]?matrix|smallmatrix)\}\s*(?:\\right\s*)?([)\]]?)", re.DOTALL)
_TEXT_CONNECTOR_RE = re.compile(r"\\(?:text|mbox|textrm|mathrm|textnormal|textbf)\s*\{\s*(and|or)\s*\}")
_WORD_CONNECTOR_RE = re.compile(r"(?<![A-Za-z\\])(and|or)(?![A-Za-z])")
_OR_SEPS = (r"\lor", r"\vee", r"\text{or}")
_LABEL_PREFIX_RE = re.compile(r"^(?:m\s*)?\\(?:angle|measuredangle|overline|overarc|widehat|overrightarrow|vec)\s*")
_NAME_RE = re.compile(
    r"^(?:[A-Za-z]{1,4}|\\(?:" + GREEK + r")|\\text\{[A-Za-z ]{1,20}\}|\{[A-Za-z]{1,4}\})"
    r"(?:_\{?[A-Za-z0-9]{1,6}\}?)?'*(?:\([A-Za-z0-9, ]{0,12}\))?$")
"""A name inside a label: `AB`, `V_{1}`, `S_{MBCN}`, `\\theta`, `f(x)`."""
_INDEXED_RE = re.compile(r"^([A-Za-z]+|\\[A-Za-z]+)_\{?\d+\}?$")
"""`x_1`, `x_{2}`: members of an indexed family (roots of one unknown)."""
_DECIMAL_POINT_RE = re.compile(r"\d\.\d")
_CONSTANT_COMMANDS_RE = re.compile(r"\\(?:frac|sqrt|pi|cdot|times|div|infty|circ|left|right|ln|log|sin|cos|tan)"
                                   r"(?![A-Za-z])")
_CHECK_POINTS = ("pi/7", "E/3", "sqrt(2)-1/3", "-sqrt(3)/2", "pi/5+1/2")
"""Irrational points for rule 8 (cycled; each variable gets a different one)."""


class MathEquiv3(MathEquiv2):
    """@2 with exact numbers, labels, word-joined lists, assignments in order; see the module docstring."""

    def __init__(self, config: MathEquiv3Config = CONFIG) -> None:
        super().__init__(config)

    # -- normalization (rules 4, 7) -------------------------------------------------------------

    def normalize_once(self, s: str) -> str:
        """@2's pass between a step before it (thousands, `\\quad`, matrices, word connectors) and one after."""
        s = _DOUBLED_BACKSLASH_RE.sub(r"\\", s)
        s = _THOUSANDS_BANG_RE.sub(r"\1,", s)
        s = _BRACED_COMMA_RE.sub(r"\1,", s)
        s = _QUAD_RE.sub(" ", s)
        s = _UPRIGHT_LETTER_RE.sub(r"\1", s)
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
        return s

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

    # -- structure (rules 2, 3, 4, 5) ------------------------------------------------------------

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
        """A top-level list, with its assignments read (rule 5)."""
        first = items[0]
        rest = items[1:]
        if rest and not any(self._has_assignment(x) for x in rest):
            if isinstance(first, Assignment):  # `a = 4, -8, -10`: values of one variable
                items = (first,) + tuple(Assignment(first.variable, x, first.lhs, "") for x in rest)
            elif self._assignment_tuple(first):  # `(x, y) = (5, 8), (8, 5)`
                names = [x.variable for x in first.items]
                items = (first,) + tuple(
                    Seq("tuple", "(", ")", tuple(Assignment(n, v, n, "") for n, v in zip(names, x.items)))
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

    def parse_equation(self, s: str) -> object | None:
        """Labels, assignments, `number = expression`, chains and equations (rules 2, 3, 7); None if no `=`."""
        approx = split_top(s, (r"\approx",))
        if len(approx) > 1:
            if not approx[0]:
                raise ParseError(f"approximation with an empty side: '{s}'")
            if len(approx) == 2 and self.is_label(approx[0]):  # `x \approx 0.33`: the value it states
                return self.assign(approx[0], "", self.parse(approx[1], top=False))
            s = approx[0]  # `x = \frac13 \approx 0.33`: the exact value before the approximation
        parts = split_top(s, (r"\in",))
        if len(parts) == 2 and self.is_label(parts[0]):
            return self.assign(parts[0], "", self.parse(parts[1], top=False))
        parts = split_top(s, ("=",))
        if len(parts) == 1:
            return None if len(approx) == 1 else self.parse_element(s)
        if any(not p for p in parts):
            raise ParseError(f"equation with an empty side: '{s}'")
        if self.is_label(parts[0]):
            value = self._chain_value(parts[1:])
            return self.assign(parts[0], value, self.parse(value, top=False))
        if all(self.is_constant(p) for p in parts):  # `2+3 = 5`
            return self.parse(parts[-1], top=False)
        if self.is_constant(parts[0]) and not self._is_zero(parts[0]):  # `7 = 11a+c`: the value 7
            value = self._chain_value(parts)
            label = "=".join(p for p in parts if p != value)
            return Assignment(GROUPING_RE.sub("", label), self.parse(value, top=False), label, value)
        if len(parts) > 2:
            return self.parse(self._chain_value(parts), top=False)
        return Equation(parts[0], parts[1], s)

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
        """A left side that names a quantity (rule 3): a variable, `|AB|`, `A:B`, `\\frac{NO}{BO}`, `\\angle A`."""
        s = s.strip()
        if is_variable(s):
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
        """@2's fractions, and a repeating decimal `0.1\\overline{6}` as the exact rational it denotes."""
        m = _REPEATING_RE.match(s)
        if m:  # 0.1\overline{6} = (16 - 1) / 90
            sign, whole, fixed, rep = m.groups()
            v = int(whole or 0) + (Fraction(int(fixed or 0)) + Fraction(int(rep), 10 ** len(rep) - 1)) / 10 ** len(fixed)
            return Number(-v if sign == "-" else v)
        return super().fraction_number(s)

    # -- comparison (rules 1, 5) ----------------------------------------------------------------

    def same_seq(self, a: object, r: object, cx: Cmp) -> bool:
        """Rule 5: assignments to distinct variables against bare values are compared in the order
        written; to one variable or an indexed family, in any order. Everything else as in @2."""
        if isinstance(a, Seq) and isinstance(r, Seq):
            sa, sr = self.all_assignments(a), self.all_assignments(r)
            if sa != sr and a.kind in ("list", "tuple") and r.kind in ("list", "tuple"):
                named = a if sa else r
                if self._distinct_names(named):  # `x=2, y=3` vs `2, 3`: in the order written
                    return self.match_ordered(a.items, r.items, cx)
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
        tol = self.config.tolerance
        if a.value != r.value and tol is not None:
            bound = max(Fraction(tol.abs), Fraction(tol.rel) * max(abs(a.value), abs(r.value)))
            if abs(a.value - r.value) <= bound:
                cx.reason = f"within the tolerance of {tol.name} (rel {tol.rel}, abs {tol.abs})"
                return True
        return super().numbers_equal(a, r, cx)

    # -- sets of reals (rule 6) -----------------------------------------------------------------

    def real_set(self, node: object, side: str):
        if isinstance(node, Expr) and RELATION_RE.search(node.latex):
            named = self.named_interval(node.latex, side)
            if named is not None:
                return named
        return super().real_set(node, side)

    def named_interval(self, latex: str, side: str):
        """`0 < f(x) < 1`, `a \\ge 2`: bounds of a named quantity, read without solving (rule 6); else None."""
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

    # -- sympy leaves (rules 1, 8) --------------------------------------------------------------

    @staticmethod
    def writes_decimal(node: object) -> bool:
        return isinstance(node, Expr) and bool(_DECIMAL_POINT_RE.search(node.latex))

    def refuses_unproven(self, ea, er, written: tuple | None, cx: Cmp) -> bool:
        """Rule 1: a rational (or written decimal) side never equals an irrational one "to 50 digits";
        a relation's two sides (`written` None) are held to the same rule."""
        exact = written is None or self.writes_decimal(written[0]) or self.writes_decimal(written[1])
        if exact or ea.is_Rational or er.is_Rational:
            cx.reason = "not equal: a rational number never equals an irrational one (no approximation)"
            return True
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

    def accept_sampled(self, ea, er, free: list, agreed: int, cx: Cmp) -> bool:
        """Rule 8: an unproven identity must also hold at `check_points` irrational points."""
        if agreed == self.config.sample_points and self.holds_at_check_points(ea, er, free):
            cx.reason = (f"equal at all {agreed} sample points and {self.config.check_points} irrational points "
                         f"(simplify could not prove it)")
            return True
        return False

    def holds_at_check_points(self, ea, er, free) -> bool:
        """Rule 8: the two expressions also agree at irrational points (30 digits)."""
        import sympy

        for k in range(self.config.check_points):
            point = {s: sympy.sympify(_CHECK_POINTS[(k + j) % len(_CHECK_POINTS)]) for j, s in enumerate(free)}
            pa, pr = ea.subs(point), er.subs(point)
            va, vr = numeric_value(pa), numeric_value(pr)
            if va is None or vr is None:
                continue
            if not values_close(pa, pr, va, vr, 1e-12):
                return False
        return True


# --------------------------------------------------------------------------- registration


def math_equiv3_fast(answer: str, reference: str, *, num_choices: int | None = None,
                     config: MathEquiv3Config = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    return MathEquiv3(config).fast(answer, reference)


@register("math.equiv", "3", config=CONFIG, fast=math_equiv3_fast, isolated=True,
          description="Symbolic equivalence of final math answers: exact numbers (no approximation credited), "
                      "labelled values, lists joined by words, assignments in order, bounded time",
          source="audit: math.equiv@2 revised after issue 10 (Math-Verify's tables, Qwen and PRM800K data)")
def math_equiv3(answer: str, reference: str, *, num_choices: int | None = None,
                config: MathEquiv3Config = CONFIG) -> Judgment:
    return MathEquiv3(config).grade(answer, reference)
