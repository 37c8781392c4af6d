"""Math-Verify's own published test tables, read at run time from the pinned sdist (never committed).

The sdist of `math-verify==0.9.0` on PyPI ships its `tests/` folder (the GitHub repository has no
0.9.0 tag). `load_suite()` downloads it with pip (`pip download --no-binary :all: --no-deps`) into a
cache folder outside the repository, checks its sha256 against the pin below, and reads the test
files from the tarball in memory. The tables are read with `ast` (never executed): every
`@pytest.mark.parametrize` table with a gold, a prediction and an expected verdict, plus how its
test calls Math-Verify (`compare_strings` with its match types, precision, strictness and
set/relation flag, or `verify(parse(gold), parse(pred))` with the defaults).

Each case is named `file::test[row]` (row = 0-based position in the table), which is how the
adjudications in tests/golden/graders/mathverify_suite_adjudicated.jsonl refer to it, together with
the sha256 of its gold and prediction (a changed table is noticed, not silently re-adjudicated).
"""

from __future__ import annotations

import ast
import hashlib
import io
import math
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SDIST = "math_verify-0.9.0.tar.gz"
SDIST_SHA256 = "45ac6c61344ba056b9e99a660a4bc8d044ed408f730aed68c60435aa5eec4645"
"""sha256 of the sdist PyPI serves for math-verify 0.9.0."""
CACHE = Path(os.environ.get("AUDIT_CACHE", Path.home() / ".cache" / "audit"))


@dataclass(frozen=True)
class Case:
    """One row of a Math-Verify test table."""

    key: str
    """`file::test[row]`."""
    gold: str
    pred: str
    expected: bool
    match_types: tuple[str, ...] = ("latex", "expr")
    """Extraction targets of the test's `compare_strings`; `default` for `parse()`'s defaults."""
    precision: int = 6
    strict: bool = True
    allow_set_relation_comp: bool = False
    digest: str = field(default="", compare=False)
    """sha256 of gold + NUL + pred: the adjudication names the case by key and digest."""


def sdist_path() -> Path:
    """The pinned sdist in the cache, downloaded with pip when missing; sha256 checked."""
    path = CACHE / SDIST
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            subprocess.run([sys.executable, "-m", "pip", "download", "math-verify==0.9.0", "--no-binary", ":all:",
                            "--no-deps", "--no-build-isolation", "-q", "-d", tmp], check=True)
            os.replace(Path(tmp) / SDIST, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise RuntimeError(f"{path}: sha256 {digest} is not the pinned {SDIST_SHA256}")
    return path


def _literal(node: ast.AST):
    """A literal, or an f-string of literals and `math.<fn>(literals)` (one row formats sqrt(17))."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        pass
    if isinstance(node, (ast.Tuple, ast.List)):
        return type(node.elts)(_literal(e) for e in node.elts) if isinstance(node, ast.List) else \
            tuple(_literal(e) for e in node.elts)
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                spec = _literal(part.format_spec) if part.format_spec is not None else ""
                out.append(format(_literal(part.value), spec))
            else:
                out.append(_literal(part))
        return "".join(out)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            getattr(node.func.value, "id", "") == "math" and node.func.attr in _MATH_FUNCTIONS and not node.keywords:
        return getattr(math, node.func.attr)(*(_literal(a) for a in node.args))
    raise ValueError(f"not a literal: {ast.dump(node)[:80]}")


_MATH_FUNCTIONS = frozenset({"sqrt", "exp", "log"})


def _call_config(fn: ast.FunctionDef) -> dict | None:
    """How the test function calls Math-Verify: compare_strings kwargs (literals or parameter names)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "compare_strings":
                cfg: dict = {"kind": "compare_strings"}
                for kw in node.keywords:
                    cfg[kw.arg] = kw.value.id if isinstance(kw.value, ast.Name) else ("lit", _literal(kw.value))
                return cfg
            if node.func.id == "verify" and node.args and isinstance(node.args[0], ast.Call) and \
                    getattr(node.args[0].func, "id", "") == "parse":
                return {"kind": "parse_defaults"}
    return None


def _tables(name: str, source: str):
    tree = ast.parse(source)
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef):
            continue
        for dec in fn.decorator_list:
            if not (isinstance(dec, ast.Call) and getattr(dec.func, "attr", "") == "parametrize"):
                continue
            names = [n.strip() for n in _literal(dec.args[0]).split(",")]
            if "gold" not in names or "pred" not in names:
                continue
            yield fn, names, dec.args[1]


def cases_from_source(name: str, source: str) -> tuple[list[Case], list[str]]:
    """The cases of one test file, and the keys of rows that are not plain literals (skipped)."""
    out: list[Case] = []
    skipped: list[str] = []
    for fn, names, rows in _tables(name, source):
        cfg = _call_config(fn)
        if cfg is None:
            continue
        for i, row in enumerate(rows.elts):
            key = f"{name}::{fn.name}[{i}]"
            try:
                values = dict(zip(names, _literal(row), strict=True))
            except ValueError:
                skipped.append(key)
                continue
            expected = values.get("expected", values.get("result"))

            def arg(kw: str, default):
                v = cfg.get(kw)
                if v is None:
                    return default
                return v[1] if isinstance(v, tuple) else values[v]

            gold, pred = values["gold"], values["pred"]
            digest = hashlib.sha256(f"{gold}\0{pred}".encode()).hexdigest()
            if cfg["kind"] == "parse_defaults":
                out.append(Case(key, gold, pred, bool(expected), ("default",), digest=digest))
            else:
                out.append(Case(key, gold, pred, bool(expected), tuple(arg("match_types", ["latex", "expr"])),
                                int(arg("precision", 6)), bool(arg("strict", True)),
                                bool(arg("allow_set_relation_comp", False)), digest=digest))
    return out, skipped


def load_suite() -> tuple[list[Case], list[str]]:
    """Every table case of the pinned sdist's tests, in file order, and the skipped row keys."""
    cases: list[Case] = []
    skipped: list[str] = []
    with tarfile.open(sdist_path()) as tar:
        members = sorted((m for m in tar.getmembers() if "/tests/test_" in m.name and m.name.endswith(".py")),
                         key=lambda m: m.name)
        for m in members:
            fh = tar.extractfile(m)
            assert fh is not None
            source = io.TextIOWrapper(fh, encoding="utf-8").read()
            c, s = cases_from_source(Path(m.name).name, source)
            cases += c
            skipped += s
    return cases, skipped


# --------------------------------------------------------------------------- Math-Verify as its tests call it


def _targets(case: Case):
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    if case.match_types == ("default",):
        return None
    out = []
    for t in case.match_types:
        out.append(LatexExtractionConfig(boxed_match_priority=0) if t == "latex" else ExprExtractionConfig())
    return out


def mathverify_parse(case: Case, text: str) -> list:
    """`parse` with the test's extraction targets (its own timeout off: callers bound the time)."""
    from math_verify import parse

    targets = _targets(case)
    if targets is None:
        return parse(text, parsing_timeout=None)
    return parse(text, targets, parsing_timeout=None)


def mathverify_verdict(case: Case) -> tuple[bool, str | None, str | None]:
    """(Math-Verify's verdict as the test computes it, extracted gold string, extracted pred string)."""
    from math_verify import verify

    gold, pred = mathverify_parse(case, case.gold), mathverify_parse(case, case.pred)
    if case.match_types == ("default",):
        ok = verify(gold, pred, timeout_seconds=None)
    else:
        ok = verify(gold, pred, float_rounding=case.precision, strict=case.strict,
                    allow_set_relation_comp=case.allow_set_relation_comp, timeout_seconds=None)
    return bool(ok), _extracted(gold), _extracted(pred)


def _extracted(parsed: list) -> str | None:
    """The string Math-Verify extracted (the fallback string `parse` appends), or None."""
    if len(parsed) >= 2 and isinstance(parsed[-1], str):
        return parsed[-1]
    if len(parsed) == 1 and isinstance(parsed[0], str):
        return parsed[0]
    return None
