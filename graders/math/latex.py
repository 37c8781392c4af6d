"""String scanning of LaTeX answers for the math engine: no sympy, no configuration, no verdicts.

Brace and bracket matching, splitting at top-level separators, unwrapping outer `$…$`/`\\boxed{…}`,
`\\frac12` → `\\frac{1}{2}`, text keys, and the patterns the engine's normalization and parsing
read. Every function here is pure; the rules that decide verdicts are the engine's methods
(`audit.graders.math.engine`), which call these.
"""

from __future__ import annotations

import re

# --------------------------------------------------------------------------- normalization patterns

UNICODE = (
    ("\u2212", "-"), ("\u2013", "-"), ("\u2014", "-"), ("\u2010", "-"), ("\u2011", "-"), ("\ufe63", "-"),
    ("\uff0d", "-"), ("\u00d7", r"\times "), ("\u00b7", r"\cdot "), ("\u22c5", r"\cdot "), ("\u00f7", r"\div "),
    ("\u221a", r"\sqrt"), ("\u03c0", r"\pi "), ("\u221e", r"\infty "), ("\u00b0", r"^\circ"), ("\u2264", r"\le "),
    ("\u2265", r"\ge "), ("\u2260", r"\ne "), ("\u00b1", r"\pm "), ("\u2213", r"\mp "), ("\u222a", r"\cup "),
    ("\u2229", r"\cap "), ("\u2205", r"\emptyset "), ("\u00a0", " "), ("\u2009", " "), ("\u202f", " "),
    ("\u2007", " "), ("\u200b", ""), ("\u2032", "'"),
)
SIMPLE_REPLACE = (
    (r"\dfrac", r"\frac"), (r"\tfrac", r"\frac"), (r"\cfrac", r"\frac"), (r"\dbinom", r"\binom"),
    (r"\tbinom", r"\binom"), (r"\displaystyle", ""), (r"\left.", ""), (r"\right.", ""), (r"\!", ""),
    (r"\$", ""), (r"\%", ""), ("%", ""), (r"{,}", ","), (r"\varnothing", r"\emptyset"), (r"\lbrace", r"\{"),
    (r"\rbrace", r"\}"), (r"\lvert", "|"), (r"\rvert", "|"), (r"\vert", "|"), (r"\neq", r"\ne"),
    (r"\leq", r"\le"), (r"\geq", r"\ge"), (r"\to", r"\rightarrow"),
    ("<=", r"\le "), (">=", r"\ge "), ("!=", r"\ne "),  # after `\!`, so `x\!=\!5` stays an equation
)
SIZING_RE = re.compile(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|biggl|biggr|Biggl|Biggr|big|Big|bigg|Bigg)(?![a-zA-Z])")
SPACING_RE = re.compile(r"\\\\|\\(?:,|;|:|\s|quad(?![a-zA-Z])|qquad(?![a-zA-Z]))|~")
DEGREE_RE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![a-zA-Z])|\\degree(?![a-zA-Z])|\{\}\^\\circ")
TEXTLIKE_RE = re.compile(r"\\(?:mathrm|textrm|textbf|textit|textnormal|mathbf|mathit|mbox|textup|mathsf|text)\s*\{")
BARE_FUNC_RE = re.compile(
    r"(?<![\\a-zA-Z])(arcsin|arccos|arctan|sinh|cosh|tanh|sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|pi|infty)"
    r"(?![a-zA-Z])")
INFINITY_RE = re.compile(r"(?<![\\a-zA-Z])(?:infinity|inf)(?![a-zA-Z])")
SPACE_RE = re.compile(r"\s+")
UNIT_WORDS_RE = re.compile(r"(\d)\s+([A-Za-z]{2,}(?: [A-Za-z]+)*\.?)(\^\{?[23]\}?)?\s*$")
WRAPPERS = (("$$", "$$"), ("$", "$"), (r"\(", r"\)"), (r"\[", r"\]"), ("**", "**"))


def match_brace(s: str, i: int) -> int:
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


def unwrap_command(s: str, command: str) -> str | None:
    """The argument when s is exactly `\\command{arg}`, else None."""
    if not s.startswith(command):
        return None
    i = len(command)
    while i < len(s) and s[i] == " ":
        i += 1
    if i >= len(s) or s[i] != "{":
        return None
    end = match_brace(s, i)
    if end != len(s) - 1:
        return None
    return s[i + 1: end]


def unwrap_outer(s: str) -> str:
    """Remove outer wrappers (`$…$`, `\\boxed{…}`, `{…}`, …) until none is left."""
    while True:
        t = _unwrap_outer_once(s)
        if t == s:
            return s
        s = t


def _unwrap_outer_once(s: str) -> str:
    for left, right in WRAPPERS:
        if len(s) > len(left) + len(right) and s.startswith(left) and s.endswith(right):
            inner = s[len(left): -len(right)]
            if left == "$" and "$" in inner:
                continue
            return inner.strip()
    for cmd in (r"\boxed", r"\fbox"):
        boxed = unwrap_command(s, cmd)
        if boxed is not None:
            return boxed.strip()
    if s.startswith("{") and match_brace(s, 0) == len(s) - 1:  # TeX grouping braces, not a set
        return s[1:-1].strip()
    return s


def brace_single_args(s: str) -> str:
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
                    end = match_brace(s, i)
                    if end < 0:
                        break
                    out.append(brace_single_args(s[i: end + 1]))
                    i = end + 1
                elif s[i] == "(" and m.group(1) == "sqrt":
                    end = match_paren(s, i)
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
            end = match_paren(s, i + 1)
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


def match_paren(s: str, i: int) -> int:
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def squeeze_spaces(s: str) -> str:
    """Remove spaces except between two letters (`\\pi r`, `x y`) and one after a comma."""
    s = SPACE_RE.sub(" ", s).strip()
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


# --------------------------------------------------------------------------- structure patterns and scanning

UNION_SEPS = (r"\cup", r"\lor", r"\vee", r"\text{or}")
"""Separators of a union: of intervals (`\\cup`) or of inequalities (`x<2 \\text{or} x>3`)."""
RELATION_RE = re.compile(r"<|>|\\(?:le|ge|lt|gt|ne|leqslant|geqslant)(?![a-zA-Z])")
OPENERS = {"(": ")", "[": "]", r"\{": r"\}", r"\langle": r"\rangle"}
GREEK = ("alpha|beta|gamma|delta|epsilon|varepsilon|zeta|eta|theta|vartheta|iota|kappa|lambda|mu|nu|xi|pi|rho|"
         "sigma|tau|upsilon|phi|varphi|chi|psi|omega|Gamma|Delta|Theta|Lambda|Xi|Pi|Sigma|Phi|Psi|Omega")
VARIABLE_RE = re.compile(
    r"^(?:[A-Za-z]{1,3}|\\(?:" + GREEK + r")|\\text\{[A-Za-z ]{1,20}\}|\\overline\{[A-Z]{1,3}\})"
    r"(?:_\{?[A-Za-z0-9]{1,3}\}?)?'*(?:\([A-Za-z0-9, ]{0,12}\))?$")
THOUSANDS_PREFIX_RE = re.compile(r"^[-+]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?=$|\\text\{)")
MIXED_RE = re.compile(r"^([-+]?)(\d+)\\frac\{(\d+)\}\{(\d+)\}$")
BASE_SUBSCRIPT_RE = re.compile(r"^([0-9A-Za-z]+)_\{?(\d{1,2})\}?$")
UNIT_TEXT_RE = re.compile(r"^(.*?[^\s{])\s*\\text\{([^{}]*)\}(\^\{?[23]\}?)?$")
COMMAND_RE = re.compile(r"\\[a-zA-Z]+")
ENV_RE = re.compile(r"\\(?:begin|end)\{[a-zA-Z*]+\}")
WORD_RE = re.compile(r"[A-Za-z]{2,}")
NUMBER_RE = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
TIMES_TEN_RE = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+))(?:\\times|\\cdot|\*)10\^\{?([-+]?\d+)\}?$")
POW_TEN_RE = re.compile(r"^([-+]?)10\^\{?([-+]?\d+)\}?$")
FRAC_RE = re.compile(r"^([-+]?)\\frac\{([-+]?\d+)\}\{([-+]?\d+)\}$")
SLASH_RE = re.compile(r"^([-+]?\d+)/(\d+)$")


def depth_ok(s: str, limit: int) -> bool:
    depth = 0
    for c in s:
        if c in "{([":
            depth += 1
            if depth > limit:
                return False
        elif c in "})]":
            depth -= 1
    return True


def split_top(s: str, seps: tuple[str, ...]) -> list[str]:
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


def enclosing(s: str) -> tuple[str, str, str] | None:
    """(open, close, inner) when s is one bracketed group from its first to its last character."""
    for op, cl_default in OPENERS.items():
        if not s.startswith(op):
            continue
        for cl in ((")", "]") if op in "([" else (cl_default,)):
            if not s.endswith(cl) or len(s) < len(op) + len(cl):
                continue
            inner = s[len(op): len(s) - len(cl)]
            # the opening bracket must close only at the very end
            if balanced(inner):
                return op, cl, inner
    return None


def balanced(s: str) -> bool:
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
    s = TEXTLIKE_RE.sub("{", s)
    s = s.replace("\\", "").replace("{", "").replace("}", "")
    s = "".join(s.split()).lower().rstrip(".")
    while len(s) >= 2 and s[0] == "(" and s[-1] == ")" and balanced(s[1:-1]):
        s = s[1:-1]
    return s


def is_text(s: str) -> bool:
    bare = ENV_RE.sub("", s)
    if ":" in bare:
        return True
    if TEXTLIKE_RE.search(bare):
        return True
    bare = COMMAND_RE.sub(" ", bare)
    return bool(WORD_RE.search(bare))


def unit_key(u: str) -> str:
    k = text_key(u)
    return k[:-1] if k.endswith("s") and len(k) > 2 else k


def is_variable(s: str) -> bool:
    """`x`, `a_1`, `f(x)`, `AB`, `\\theta`, or a tuple of those: `(x, y)`."""
    if VARIABLE_RE.match(s):
        return True
    if len(s) > 2 and s[0] == "(" and s[-1] == ")":
        parts = split_top(s[1:-1], (",",))
        return len(parts) > 1 and all(VARIABLE_RE.match(p) for p in parts)
    return False


# --------------------------------------------------------------------------- plus-minus

MAX_PLUS_MINUS = 3
"""Most `\\pm`/`\\mp` signs expanded in one element (2**3 = 8 alternatives)."""


def expand_pm(s: str) -> list[str] | None:
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

