"""math.equiv@1: symbolic equivalence of final math answers (MATH-style), bounded and explained.

Sources: the answer conventions of MATH (hendrycks/math, MIT) and MATH-500 (openai/prm800k);
the list of normalizations that other graders apply (hendrycks `_strip_string`, Qwen2.5-Math
`strip_string`, Math-Verify / latex2sympy2_extended `normalize_latex`), re-decided here one by
one. Parsing of LaTeX into sympy uses latex2sympy2_extended==1.11.0 on sympy==1.14.0 (pinned).

Pipeline
--------
1. `normalize(s)` (string only, idempotent): unicode minus and symbols to LaTeX; unwrap outer
   `$…$`, `\\(…\\)`, `\\[…\\]`, `\\boxed{…}`, `\\fbox{…}`, `**…**` and TeX grouping `{…}`;
   `\\dfrac`/`\\tfrac`/`\\cfrac` → `\\frac`; drop `\\left`/`\\right`/`\\big…`, `\\displaystyle`, `\\!`
   and spacing commands, `^\\circ`/`°`, `\\%`/`%`, `\\$`; `\\mathrm`/`\\textbf`/`\\mbox`… → `\\text`; `\\frac12` → `\\frac{1}{2}`, `\\sqrt2` → `\\sqrt{2}`,
   `\\sqrt(x)` → `\\sqrt{x}`, `x^(2)` → `x^{2}`, bare `sqrt`/`pi`/`sin`… → commands, `{,}` → `,`;
   spaces removed except between two letters and after a comma; trailing sentence period dropped.
2. Structure (string only): a top-level comma list, a bracketed tuple/interval/set, a `\\cup` union,
   `a \\pm b`, an equation, a text answer, or an expression; units and assignments split off.
3. Leaves: plain numbers are compared exactly with Python fractions (the fast path, no sympy);
   everything else is parsed by latex2sympy and compared by sympy in a worker process under the
   per-item budget (see `audit.graders.budget`).

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
  when one side is written as a decimal (`0.3333333` vs `\\frac13`); `\\frac{1}{2^{99}}` vs
  `\\frac{1}{2^{98}}` is decided exactly, never by rounding. Scientific notation `1e3`, `1.5E-2`,
  `2\\times10^{3}`, `10^{3}` are numbers. Thousands separators: `10,080`, `10{,}080`, `10,\\!080`,
  `1\\,000` are one number only when the whole answer has that shape (`1, 234` is a list).
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
- Caps (named constants, copied into MathEquivConfig so they are part of the fingerprint): raw
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
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from audit.graders import Judgment, installed_version, register

# --------------------------------------------------------------------------- caps and config

MAX_ANSWER_CHARS = 2_000
"""Longer answers or references (raw) are not graded unless they are identical strings."""
MAX_PARSE_CHARS = 600
"""Longest single element handed to latex2sympy."""
MAX_NESTING = 24
"""Deepest brace/bracket nesting accepted."""
MAX_ELEMENTS = 32
"""Most elements in a list, set or tuple."""
MAX_EXACT_EXPONENT = 100_000
"""Largest integer exponent evaluated exactly; bigger towers (`10^{10^{10}}`) are over the cap."""
MAX_NUMBER_DIGITS = 1_000
"""Longest digit string read as an exact number."""
MAX_TREE_NODES = 2_000
"""Largest sympy expression tree compared."""
SAMPLE_POINTS = 4
"""Points at which expressions with variables are evaluated before simplification."""
MAX_NORMALIZE_ROUNDS = 6
"""normalize() repeats its pass until nothing changes, at most this many times."""


@dataclass(frozen=True)
class MathEquivConfig:
    """Everything that changes a verdict besides code; part of the fingerprint."""

    rel_tol: float = 1e-6
    """Relative tolerance, used only when one side is written as a decimal."""
    budget_s: float = 5.0
    """Hard wall-clock budget per item for the symbolic step (timeout, never incorrect)."""
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


CONFIG = MathEquivConfig()


class _ParseError(Exception):
    """An element cannot be read; the message says why."""


class _NeedsSympy(Exception):
    """Raised by the fast path when a leaf needs the symbolic step."""


# --------------------------------------------------------------------------- normalization

_UNICODE = (
    ("\u2212", "-"), ("\u2013", "-"), ("\u2014", "-"), ("\u2010", "-"), ("\u2011", "-"), ("\ufe63", "-"),
    ("\uff0d", "-"), ("\u00d7", r"\times "), ("\u00b7", r"\cdot "), ("\u22c5", r"\cdot "), ("\u00f7", r"\div "),
    ("\u221a", r"\sqrt"), ("\u03c0", r"\pi "), ("\u221e", r"\infty "), ("\u00b0", r"^\circ"), ("\u2264", r"\le "),
    ("\u2265", r"\ge "), ("\u2260", r"\ne "), ("\u00b1", r"\pm "), ("\u2213", r"\mp "), ("\u222a", r"\cup "),
    ("\u2229", r"\cap "), ("\u2205", r"\emptyset "), ("\u00a0", " "), ("\u2009", " "), ("\u202f", " "),
    ("\u2007", " "), ("\u200b", ""), ("\u2032", "'"),
)
_SIMPLE_REPLACE = (
    (r"\dfrac", r"\frac"), (r"\tfrac", r"\frac"), (r"\cfrac", r"\frac"), (r"\dbinom", r"\binom"),
    (r"\tbinom", r"\binom"), (r"\displaystyle", ""), (r"\left.", ""), (r"\right.", ""), (r"\!", ""),
    (r"\$", ""), (r"\%", ""), ("%", ""), (r"{,}", ","), (r"\varnothing", r"\emptyset"), (r"\lbrace", r"\{"),
    (r"\rbrace", r"\}"), (r"\lvert", "|"), (r"\rvert", "|"), (r"\vert", "|"), (r"\neq", r"\ne"),
    (r"\leq", r"\le"), (r"\geq", r"\ge"), (r"\to", r"\rightarrow"),
    ("<=", r"\le "), (">=", r"\ge "), ("!=", r"\ne "),  # after `\!`, so `x\!=\!5` stays an equation
)
_SIZING_RE = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|Biggl|Biggr|big|Big|bigg|Bigg)(?![a-zA-Z])")
_SPACING_RE = re.compile(r"\\\\|\\(?:,|;|:|\s|quad(?![a-zA-Z])|qquad(?![a-zA-Z]))|~")
_DEGREE_RE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![a-zA-Z])|\\degree(?![a-zA-Z])|\{\}\^\\circ")
_TEXTLIKE_RE = re.compile(r"\\(?:mathrm|textrm|textbf|textit|textnormal|mathbf|mathit|mbox|textup|mathsf|text)\s*\{")
_BARE_FUNC_RE = re.compile(
    r"(?<![\\a-zA-Z])(arcsin|arccos|arctan|sinh|cosh|tanh|sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|pi|infty)"
    r"(?![a-zA-Z])")
_INFINITY_RE = re.compile(r"(?<![\\a-zA-Z])(?:infinity|inf)(?![a-zA-Z])")
_SPACE_RE = re.compile(r"\s+")
_UNIT_WORDS_RE = re.compile(r"(\d)\s+([A-Za-z]{2,}(?: [A-Za-z]+)*\.?)(\^\{?[23]\}?)?\s*$")
_WRAPPERS = (("$$", "$$"), ("$", "$"), (r"\(", r"\)"), (r"\[", r"\]"), ("**", "**"))


def _match_brace(s: str, i: int) -> int:
    """Index of the `}` closing the `{` at s[i], or -1."""
    depth = 0
    j = i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return -1


def _unwrap_command(s: str, command: str) -> str | None:
    """The argument when s is exactly `\\command{arg}`, else None."""
    if not s.startswith(command):
        return None
    i = len(command)
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None
    end = _match_brace(s, i)
    if end != len(s) - 1:
        return None
    return s[i + 1: end]


def _unwrap_outer(s: str) -> str:
    """Remove outer wrappers (`$…$`, `\\boxed{…}`, `{…}`, …) until none is left."""
    while True:
        t = _unwrap_outer_once(s)
        if t == s:
            return s
        s = t


def _unwrap_outer_once(s: str) -> str:
    for left, right in _WRAPPERS:
        if len(s) > len(left) + len(right) and s.startswith(left) and s.endswith(right):
            inner = s[len(left): -len(right)]
            if left == "$" and "$" in inner:
                continue
            return inner.strip()
    for cmd in (r"\boxed", r"\fbox"):
        inner = _unwrap_command(s, cmd)
        if inner is not None:
            return inner.strip()
    if s.startswith("{") and _match_brace(s, 0) == len(s) - 1:  # TeX grouping braces, not a set
        return s[1:-1].strip()
    return s


def _brace_single_args(s: str) -> str:
    r"""`\frac12` → `\frac{1}{2}`, `\sqrt2` → `\sqrt{2}`, `\sqrt(x)` → `\sqrt{x}`, `x^(2)` → `x^{2}`."""
    out: list[str] = []
    i = 0
    n = len(s)
    while i < n:
        m = re.match(r"\\(frac|binom|sqrt)(?![a-zA-Z])", s[i:])
        if m:
            out.append(m.group(0))
            i += m.end()
            nargs = 1 if m.group(1) == "sqrt" else 2
            if m.group(1) == "sqrt" and i < n and s[i] == "[":
                close = s.find("]", i)
                if close < 0:
                    continue
                out.append(s[i: close + 1])
                i = close + 1
            for _ in range(nargs):
                while i < n and s[i] == " ":
                    i += 1
                if i >= n:
                    break
                if s[i] == "{":
                    end = _match_brace(s, i)
                    if end < 0:
                        break
                    out.append(_brace_single_args(s[i: end + 1]))
                    i = end + 1
                elif s[i] == "(" and m.group(1) == "sqrt":
                    end = _match_paren(s, i)
                    if end < 0:
                        break
                    out.append("{" + s[i + 1: end] + "}")
                    i = end + 1
                elif s[i] == "\\":
                    cm = re.match(r"\\[a-zA-Z]+", s[i:])
                    if not cm:
                        break
                    out.append("{" + cm.group(0) + "}")
                    i += cm.end()
                elif s[i].isalnum():
                    out.append("{" + s[i] + "}")
                    i += 1
                else:
                    break
            continue
        if s[i] == "^" and i + 1 < n and s[i + 1] == "(":
            end = _match_paren(s, i + 1)
            if end > 0:
                out.append("^{" + s[i + 2: end] + "}")
                i = end + 1
                continue
        if s[i] == "\\" and i + 1 < n:
            out.append(s[i: i + 2])
            i += 2
            continue
        out.append(s[i])
        i += 1
    return "".join(out)


def _match_paren(s: str, i: int) -> int:
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _squeeze_spaces(s: str) -> str:
    """Remove spaces except between two letters (`\\pi r`, `x y`) and one after a comma."""
    s = _SPACE_RE.sub(" ", s).strip()
    out = []
    for i, c in enumerate(s):
        if c != " ":
            out.append(c)
            continue
        prev = s[i - 1] if i else ""
        nxt = s[i + 1] if i + 1 < len(s) else ""
        if prev == ",":
            out.append(" ")
        elif prev.isalpha() and nxt.isalpha():
            out.append(" ")
    return "".join(out)


def _normalize_once(s: str) -> str:
    for a, b in _UNICODE:
        s = s.replace(a, b)
    s = s.strip()
    s = _unwrap_outer(s)
    for a, b in _SIMPLE_REPLACE:
        s = s.replace(a, b)
    s = _SIZING_RE.sub("", s)
    s = _SPACING_RE.sub(lambda m: m.group(0) if m.group(0) == "\\\\" else " ", s)
    s = _DEGREE_RE.sub("", s)
    s = _TEXTLIKE_RE.sub(r"\\text{", s)
    s = _INFINITY_RE.sub(r"\\infty", s)
    s = _BARE_FUNC_RE.sub(r"\\\1", s)
    s = _brace_single_args(s)
    s = _UNIT_WORDS_RE.sub(r"\1\\text{\2}\3", s)  # `5 cm^2` → `5\text{cm}^2`
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

@dataclass(frozen=True)
class Text:
    key: str
    raw: str


@dataclass(frozen=True)
class Expr:
    latex: str
    decimal: bool
    """Written with a decimal point (the tolerance applies)."""


@dataclass(frozen=True)
class Number:
    value: Fraction
    decimal: bool


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


_UNION_SEPS = (r"\cup", r"\lor", r"\vee", r"\text{or}")
"""Separators of a union: of intervals (`\\cup`) or of inequalities (`x<2 \\text{or} x>3`)."""
_RELATION_RE = re.compile(r"<|>|\\(?:le|ge|lt|gt|ne|leqslant|geqslant)(?![a-zA-Z])")
_OPENERS = {"(": ")", "[": "]", r"\{": r"\}", r"\langle": r"\rangle"}
_GREEK = ("alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|pi|rho|"
          "sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma|Phi|Psi|Omega")
_VARIABLE_RE = re.compile(
    r"^(?:[A-Za-z]{1,3}|\\(?:" + _GREEK + r")|\\text\{[A-Za-z ]{1,20}\}|\\overline\{[A-Z]{1,3}\})"
    r"(?:_\{?[A-Za-z0-9]{1,3}\}?)?'*(?:\([A-Za-z0-9, ]{0,12}\))?$")
_THOUSANDS_PREFIX_RE = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?=$|\\text\{)")
_MIXED_RE = re.compile(r"^([-+]?)(\d+)\\frac\{(\d+)\}\{(\d+)\}$")
_BASE_SUBSCRIPT_RE = re.compile(r"^([0-9A-Za-z]+)_\{?(\d{1,2})\}?$")
_UNIT_TEXT_RE = re.compile(r"^(.*?[^\s{])\s*\\text\{([^{}]*)\}(\^\{?[23]\}?)?$")
_COMMAND_RE = re.compile(r"\\[a-zA-Z]+")
_ENV_RE = re.compile(r"\\(?:begin|end)\{[a-zA-Z*]+\}")
_WORD_RE = re.compile(r"[A-Za-z]{2,}")
_NUMBER_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
_TIMES_TEN_RE = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+))(?:\\times|\\cdot|\*)10\^\{?([-+]?\d+)\}?$")
_POW_TEN_RE = re.compile(r"^([-+]?)10\^\{?([-+]?\d+)\}?$")
_FRAC_RE = re.compile(r"^([-+]?)\\frac\{([-+]?\d+)\}\{([-+]?\d+)\}$")
_SLASH_RE = re.compile(r"^([-+]?\d+)/(\d+)$")


def _depth_ok(s: str, limit: int) -> bool:
    depth = 0
    for c in s:
        if c in "{([":
            depth += 1
            if depth > limit:
                return False
        elif c in "})]":
            depth -= 1
    return True


def _split_top(s: str, seps: tuple[str, ...]) -> list[str]:
    """Split at separators outside any braces, brackets or parentheses."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            if s.startswith(r"\{", i) or s.startswith(r"\langle", i):
                depth += 1
            elif s.startswith(r"\}", i) or s.startswith(r"\rangle", i):
                depth -= 1
            elif depth == 0:
                for sep in seps:
                    if sep.startswith("\\") and s.startswith(sep, i) and not (
                            sep[-1].isalpha() and s[i + len(sep): i + len(sep) + 1].isalpha()):
                        parts.append(s[start:i])
                        start = i + len(sep)
                        i = start
                        break
                else:
                    i += 2
                    continue
                continue
            i += 2
            continue
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        elif depth == 0 and c in seps:
            parts.append(s[start:i])
            start = i + 1
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _enclosing(s: str) -> tuple[str, str, str] | None:
    """(open, close, inner) when s is one bracketed group from its first to its last character."""
    for op, cl_default in _OPENERS.items():
        if not s.startswith(op):
            continue
        for cl in ((")", "]") if op in "([" else (cl_default,)):
            if not s.endswith(cl) or len(s) < len(op) + len(cl):
                continue
            inner = s[len(op): len(s) - len(cl)]
            # the opening bracket must close only at the very end
            if _balanced(inner):
                return op, cl, inner
    return None


def _balanced(s: str) -> bool:
    depth = 0
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if s.startswith(r"\{", i) or s.startswith(r"\langle", i):
                depth += 1
            elif s.startswith(r"\}", i) or s.startswith(r"\rangle", i):
                depth -= 1
            i += 2
            continue
        if c in "{([":
            depth += 1
        elif c in "})]":
            depth -= 1
        if depth < 0:
            return False
        i += 1
    return depth == 0


def text_key(s: str) -> str:
    """Comparison key of a text answer: no `\\text{}`, lower case, no spaces, no outer parens or period."""
    s = _TEXTLIKE_RE.sub("{", s)
    s = s.replace("\\", "").replace("{", "").replace("}", "")
    s = "".join(s.split()).lower().rstrip(".")
    while len(s) >= 2 and s[0] == "(" and s[-1] == ")" and _balanced(s[1:-1]):
        s = s[1:-1]
    return s


def _is_text(s: str) -> bool:
    bare = _ENV_RE.sub("", s)
    if ":" in bare:
        return True
    if _TEXTLIKE_RE.search(bare):
        return True
    bare = _COMMAND_RE.sub(" ", bare)
    return bool(_WORD_RE.search(bare))


def _unit_key(u: str) -> str:
    k = text_key(u)
    return k[:-1] if k.endswith("s") and len(k) > 2 else k


def _is_variable(s: str) -> bool:
    """`x`, `a_1`, `f(x)`, `AB`, `\\theta`, or a tuple of those: `(x, y)`."""
    if _VARIABLE_RE.match(s):
        return True
    if len(s) > 2 and s[0] == "(" and s[-1] == ")":
        parts = _split_top(s[1:-1], (",",))
        return len(parts) > 1 and all(_VARIABLE_RE.match(p) for p in parts)
    return False


def _strip_assignment(s: str, config: MathEquivConfig) -> object:
    """`x = 4` → `4`; `a = b = c` → `c`; `2+3 = 5` → `5`; other equations → Equation."""
    for op in (r"\in", r"\approx"):
        parts = _split_top(s, (op,))
        if len(parts) == 2 and _is_variable(parts[0]):
            return _parse_structure(parts[1], config, top=False)
    parts = _split_top(s, ("=",))
    if len(parts) == 1:
        return None
    if any(not p for p in parts):
        raise _ParseError(f"equation with an empty side: '{s}'")
    if len(parts) > 2 or _is_variable(parts[0]) or not re.search(r"[A-Za-z]", _COMMAND_RE.sub("", parts[0])):
        return _parse_structure(parts[-1], config, top=False)
    return Equation(parts[0], parts[1], s)


def _parse_element(s: str, config: MathEquivConfig) -> object:
    s = s.strip()
    if not s:
        raise _ParseError("empty element")
    if s.startswith("+") and not s.startswith("+-"):
        s = s[1:]
    eq = _strip_assignment(s, config)
    if eq is not None:
        return eq
    # a single-group wrapper: (5) → 5, \text{(B)} stays text
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
    return Expr(s, decimal=bool(re.search(r"\d\.\d|\d[eE][-+]?\d", s)))


def _plain_number(s: str, config: MathEquivConfig) -> Number | None:
    """Integers, decimals, scientific notation, integer fractions and mixed numbers, exactly."""
    if len(s) > config.max_number_digits:
        return None
    if _NUMBER_RE.match(s):
        mant, _, exp = s.lower().partition("e")
        if exp and abs(int(exp)) > config.max_exact_exponent:
            return None
        value = Fraction(mant) * (Fraction(10) ** int(exp) if exp else 1)
        return Number(value, decimal="." in mant)
    m = _TIMES_TEN_RE.match(s)
    if m:
        if abs(int(m.group(2))) > config.max_exact_exponent:
            return None
        return Number(Fraction(m.group(1)) * Fraction(10) ** int(m.group(2)), decimal="." in m.group(1))
    m = _POW_TEN_RE.match(s)
    if m:
        if abs(int(m.group(2))) > config.max_exact_exponent:
            return None
        v = Fraction(10) ** int(m.group(2))
        return Number(-v if m.group(1) == "-" else v, decimal=False)
    m = _FRAC_RE.match(s)
    if m:
        den = int(m.group(3))
        if den == 0:
            return None
        v = Fraction(int(m.group(2)), den)
        return Number(-v if m.group(1) == "-" else v, decimal=False)
    m = _SLASH_RE.match(s)
    if m:
        den = int(m.group(2))
        return None if den == 0 else Number(Fraction(int(m.group(1)), den), decimal=False)
    m = _MIXED_RE.match(s)
    if m:
        den = int(m.group(4))
        if den == 0:
            return None
        v = int(m.group(2)) + Fraction(int(m.group(3)), den)
        return Number(-v if m.group(1) == "-" else v, decimal=False)
    return None


MAX_PLUS_MINUS = 3
"""Most `\\pm`/`\\mp` signs expanded in one element (2**3 = 8 alternatives)."""


def _expand_pm(s: str) -> list[str] | None:
    r"""`a \pm b` → [`a+b`, `a-b`] by substituting each sign in turn (so nested ones work too)."""
    if r"\pm" not in s and r"\mp" not in s:
        return None
    out = [s]
    for _ in range(MAX_PLUS_MINUS):
        nxt = []
        for t in out:
            i, j = t.find(r"\pm"), t.find(r"\mp")
            k = min(x for x in (i, j) if x >= 0) if max(i, j) >= 0 else -1
            if k < 0 or t[k + 3: k + 4].isalpha():
                nxt.append(t)
                continue
            first, second = ("+", "-") if t.startswith(r"\pm", k) else ("-", "+")
            nxt.extend([t[:k] + first + t[k + 3:], t[:k] + second + t[k + 3:]])
        out = nxt
    return [t.lstrip("+") if not t.startswith("+-") else t for t in out]


def _parse_structure(s: str, config: MathEquivConfig, top: bool = True) -> object:
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
        if len(inner_items) == 1:
            if op in "([":  # grouping: (5) → 5
                return _parse_element(inner, config)
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

    config: MathEquivConfig
    fast: bool
    reason: str = ""


def _same(a: object, r: object, cx: _Cmp) -> bool:
    """Is answer node `a` equal to reference node `r`? Sets cx.reason on a decision."""
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
        return _numbers_equal(a.value, r.value, a.decimal or r.decimal, cx)
    if isinstance(a, Expr) and isinstance(r, Expr) and a.latex == r.latex:
        cx.reason = "same expression"
        return True
    if cx.fast:
        raise _NeedsSympy()
    return _sympy_equal(a, r, cx)


def _has_inequality(node: object) -> bool:
    if isinstance(node, Expr):
        return bool(_RELATION_RE.search(node.latex))
    if isinstance(node, Union):
        return any(_has_inequality(p) for p in node.parts)
    if isinstance(node, WithUnit):
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


def _real_set(node: object, config: MathEquivConfig, side: str):
    """The sympy set of reals a node describes (interval, union, one-variable inequality), or None."""
    import sympy

    if isinstance(node, WithUnit):
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


def _numbers_equal(a: Fraction, r: Fraction, decimal: bool, cx: _Cmp) -> bool:
    if a == r:
        cx.reason = "equal numbers"
        return True
    if decimal:
        tol = cx.config.rel_tol * max(abs(a), abs(r))
        if abs(a - r) <= tol:
            cx.reason = f"decimal within relative tolerance {cx.config.rel_tol:g}"
            return True
        cx.reason = f"numbers differ beyond relative tolerance {cx.config.rel_tol:g}: {_fmt(a)} vs {_fmt(r)}"
        return False
    cx.reason = f"numbers differ: {_fmt(a)} vs {_fmt(r)}"
    return False


def _fmt(x: Fraction) -> str:
    s = str(x)
    return s if len(s) <= 40 else s[:37] + "…"


def _same_seq(a: object, r: object, cx: _Cmp) -> bool:
    if not (isinstance(a, Seq) and isinstance(r, Seq)):
        one = a if isinstance(a, Seq) else r
        cx.reason = f"a {one.kind} of {len(one.items)} vs a single value"
        return False
    unordered = {"list", "set"}
    if a.kind in unordered and r.kind in unordered:
        return _match_unordered(a.items, r.items, cx, "elements")
    if "list" in (a.kind, r.kind) and {a.kind, r.kind} <= {"list", "tuple"}:
        return _match_ordered(a.items, r.items, cx)
    if a.kind != r.kind or a.open != r.open or a.close != r.close:
        cx.reason = f"brackets differ: {a.open or '·'}…{a.close or '·'} vs {r.open or '·'}…{r.close or '·'}"
        return False
    return _match_ordered(a.items, r.items, cx)


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

_DECIMAL_RE = re.compile(r"(?<![\d.])(\d+)\.(\d+)(?![\d.])")
_SCI_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)[eE]([-+]?\d+)(?![\w.])")


def _exact_decimals(latex: str) -> str:
    r"""Decimal literals to exact fractions, `1.5e3` to `1.5\times10^{3}` (latex2sympy reads `1e3` as 1·e·3)."""
    latex = _SCI_RE.sub(r"{\1\\times10^{\2}}", latex)
    return _DECIMAL_RE.sub(lambda m: "{\\frac{%s%s}{1%s}}" % (m.group(1), m.group(2), "0" * len(m.group(2))), latex)


def _check_versions(config: MathEquivConfig) -> str | None:
    for dist, want in (("sympy", config.sympy_version), ("latex2sympy2_extended", config.latex2sympy_version)):
        have = installed_version(dist)
        if have is None:
            return f"{dist} is not installed (pinned {want})"
        if have != want:
            return f"installed {dist} {have} differs from the pinned {want}; verdicts would not be reproducible"
    return None


def _to_sympy(latex: str, config: MathEquivConfig):
    import sympy
    from latex2sympy2_extended.latex2sympy2 import ConversionConfig, latex2sympy

    try:
        expr = latex2sympy(_exact_decimals(latex), is_real=True, convert_degrees=False, normalization_config=None,
                           conversion_config=ConversionConfig(interpret_as_mixed_fractions=False,
                                                              lowercase_symbols=False))
    except Exception as e:  # latex2sympy raises bare Exceptions with multi-line messages
        raise _ParseError(f"latex2sympy cannot read '{latex[:60]}': {str(e).splitlines()[0][:80]}") from None
    if isinstance(expr, (list, tuple)):
        raise _ParseError(f"'{latex[:60]}' reads as several objects")
    # `i` is the imaginary unit in a final answer
    i_syms = [s for s in getattr(expr, "free_symbols", ()) if getattr(s, "name", None) == "i"]
    if i_syms:
        expr = expr.subs({s: sympy.I for s in i_syms})
    _check_size(expr, config)
    try:  # latex2sympy leaves some products and powers unevaluated; sizes were checked above
        expr = expr.doit()
    except Exception:
        pass
    return expr


def _log10_abs(e) -> float | None:
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
        lb, lx = _log10_abs(e.base), _log10_abs(e.exp)
        if lb is None or lx is None:
            return None
        if lx > 300:
            return float("inf") if lb != 0 else 0.0
        x = 10.0 ** lx
        return x * lb if (e.exp.is_extended_negative is not True) else -x * lb
    if isinstance(e, sympy.Mul):
        parts = [_log10_abs(a) for a in e.args]
        return None if any(p is None for p in parts) else sum(parts)
    if isinstance(e, sympy.Add):
        parts = [_log10_abs(a) for a in e.args]
        return None if any(p is None for p in parts) else max(parts) + pymath.log10(len(parts))
    return None


def _check_size(expr, config: MathEquivConfig) -> None:
    """Refuse trees over MAX_TREE_NODES and numeric powers over MAX_EXACT_EXPONENT (towers included),
    judged from float estimates, never by evaluating the power."""
    import math as pymath

    import sympy

    if isinstance(expr, sympy.MatrixBase):
        for e in expr:
            _check_size(e, config)
        return
    if not isinstance(expr, sympy.Basic):
        return
    limit = pymath.log10(config.max_exact_exponent)
    nodes = 0
    for node in sympy.preorder_traversal(expr):
        nodes += 1
        if nodes > config.max_tree_nodes:
            raise _ParseError(f"expression over MAX_TREE_NODES={config.max_tree_nodes}")
        if isinstance(node, sympy.Pow) and node.base.is_number and node.exp.is_number:
            if node.base in (0, 1, -1):
                continue
            lx = _log10_abs(node.exp)
            if lx is not None and lx > limit:
                size = "too many digits to estimate" if lx == float("inf") else f"about {lx:.3g} digits"
                raise _ParseError(f"an exponent with {size} is over MAX_EXACT_EXPONENT={config.max_exact_exponent}")


_SAMPLE_VALUES = ("0.7312", "1.6180", "-0.4142", "2.7183", "0.3091", "-1.3247")


def _value(expr):
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


def _close(ea, er, va, vr, rel: float) -> bool:
    """|ea - er| <= rel * max(|va|, |vr|), the difference evaluated adaptively (no cancellation loss)."""
    import sympy

    d = _value(ea - er)
    if d is None:
        d = va - vr
    scale = max(abs(va), abs(vr))
    if scale == 0:
        return bool(abs(d) == 0)
    return bool(abs(d) <= sympy.Float(rel, 30) * scale)


def _sympy_equal(a: object, r: object, cx: _Cmp) -> bool:
    import sympy

    ea = _leaf_sympy(a, cx.config, "answer")
    er = _leaf_sympy(r, cx.config, "reference")
    decimal = getattr(a, "decimal", False) or getattr(r, "decimal", False)
    if isinstance(ea, sympy.MatrixBase) or isinstance(er, sympy.MatrixBase):
        if not (isinstance(ea, sympy.MatrixBase) and isinstance(er, sympy.MatrixBase)):
            cx.reason = "a matrix vs a non-matrix"
            return False
        if ea.shape != er.shape:
            cx.reason = f"matrix shapes differ: {ea.shape} vs {er.shape}"
            return False
        for k, (x, y) in enumerate(zip(ea, er)):
            if not _scalar_equal(x, y, decimal, cx):
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
    return _scalar_equal(ea, er, decimal, cx)


def _leaf_sympy(node: object, config: MathEquivConfig, side: str):
    import sympy

    if isinstance(node, Number):
        return sympy.Rational(node.value.numerator, node.value.denominator)
    if isinstance(node, Expr):
        try:
            return _to_sympy(node.latex, config)
        except _ParseError as e:
            raise _SideError(side, str(e)) from None
    raise _SideError(side, f"cannot compare {type(node).__name__} symbolically")


class _SideError(Exception):
    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side


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
    ok = _scalar_equal(ca.lhs - ca.rhs, cr.lhs - cr.rhs, False, cx)
    cx.reason = "same relation" if ok else f"relations differ: {cx.reason}"
    return ok


def _scalar_equal(ea, er, decimal: bool, cx: _Cmp) -> bool:
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
        va, vr = _value(ea), _value(er)
        if va is not None and vr is not None:
            if decimal:
                ok = _close(ea, er, va, vr, config.rel_tol)
                cx.reason = (f"decimal within relative tolerance {config.rel_tol:g}" if ok else
                             f"values differ beyond relative tolerance {config.rel_tol:g}")
                return ok
            if not _close(ea, er, va, vr, 1e-12):
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
    # expressions with variables: sample points first, then simplification
    agreed = 0
    for k in range(config.sample_points):
        point = {s: sympy.Rational(_SAMPLE_VALUES[(k + j) % len(_SAMPLE_VALUES)]) for j, s in enumerate(free)}
        pa, pr = ea.subs(point), er.subs(point)
        va, vr = _value(pa), _value(pr)
        if va is None or vr is None:
            continue
        if not _close(pa, pr, va, vr, config.rel_tol if decimal else 1e-12):
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


def _short(x) -> str:
    import sympy

    if isinstance(x, sympy.Float):
        x = sympy.N(x, 8)
    s = str(x)
    return s if len(s) <= 30 else s[:29] + "…"


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


def _prepare(answer: str, reference: str, config: MathEquivConfig):
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


def math_equiv_fast(answer: str, reference: str, *, num_choices: int | None = None,
                    config: MathEquivConfig = CONFIG) -> Judgment | None:
    """Decide by strings and exact plain numbers alone (no sympy), or return None."""
    verdict, nodes = _prepare(answer, reference, config)
    if verdict is not None:
        return verdict
    try:
        return _decide(*nodes, _Cmp(config, fast=True))
    except _NeedsSympy:
        return None


@register("math.equiv", "1", config=CONFIG, fast=math_equiv_fast, isolated=True,
          description="Symbolic equivalence of final math answers (sympy + latex2sympy2_extended), "
                      "MATH conventions, exact numbers, bounded time",
          source="audit (normalizations re-decided from hendrycks/math, Qwen2.5-Math, Math-Verify)")
def math_equiv(answer: str, reference: str, *, num_choices: int | None = None,
               config: MathEquivConfig = CONFIG) -> Judgment:
    verdict, nodes = _prepare(answer, reference, config)
    if verdict is not None:
        return verdict
    problem = _check_versions(config)
    if problem:
        return Judgment(None, "error", problem)
    return _decide(*nodes, _Cmp(config, fast=False))
