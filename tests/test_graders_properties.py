"""Properties (hypothesis, bounded example counts): graders never raise, grade(x, x) is correct,
equal-after-normalization variants are correct, normalization is idempotent."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from audit import graders
from audit.graders.exact import normalize_text
from audit.graders.hendrycks import is_equiv
from audit.graders.math.v1 import MathEquiv1
from audit.graders.math.v2 import MathEquiv2

# LaTeX-flavoured text: the pieces answers are made of, plus arbitrary characters
PIECES = st.sampled_from([
    "x", "y", "2", "10", "0.5", "-", "+", "=", ",", " ", "{", "}", "(", ")", "[", "]", "^", "_", "/", ":", "%",
    r"\frac", r"\dfrac", r"\sqrt", r"\pi", r"\infty", r"\pm", r"\text{", r"\boxed{", r"\left(", r"\right)", r"\%",
    r"\$", "$", r"\!", r"\,", r"\cup", r"\{", r"\}", r"^\circ", "e", "E3", "yes", "\u2212", "\u00b0", ".", "C",
    r"\log", "\u2103", "0.3333", "1/0",
])
LATEXISH = st.one_of(st.lists(PIECES, max_size=12).map("".join), st.text(max_size=20))

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
POOLED = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("grader", [MathEquiv1, MathEquiv2], ids=["math", "math2"])
@FAST
@given(LATEXISH)
def test_math_normalize_is_idempotent(grader, s):
    normalize = grader().normalize
    once = normalize(s)
    assert normalize(once) == once


@FAST
@given(st.text(max_size=40))
def test_hle_normalize_is_idempotent(s):
    once = normalize_text(s)
    assert normalize_text(once) == once


@FAST
@given(LATEXISH, LATEXISH)
def test_string_graders_never_raise(a, r):
    for spec in ("math.hendrycks", "exact.hle", "choice"):
        v = graders.get(spec).grade(a, r, num_choices=10)
        assert v.status in graders.STATUSES
    assert isinstance(is_equiv(a, r), bool)


@POOLED
@given(LATEXISH, LATEXISH)
def test_symbolic_graders_never_raise(a, r):
    for spec in ("math.equiv@1", "math.equiv@2", "math.equiv@3", "math.mathverify"):
        v = graders.get(spec).grade(a, r, budget_s=2.0)
        assert v.status in graders.STATUSES and v.reason


# arithmetic expressions that always parse
ATOM = st.one_of(st.integers(-50, 50).map(str), st.sampled_from(["x", "y", r"\pi", r"\sqrt{2}", "0.25"]))
EXPR = st.recursive(ATOM, lambda inner: st.one_of(
    st.tuples(inner, st.sampled_from(["+", "-", r"\cdot "]), inner).map(lambda t: f"{t[0]}{t[1]}{t[2]}"),
    st.tuples(inner, inner).map(lambda t: rf"\frac{{{t[0]}}}{{{t[1]}+100}}"),
    inner.map(lambda e: f"({e})^{{2}}"),
), max_leaves=5)


@POOLED
@given(EXPR, st.sampled_from(["{}", "$ {} $", r"\boxed{{{}}}", "x = {}", r"\left({}\right)", "{}+0"]),
       st.sampled_from(["math.equiv@1", "math.equiv@2", "math.equiv@3"]))
def test_math_equiv_is_correct_on_equal_variants(x, wrapper, spec):
    v = graders.get(spec).grade(wrapper.format(x), x, budget_s=5.0)
    assert v.status == "correct", (wrapper.format(x), x, v)


@FAST
@given(LATEXISH)
def test_math_equiv2_grade_x_x_is_correct(x):
    assert graders.get("math.equiv@2").grade(x, x).status == "correct"
    assert graders.get("math.equiv@3").grade(x, x).status == "correct"


# the stated-precision rule on exact fractions: the rounding is correct, one unit off in the last digit is not
FRACTIONS = st.tuples(st.integers(-10**6, 10**6), st.integers(1, 10**4)).map(lambda t: Fraction(*t))


def _decimal(x: Fraction, places: int) -> str:
    n = round(x * 10**places)  # Python rounds ties to even: one of the accepted roundings
    s = str(abs(n)).rjust(places + 1, "0")
    return ("-" if n < 0 else "") + s[:-places] + "." + s[-places:]


@pytest.mark.slow
@FAST
@given(FRACTIONS, st.integers(1, 8))
def test_math_equiv2_decimals_count_to_their_stated_digits(x, places):
    ref = rf"\frac{{{x.numerator}}}{{{x.denominator}}}" if x.denominator > 1 else str(x.numerator)
    g = graders.get("math.equiv@2")
    good = _decimal(x, places)
    assert g.grade(good, ref).status == "correct", (good, ref)
    assert g.grade(ref, good).status == "correct", (ref, good)  # the reference's digits decide
    unit = Fraction(1, 10**places)
    for step in (-1, 1):  # one unit off in the last digit: wrong, unless x sits exactly on the tie
        off = _decimal(Fraction(good) + step * unit, places)
        tie = abs(Fraction(off) - x) == unit / 2
        assert g.grade(off, ref).status == ("correct" if tie else "incorrect"), (off, ref)
        assert g.grade(off, good).status == "incorrect", (off, good)


@FAST
@given(FRACTIONS, st.integers(1, 8))
def test_math_equiv3_credits_a_decimal_only_when_it_is_the_exact_value(x, places):
    # math.equiv@3 never credits an approximation: a decimal equals a fraction only when it is its value
    ref = rf"\frac{{{x.numerator}}}{{{x.denominator}}}" if x.denominator > 1 else str(x.numerator)
    g = graders.get("math.equiv@3")
    n = round(x * 10**places)
    s = str(abs(n)).rjust(places + 1, "0")
    dec = ("-" if n < 0 else "") + s[:-places] + "." + s[-places:]
    exact = Fraction(n, 10**places) == x
    assert g.grade(dec, ref).correct is exact, (dec, ref)
    assert g.grade(ref, dec).correct is exact, (ref, dec)
    assert g.grade(dec + "0", dec).status == "correct"  # trailing zeros state the same rational
