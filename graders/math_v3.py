"""math.equiv@3: exact numbers, labelled and "and"-joined answers, one engine class.

Source: math.equiv@2 (`audit.graders.math_v2`, itself @1 revised; read both docstrings) and a review of
@2 against Math-Verify's published test tables (math-verify==0.9.0 sdist, `tests/`), the Qwen2.5-Math
CoT responses and PRM800K final answers in ../shared/data, and issue 10. Every rule below is pinned
in tests/golden/graders/math_equiv3_cases.jsonl by a real case named after its source.

The grader is one class, `MathEquiv3`, configured by the frozen `MathEquiv3Config`: every step is a
method called through the instance, so a later version is a subclass that overrides one step and a
new frozen config. @1's and @2's pure helpers (string scanning, node types, the LaTeX reader, the
numeric evaluation) are imported where their behaviour is identical; their code is part of this
version's fingerprint too.

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
from audit.graders.math import (  # @1's helpers, unchanged: string scanning, node types, numeric checks
    _MIXED_RE,
    _BASE_SUBSCRIPT_RE,
    _FRAC_RE,
    _GREEK,
    _NUMBER_RE,
    _POW_TEN_RE,
    _RELATION_RE,
    _SAMPLE_VALUES,
    _SLASH_RE,
    _THOUSANDS_PREFIX_RE,
    _TIMES_TEN_RE,
    _UNIT_TEXT_RE,
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
    _unit_key,
    _unwrap_command,
    _value,
    text_key,
)
from audit.graders.math_v2 import (  # @2's node types and steps that @3 keeps as they are
    _GROUPING_RE,
    Assignment,
    Expr,
    Number,
    _assign,
    _normalize_once,
    _to_sympy,
)

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
    r"^(?:[A-Za-z]{1,4}|\\(?:" + _GREEK + r")|\\text\{[A-Za-z ]{1,20}\}|\{[A-Za-z]{1,4}\})"
    r"(?:_\{?[A-Za-z0-9]{1,6}\}?)?'*(?:\([A-Za-z0-9, ]{0,12}\))?$")
"""A name inside a label: `AB`, `V_{1}`, `S_{MBCN}`, `\\theta`, `f(x)`."""
_INDEXED_RE = re.compile(r"^([A-Za-z]+|\\[A-Za-z]+)_\{?\d+\}?$")
"""`x_1`, `x_{2}`: members of an indexed family (roots of one unknown)."""
_DECIMAL_POINT_RE = re.compile(r"\d\.\d")
_CONSTANT_COMMANDS_RE = re.compile(r"\\(?:frac|sqrt|pi|cdot|times|div|infty|circ|left|right|ln|log|sin|cos|tan)"
                                   r"(?![A-Za-z])")
_CHECK_POINTS = ("pi/7", "E/3", "sqrt(2)-1/3", "-sqrt(3)/2", "pi/5+1/2")
"""Irrational points for rule 8 (cycled; each variable gets a different one)."""


@dataclass
class Cmp:
    """Comparison context: fast (no sympy) or full; the reason of the deciding rule."""

    fast: bool
    reason: str = ""


# --------------------------------------------------------------------------- the engine


class MathEquiv3:
    """`grade(answer, reference) -> Judgment` for final math answers; see the module docstring."""

    def __init__(self, config: MathEquiv3Config = CONFIG):
        self.config = config

    # -- entry points ---------------------------------------------------------------------------

    def grade(self, answer: str, reference: str) -> Judgment:
        """The full verdict (symbolic steps included); callers bound its time."""
        verdict, nodes = self.prepare(answer, reference)
        if verdict is not None:
            return verdict
        problem = _check_versions(self.config)
        if problem:
            return Judgment(None, "error", problem)
        return self.decide(*nodes, Cmp(fast=False))

    def fast(self, answer: str, reference: str) -> Judgment | None:
        """The verdict when strings and exact plain numbers decide it (no sympy), else None."""
        verdict, nodes = self.prepare(answer, reference)
        if verdict is not None:
            return verdict
        try:
            return self.decide(*nodes, Cmp(fast=True))
        except _NeedsSympy:
            return None

    def prepare(self, answer: str, reference: str):
        """(verdict, None) when decided by strings alone, else (None, (answer_node, reference_node))."""
        config = self.config
        if answer == reference:
            return Judgment(True, "correct", "identical strings"), None
        for side, s in (("answer", answer), ("reference", reference)):
            if len(s) > config.max_answer_chars:
                return Judgment(None, f"parse_error_{side}",
                               f"{side} is {len(s):,} chars, over MAX_ANSWER_CHARS={config.max_answer_chars}"), None
        na, nr = self.normalize(answer), self.normalize(reference)
        if not nr:
            return Judgment(None, "parse_error_reference", "reference is empty"), None
        if not na:
            return Judgment(None, "parse_error_answer", "answer is empty after normalization"), None
        if na == nr:
            return Judgment(True, "correct", "equal after normalization"), None
        try:
            node_r = self.parse(nr)
        except _ParseError as e:
            return Judgment(None, "parse_error_reference", str(e)), None
        try:
            node_a = self.parse(na)
        except _ParseError as e:
            return Judgment(None, "parse_error_answer", str(e)), None
        return None, (node_a, node_r)

    def decide(self, node_a, node_r, cx: Cmp) -> Judgment:
        try:
            ok = self.same(node_a, node_r, cx)
        except _SideError as e:
            return Judgment(None, f"parse_error_{e.side}", str(e))
        return Judgment(True, "correct", cx.reason) if ok else Judgment(False, "incorrect", cx.reason)

    # -- normalization --------------------------------------------------------------------------

    def normalize(self, s: str) -> str:
        """Canonical string form (string rewriting only, no parsing). Idempotent."""
        for _ in range(MAX_NORMALIZE_ROUNDS):
            t = self.normalize_once(s)
            if t == s:
                return t
            s = t
        return s

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
        s = _normalize_once(s)
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

    # -- structure ------------------------------------------------------------------------------

    def parse(self, s: str, top: bool = True) -> object:
        """The node for a normalized answer: list, set, tuple, interval, union, assignment, number, …"""
        config = self.config
        if not s:
            raise _ParseError("empty")
        if r"\boxed" in s or r"\fbox" in s:
            n = s.count(r"\boxed") + s.count(r"\fbox")
            raise _ParseError(f"{n} \\boxed{{}} groups in one answer; they are not joined into a set")
        if not _depth_ok(s, config.max_nesting):
            raise _ParseError(f"nested deeper than MAX_NESTING={config.max_nesting}")
        m = _THOUSANDS_PREFIX_RE.match(s) if top else None
        if m:
            return self.parse_element(m.group(0).replace(",", "") + s[m.end():])
        groups = _split_top(s, (";",))
        if len(groups) > 1 and any(len(_split_top(g, (",",))) > 1 for g in groups):
            self._check_count(len(groups))
            return Seq("list", "", "", tuple(self.as_group(self.parse(g, top=False)) for g in groups))
        parts = _split_top(s, (r"\cup",))
        if len(parts) > 1:
            self._check_count(len(parts))
            return Union(tuple(self.parse(p, top=False) for p in parts))
        parts = _split_top(s, _OR_SEPS)
        if len(parts) > 1:
            self._check_count(len(parts))
            nodes = tuple(self.parse(p, top=False) for p in parts)
            if any(_RELATION_RE.search(p) for p in parts):
                return Union(nodes)  # x<2 or x>3: a union of sets of reals
            flat = tuple(y for x in nodes for y in (x.items if isinstance(x, Seq) and x.kind == "list" else (x,)))
            return self.list_of(flat)  # `21, 16 or 11`: one list
        items = _split_top(s, (",", ";"))
        if len(items) > 1:
            self._check_count(len(items))
            expanded: list[object] = []
            for it in items:
                pm = _expand_pm(it)
                expanded.extend(self.parse_element(x) for x in (pm or [it]))
            return self.list_of(tuple(expanded))
        enc = _enclosing(s)
        if enc is not None:
            op, cl, inner = enc
            if op == r"\{" and not inner.strip():
                return Seq("set", op, cl, ())
            inner_items = _split_top(inner, (",", ";"))
            self._check_count(len(inner_items))
            if op == r"\{":
                expanded = []
                for it in inner_items:
                    pm = _expand_pm(it)
                    expanded.extend(self.parse_element(x) for x in (pm or [it]))
                return Seq("set", op, cl, tuple(expanded))
            if len(inner_items) == 1:  # grouping: (5) → 5
                return self.parse_element(inner)
            kind = "tuple" if (op, cl) in (("(", ")"), (r"\langle", r"\rangle")) else "interval"
            return Seq(kind, "(" if op == r"\langle" else op, ")" if cl == r"\rangle" else cl,
                       tuple(self.parse_element(x) for x in inner_items))
        pm = _expand_pm(s)
        if pm is not None:
            return Seq("list", "", "", tuple(self.parse_element(x) for x in pm))
        return self.parse_element(s)

    def _check_count(self, n: int) -> None:
        if n > self.config.max_elements:
            raise _ParseError(f"{n} elements, over MAX_ELEMENTS={self.config.max_elements}")

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

    def parse_element(self, s: str) -> object:
        config = self.config
        s = s.strip()
        if not s:
            raise _ParseError("empty element")
        if s.startswith("+") and not s.startswith("+-"):
            s = s[1:]
        eq = self.parse_equation(s)
        if eq is not None:
            return eq
        enc = _enclosing(s)
        if enc is not None:
            if not enc[2].strip() and enc[0] != r"\{":
                raise _ParseError(f"empty brackets '{s}'")
            return self.parse(s, top=False)
        if s in (r"\emptyset", r"\{\}"):
            return Seq("set", r"\{", r"\}", ())
        m = _UNIT_TEXT_RE.match(s)
        if m and m.group(1).strip() and not _is_text(m.group(1)):
            unit = m.group(2) + (m.group(3) or "")
            return WithUnit(self.parse_element(m.group(1)), unit)
        inner = _unwrap_command(s, r"\text")
        if inner is not None and not _is_text(inner) and inner.strip():
            return self.parse_element(self.normalize(inner))
        if _is_text(s):
            return Text(text_key(s), s)
        m = _BASE_SUBSCRIPT_RE.match(s)
        if m and m.group(1).isdigit():
            s = m.group(1)
        num = self.plain_number(s)
        if num is not None:
            return num
        if len(s) > config.max_parse_chars:
            raise _ParseError(f"element is {len(s):,} chars, over MAX_PARSE_CHARS={config.max_parse_chars}")
        return Expr(s)

    def parse_equation(self, s: str) -> object | None:
        """Labels, assignments, `number = expression`, chains and equations (rules 2, 3, 7); None if no `=`."""
        approx = _split_top(s, (r"\approx",))
        if len(approx) > 1:
            if not approx[0]:
                raise _ParseError(f"approximation with an empty side: '{s}'")
            if len(approx) == 2 and self.is_label(approx[0]):  # `x \approx 0.33`: the value it states
                return _assign(approx[0], "", self.parse(approx[1], top=False))
            s = approx[0]  # `x = \frac13 \approx 0.33`: the exact value before the approximation
        parts = _split_top(s, (r"\in",))
        if len(parts) == 2 and self.is_label(parts[0]):
            return _assign(parts[0], "", self.parse(parts[1], top=False))
        parts = _split_top(s, ("=",))
        if len(parts) == 1:
            return None if len(approx) == 1 else self.parse_element(s)
        if any(not p for p in parts):
            raise _ParseError(f"equation with an empty side: '{s}'")
        if self.is_label(parts[0]):
            value = self._chain_value(parts[1:])
            return _assign(parts[0], value, self.parse(value, top=False))
        if all(self.is_constant(p) for p in parts):  # `2+3 = 5`
            return self.parse(parts[-1], top=False)
        if self.is_constant(parts[0]) and not self._is_zero(parts[0]):  # `7 = 11a+c`: the value 7
            value = self._chain_value(parts)
            label = "=".join(p for p in parts if p != value)
            return Assignment(_GROUPING_RE.sub("", label), self.parse(value, top=False), label, value)
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
        if _is_variable(s):
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

    def plain_number(self, s: str) -> Number | None:
        """Integers, decimals, scientific notation, integer fractions and mixed numbers, exactly.
        A zero denominator is a parse error: division by zero is not a value."""
        config = self.config
        if len(s) > config.max_number_digits:
            return None
        if _NUMBER_RE.match(s):
            mant, _, exp = s.lower().partition("e")
            if exp and abs(int(exp)) > config.max_exact_exponent:
                return None
            return Number(Fraction(mant) * Fraction(10) ** int(exp or 0))
        m = _TIMES_TEN_RE.match(s)
        if m:
            if abs(int(m.group(2))) > config.max_exact_exponent:
                return None
            return Number(Fraction(m.group(1)) * Fraction(10) ** int(m.group(2)))
        m = _POW_TEN_RE.match(s)
        if m:
            if abs(int(m.group(2))) > config.max_exact_exponent:
                return None
            v = Fraction(10) ** int(m.group(2))
            return Number(-v if m.group(1) == "-" else v)
        m = _REPEATING_RE.match(s)
        if m:  # 0.1\overline{6} = (16 - 1) / 90
            sign, whole, fixed, rep = m.groups()
            v = int(whole or 0) + (Fraction(int(fixed or 0)) + Fraction(int(rep), 10 ** len(rep) - 1)) / 10 ** len(fixed)
            return Number(-v if sign == "-" else v)
        for rx, den in ((_FRAC_RE, 3), (_SLASH_RE, 2), (_MIXED_RE, 4)):
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

    # -- comparison -----------------------------------------------------------------------------

    def same(self, a: object, r: object, cx: Cmp) -> bool:
        """Is answer node `a` equal to reference node `r`? Sets cx.reason on a decision."""
        if isinstance(a, Assignment) or isinstance(r, Assignment):
            return self.same_assignment(a, r, cx)
        if self.has_inequality(a) or self.has_inequality(r):
            if cx.fast:
                raise _NeedsSympy()
            return self.same_as_sets(a, r, cx)
        if isinstance(a, WithUnit) and isinstance(r, WithUnit):
            if _unit_key(a.unit) != _unit_key(r.unit):
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
            ka = a.key if isinstance(a, Text) else text_key(self._raw(a))
            kr = r.key if isinstance(r, Text) else text_key(self._raw(r))
            cx.reason = "same text" if ka == kr else f"text differs: '{ka}' vs '{kr}'"
            return ka == kr
        if isinstance(a, Equation) or isinstance(r, Equation):
            if not (isinstance(a, Equation) and isinstance(r, Equation)):
                cx.reason = "an equation vs a value"
                return False
            if cx.fast:
                raise _NeedsSympy()
            return self.equations_equal(a, r, cx)
        if isinstance(a, Number) and isinstance(r, Number):
            return self.numbers_equal(a, r, cx)
        if isinstance(a, Expr) and isinstance(r, Expr) and a.latex == r.latex:
            cx.reason = "same expression"
            return True
        if cx.fast:
            raise _NeedsSympy()
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
        asg, other = (a, r) if isinstance(a, Assignment) else (r, a)
        if isinstance(other, Equation) and asg.rhs:
            if cx.fast:
                raise _NeedsSympy()
            eq = Equation(asg.lhs, asg.rhs, f"{asg.lhs}={asg.rhs}")
            try:
                ok = self.equations_equal(*((eq, other) if asg is a else (other, eq)), cx)
            except _SideError as e:  # not readable as an equation: an equation vs a value
                cx.reason = f"an equation vs a value (not comparable as equations: {e})"
                return False
            cx.reason = f"assignment compared as an equation: {cx.reason}"
            return ok
        return self.same(a.value, r, cx) if asg is a else self.same(a, r.value, cx)

    def same_seq(self, a: object, r: object, cx: Cmp) -> bool:
        if not (isinstance(a, Seq) and isinstance(r, Seq)):
            one = a if isinstance(a, Seq) else r
            cx.reason = f"a {one.kind} of {len(one.items)} vs a single value"
            return False
        sa, sr = self._all_assignments(a), self._all_assignments(r)
        if sa and sr:  # variable by variable, in any order
            return self.match_unordered(a.items, r.items, cx, "assignments")
        if sa != sr and a.kind in ("list", "tuple") and r.kind in ("list", "tuple"):
            named = a if sa else r
            if self._distinct_names(named):  # `x=2, y=3` vs `2, 3`: in the order written
                return self.match_ordered(a.items, r.items, cx)
            return self.match_unordered(a.items, r.items, cx, "values")
        unordered = {"list", "set"}
        if a.kind in unordered and r.kind in unordered:
            return self.match_unordered(a.items, r.items, cx, "elements")
        if "list" in (a.kind, r.kind) and {a.kind, r.kind} <= {"list", "tuple"}:
            pair = a if a.kind == "tuple" else r
            if self.may_be_interval(pair, cx):  # `1, 3` vs `(1, 3)`: two values vs perhaps an open interval
                cx.reason = "a bare list vs a pair that may be an open interval (brackets decide)"
                return False
            return self.match_ordered(a.items, r.items, cx)
        if a.kind != r.kind or a.open != r.open or a.close != r.close:
            cx.reason = f"brackets differ: {a.open or '·'}…{a.close or '·'} vs {r.open or '·'}…{r.close or '·'}"
            return False
        return self.match_ordered(a.items, r.items, cx)

    def may_be_interval(self, pair: Seq, cx: Cmp) -> bool:
        """`(a, b)` with real constants a < b reads as an open interval as well as a point."""
        if len(pair.items) != 2 or not all(isinstance(x, (Number, Expr)) for x in pair.items):
            return False
        if all(isinstance(x, Number) for x in pair.items):
            return pair.items[0].value < pair.items[1].value
        if cx.fast:
            raise _NeedsSympy()
        import sympy

        try:
            lo, hi = (self.leaf_sympy(x, "reference") for x in pair.items)
        except _SideError:
            return False
        if not all(getattr(x, "is_extended_real", False) and not getattr(x, "free_symbols", True) for x in (lo, hi)):
            return False
        return (lo < hi) is sympy.true

    @staticmethod
    def _all_assignments(s: Seq) -> bool:
        return s.kind in ("list", "tuple") and bool(s.items) and all(isinstance(x, Assignment) for x in s.items)

    @staticmethod
    def _distinct_names(s: Seq) -> bool:
        """Assignments to distinct variables that are not one indexed family (`x_1`, `x_2`)."""
        names = [x.variable for x in s.items]
        if len(set(names)) != len(names):
            return False
        bases = {m.group(1) for m in (_INDEXED_RE.match(n) for n in names) if m}
        return not (len(bases) == 1 and all(_INDEXED_RE.match(n) for n in names))

    def match_ordered(self, a: tuple, r: tuple, cx: Cmp) -> bool:
        if len(a) != len(r):
            cx.reason = f"{len(a)} elements vs {len(r)}"
            return False
        for i, (x, y) in enumerate(zip(a, r)):
            if not self.same(x, y, cx):
                cx.reason = f"element {i + 1}: {cx.reason}"
                return False
        cx.reason = f"all {len(a)} elements equal in order"
        return True

    def match_unordered(self, a: tuple, r: tuple, cx: Cmp, what: str) -> bool:
        if len(set(r)) == len(r) and len(set(a)) < len(a):  # the answer repeats an element; the reference does not
            a = tuple(dict.fromkeys(a))
        if len(a) != len(r):
            cx.reason = f"{len(a)} {what} vs {len(r)}"
            return False
        memo: dict[tuple[int, int], bool] = {}

        def eq(i: int, j: int) -> bool:
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
        if a.value == r.value:
            cx.reason = "equal numbers"
            return True
        tol = self.config.tolerance
        if tol is not None:
            bound = max(Fraction(tol.abs), Fraction(tol.rel) * max(abs(a.value), abs(r.value)))
            if abs(a.value - r.value) <= bound:
                cx.reason = f"within the tolerance of {tol.name} (rel {tol.rel}, abs {tol.abs})"
                return True
        cx.reason = f"numbers differ: {_fmt(a.value)} vs {_fmt(r.value)}"
        return False

    @staticmethod
    def _raw(node: object) -> str:
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
            return bool(_RELATION_RE.search(node.latex))
        if isinstance(node, Union):
            return any(self.has_inequality(p) for p in node.parts)
        if isinstance(node, (WithUnit, Assignment)):
            return self.has_inequality(node.value)
        return False

    def same_as_sets(self, a: object, r: object, cx: Cmp) -> bool:
        """Inequalities in one variable against each other or against intervals: compare the real sets."""
        sa, sr = self.real_set(a, "answer"), self.real_set(r, "reference")
        if sa is not None and sr is not None:
            ok = sa == sr or (sa.is_subset(sr) is True and sr.is_subset(sa) is True)
            cx.reason = "the same set of real numbers" if ok else f"sets differ: {_short(sa)} vs {_short(sr)}"
            return bool(ok)
        if isinstance(a, Expr) and isinstance(r, Expr):
            return self.sympy_equal(a, r, cx)  # relations in several variables
        cx.reason = "an inequality vs an object that is not a set of reals"
        return False

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
        if isinstance(node, Expr) and _RELATION_RE.search(node.latex):
            named = self.named_interval(node.latex, side)
            if named is not None:
                return named
            rel = self.leaf_sympy(node, side)
            free = getattr(rel, "free_symbols", set())
            if len(free) != 1:
                return None
            try:
                return rel.as_set()
            except (NotImplementedError, TypeError, ValueError, AttributeError):
                return None
        return None

    def named_interval(self, latex: str, side: str):
        """`0 < f(x) < 1`, `a \\ge 2`: bounds of a named quantity, read without solving (rule 6); else None."""
        import sympy

        pieces = re.split(r"(<|>|\\(?:le|ge|lt|gt)(?![a-zA-Z]))", latex)
        if len(pieces) not in (3, 5) or r"\ne" in latex:
            return None
        terms, ops = pieces[0::2], pieces[1::2]
        named = [i for i, t in enumerate(terms) if _is_variable(t.strip()) and not self.is_constant(t)]
        if len(named) != 1 or any(not self.is_constant(t) for i, t in enumerate(terms) if i != named[0]):
            return None
        less = [op in ("<", r"\le", r"\lt") for op in ops]
        strict = [op in ("<", ">", r"\lt", r"\gt") for op in ops]
        if len(set(less)) != 1:
            return None
        try:
            bounds = [None if i == named[0] else self.to_sympy(t.strip(), side) for i, t in enumerate(terms)]
        except _SideError:
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

    # -- sympy leaves ---------------------------------------------------------------------------

    def to_sympy(self, latex: str, side: str):
        try:
            return _to_sympy(latex, self.config)
        except _ParseError as e:
            raise _SideError(side, str(e)) from None

    def leaf_sympy(self, node: object, side: str):
        import sympy

        if isinstance(node, Number):
            return sympy.Rational(node.value.numerator, node.value.denominator)
        if isinstance(node, Expr):
            return self.to_sympy(node.latex, side)
        raise _SideError(side, f"cannot compare {type(node).__name__} symbolically")

    @staticmethod
    def _writes_decimal(node: object) -> bool:
        return isinstance(node, Expr) and bool(_DECIMAL_POINT_RE.search(node.latex))

    def sympy_equal(self, a: object, r: object, cx: Cmp) -> bool:
        import sympy

        ea = self.leaf_sympy(a, "answer")
        er = self.leaf_sympy(r, "reference")
        exact = self._writes_decimal(a) or self._writes_decimal(r)
        if isinstance(ea, sympy.MatrixBase) or isinstance(er, sympy.MatrixBase):
            if not (isinstance(ea, sympy.MatrixBase) and isinstance(er, sympy.MatrixBase)):
                cx.reason = "a matrix vs a non-matrix"
                return False
            if ea.shape != er.shape:
                cx.reason = f"matrix shapes differ: {ea.shape} vs {er.shape}"
                return False
            for k, (x, y) in enumerate(zip(ea, er)):
                if not self.scalar_equal(x, y, exact, cx):
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
        return self.scalar_equal(ea, er, exact, cx)

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
        ok = self.scalar_equal(ca.lhs - ca.rhs, cr.lhs - cr.rhs, True, cx)
        cx.reason = "same relation" if ok else f"relations differ: {cx.reason}"
        return ok

    def scalar_equal(self, ea, er, exact: bool, cx: Cmp) -> bool:
        """Equal values. `exact`: a side writes a decimal, so "equal to 50 digits" proves nothing (rule 1)."""
        import sympy

        config = self.config
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
            va, vr = _value(ea), _value(er)
            if va is not None and vr is not None and not _close(ea, er, va, vr, 1e-12):
                return self._differ(ea, er, va, vr, cx)
            diff = sympy.simplify(ea - er)
            if diff == 0:
                cx.reason = "symbolically equal (simplify)"
                return True
            if diff.is_Rational:
                cx.reason = f"exactly different (difference {_short(diff)})"
                return False
            if exact or ea.is_Rational or er.is_Rational:
                cx.reason = "not equal: a rational number never equals an irrational one (no approximation)"
                return False
            if va is not None and vr is not None and _close(ea, er, va, vr, 1e-50):
                cx.reason = "equal to 50 digits (not proven symbolically)"
                return True
            cx.reason = "not equal (simplify leaves a nonzero difference)"
            return False
        agreed = 0
        for k in range(config.sample_points):  # rational sample points first (decimals are exact here)
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
        if agreed == config.sample_points and self.holds_at_check_points(ea, er, free):
            cx.reason = (f"equal at all {agreed} sample points and {config.check_points} irrational points "
                         f"(simplify could not prove it)")
            return True
        cx.reason = "not equal (simplify leaves a nonzero difference)"
        return False

    def _differ(self, ea, er, va, vr, cx: Cmp) -> bool:
        tol = self.config.tolerance
        if tol is not None:
            import sympy

            bound = max(sympy.Rational(tol.abs), sympy.Rational(tol.rel) * max(abs(va), abs(vr)))
            if abs(va - vr) <= bound:
                cx.reason = f"within the tolerance of {tol.name} (rel {tol.rel}, abs {tol.abs})"
                return True
        cx.reason = f"values differ: {_short(va)} vs {_short(vr)}"
        return False

    def holds_at_check_points(self, ea, er, free) -> bool:
        """Rule 8: the two expressions also agree at irrational points (30 digits)."""
        import sympy

        for k in range(self.config.check_points):
            point = {s: sympy.sympify(_CHECK_POINTS[(k + j) % len(_CHECK_POINTS)]) for j, s in enumerate(free)}
            pa, pr = ea.subs(point), er.subs(point)
            va, vr = _value(pa), _value(pr)
            if va is None or vr is None:
                continue
            if not _close(pa, pr, va, vr, 1e-12):
                return False
        return True

    def equations_equal(self, a: Equation, r: Equation, cx: Cmp) -> bool:
        import sympy

        try:
            da = _to_sympy(a.lhs, self.config) - _to_sympy(a.rhs, self.config)
        except (_ParseError, TypeError) as e:
            raise _SideError("answer", str(e)) from None
        try:
            dr = _to_sympy(r.lhs, self.config) - _to_sympy(r.rhs, self.config)
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
