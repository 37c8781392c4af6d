"""The reader of Math-Verify's published test tables (benchmarks/_mathverify_suite.py), on a small source
written here in the shape of its tests: the real tables are fetched only by the benchmark, never committed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from _mathverify_suite import cases_from_source  # noqa: E402

SOURCE = '''
import math
import pytest
from tests.test_all import compare_strings

@pytest.mark.parametrize("gold,pred,expected", [("$1$", "$1$", 1), ("$2$", "$3$", 0)])
def test_plain(gold, pred, expected):
    assert compare_strings(gold, pred, match_types=["latex"]) == expected

@pytest.mark.parametrize("gold,pred,expected,precision", [("$1/3$", "0.33", 1, 2)])
def test_precision(gold, pred, expected, precision):
    assert compare_strings(gold, pred, precision=precision) == expected

@pytest.mark.parametrize("gold, pred, expected", [(f"{math.sqrt(4):.1f}", "$2$", 1)])
def test_fstring(gold, pred, expected):
    assert compare_strings(gold, pred, precision=5) == expected

@pytest.mark.parametrize("gold, pred, result", [("$x$", "$x$", 1)])
def test_defaults(gold, pred, result):
    assert int(verify(parse(gold), parse(pred))) == result

@pytest.mark.parametrize("pred,expected,config", [("A", ["a", "A"], None)])
def test_not_a_gold_table(pred, expected, config):
    pass

@pytest.mark.parametrize("gold, pred, expected", [(open("x").read(), "$1$", 1)])
def test_not_literal(gold, pred, expected):
    assert compare_strings(gold, pred) == expected
'''


def test_tables_are_read_without_running_them():
    cases, skipped = cases_from_source("test_x.py", SOURCE)
    got = [(c.key, c.gold, c.pred, c.expected, c.match_types, c.precision) for c in cases]
    assert got == [
        ("test_x.py::test_plain[0]", "$1$", "$1$", True, ("latex",), 6),
        ("test_x.py::test_plain[1]", "$2$", "$3$", False, ("latex",), 6),
        ("test_x.py::test_precision[0]", "$1/3$", "0.33", True, ("latex", "expr"), 2),
        ("test_x.py::test_fstring[0]", "2.0", "$2$", True, ("latex", "expr"), 5),
        ("test_x.py::test_defaults[0]", "$x$", "$x$", True, ("default",), 6),
    ]
    assert skipped == ["test_x.py::test_not_literal[0]"]
    assert len({c.digest for c in cases}) == len(cases)


def test_suite_adjudications_name_a_case_a_truth_and_a_reason():
    path = REPO / "tests" / "golden" / "graders" / "mathverify_suite_adjudicated.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows and len({r["case"] for r in rows}) == len(rows)
    for r in rows:
        assert set(r) == {"case", "digest", "published", "truth", "reason"}
        assert r["truth"] in ("correct", "incorrect") and r["published"] in ("correct", "incorrect")
        assert len(r["digest"]) == 64 and r["reason"]
    # every overruled label is a credit of an approximation or of a wrong value, or a configured refusal,
    # or (since math.equiv@3's revision before release) a credit of a false chain of constants
    overruled = sorted(r["case"] for r in rows if r["truth"] != r["published"])
    assert overruled == ["test_all.py::test_complex_math_expressions[0]",
                         "test_all.py::test_complex_math_expressions[13]",
                         "test_all.py::test_complex_math_expressions[7]", "test_all.py::test_float_precision[0]",
                         "test_all.py::test_latex_notation[9]", "test_all.py::test_relations_math[10]",
                         "test_all.py::test_relations_math[12]", "test_all.py::test_relations_math[13]",
                         "test_all.py::test_relations_math[16]", "test_all.py::test_relations_math[21]",
                         "test_all.py::test_relations_math[26]", "test_all.py::test_relations_math[27]",
                         "test_all.py::test_set_rel_assymetry[3]", "test_strict.py::test_strict_variable_comparison[1]",
                         "test_yujianll.py::test_string_extraction[9]"]
    chains = [r for r in rows if "review 2026-12-01" in r["reason"]]
    assert len(chains) == 8 and all(r["truth"] == "incorrect" for r in chains)
