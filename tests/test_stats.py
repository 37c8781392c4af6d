"""`audit.stats` against values worked out by hand, and the summary's choice of formula.

Known values: t(0.975, 2) = 4.302653 and t(0.975, 12) = 2.178813 (any t table);
1 − 0.05^(1/100) = 0.029513; McNemar exact p for (0, 5) = 2·0.5^5 = 0.0625.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from audit import stats
from audit.summary import figures

approx = pytest.approx


def test_binomial_2se_p_half_n_100_is_plus_minus_a_tenth():
    iv = stats.binomial_2se(50, 100)
    assert iv.method == "binomial_2se" and iv.formula == "p ± 2·√(p(1−p)/n)"
    assert (iv.se, iv.low, iv.high) == (approx(0.05), approx(0.4), approx(0.6))


def test_binomial_2se_clips_to_zero_one_and_needs_rows():
    iv = stats.binomial_2se(99, 100)  # 0.99 ± 0.0199
    assert (iv.low, iv.high) == (approx(0.99 - 2 * math.sqrt(0.99 * 0.01 / 100)), 1.0)
    assert stats.binomial_2se(0, 0) is None


def test_runs_2se_mean_plus_minus_two_sd_over_root_k():
    iv = stats.runs_2se([0.5, 0.6, 0.7])  # mean 0.6, sd 0.1 (K − 1 in the denominator)
    se = 0.1 / math.sqrt(3)
    assert iv.method == "runs_2se" and iv.se == approx(se)
    assert (iv.low, iv.high) == (approx(0.6 - 2 * se), approx(0.6 + 2 * se))
    assert stats.runs_2se([0.5]) is None


def test_runs_t_with_three_runs_uses_t_of_two_degrees_of_freedom():
    iv = stats.runs_t([0.5, 0.6, 0.7])
    se = 0.1 / math.sqrt(3)
    assert (iv.high - 0.6) / se == approx(4.302653, rel=1e-6)
    assert (0.6 - iv.low) / se == approx(4.302653, rel=1e-6)
    assert iv.formula == "mean ± t{0.95, K−1}·sd/√K over K runs"
    # Wider than 2 SE: with three runs the normal approximation understates the spread.
    assert iv.high - iv.low > stats.runs_2se([0.5, 0.6, 0.7]).high - stats.runs_2se([0.5, 0.6, 0.7]).low


def test_runs_t_approaches_two_se_for_many_runs():
    values = [0.5 + 0.01 * (i % 7) for i in range(1000)]
    t, two = stats.runs_t(values), stats.runs_2se(values)
    assert (t.high - t.low) / (two.high - two.low) == approx(1.962 / 2, rel=1e-3)


def test_clustered_se_with_one_sample_is_the_binomial_se():
    # K = 1: each question's mean is its 0/1 score; sd uses n − 1, so the SEs differ by √(n/(n−1)).
    scores = [1.0] * 30 + [0.0] * 70
    clustered, binomial = stats.clustered_t(scores), stats.binomial_2se(30, 100)
    assert clustered.se == approx(binomial.se * math.sqrt(100 / 99))
    assert clustered.se == approx(binomial.se, rel=0.006)
    assert clustered.method == "clustered_t"
    assert stats.clustered_t([1.0]) is None


def test_clustered_se_of_question_means():
    # Four questions right in 3/4, 3/4, 1/4, 1/4 of their samples.
    iv = stats.clustered_t([0.75, 0.75, 0.25, 0.25])
    assert iv.se == approx(math.sqrt(0.25 / 3) / 2)  # sd with n − 1: √(4·0.0625/3)
    assert (iv.high - 0.5) / iv.se == approx(3.182446, rel=1e-6)  # t(0.975, 3)
    assert (0.5 - iv.low) / iv.se == approx(3.182446, rel=1e-6)


def test_zero_failure_bound_for_100_of_100():
    iv = stats.zero_failure_upper(100, 100)
    assert iv.method == "zero_failure_upper"
    assert 1 - iv.low == approx(0.029513, abs=1e-6) and iv.high == 1.0
    none_right = stats.zero_failure_upper(0, 100)
    assert (none_right.low, none_right.high) == (0.0, approx(0.029513, abs=1e-6))
    assert stats.zero_failure_upper(99, 100) is None and stats.zero_failure_upper(0, 0) is None


def test_mcnemar_exact():
    assert stats.mcnemar_exact(0, 5) == approx(0.0625)
    assert stats.mcnemar_exact(5, 0) == approx(0.0625)
    assert stats.mcnemar_exact(5, 5) == 1.0
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(1, 10) == approx(24 / 2048)  # 2·(C(11,0)+C(11,1))/2^11


def _frame(rows: list[tuple[str, int, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"item_id": i, "sample": s, "verdict": v, "status": v, "reason": ""} for i, s, v in rows])


def test_summary_names_the_formula_of_every_interval():
    one = {f.name: f for f in figures(_frame([(f"q{i}", 0, "correct" if i < 5 else "incorrect")
                                              for i in range(10)]))}
    assert [iv.method for iv in one["accuracy"].intervals] == ["binomial_2se"]
    perfect = {f.name: f for f in figures(_frame([(f"q{i}", 0, "correct") for i in range(10)]))}
    assert [iv.method for iv in perfect["accuracy"].intervals] == ["binomial_2se", "zero_failure_upper"]
    three = {f.name: f for f in figures(_frame([(f"q{i}", s, "correct" if (i + s) % 3 else "incorrect")
                                                for i in range(10) for s in range(3)]))}
    assert [iv.method for iv in three["accuracy"].intervals] == ["runs_2se", "runs_t", "clustered_t"]
    assert [iv.method for iv in three["accuracy[sample=1]"].intervals] == ["binomial_2se"]
    # The overall runs interval is built from the per-run values.
    runs = [three[f"accuracy[sample={s}]"].value for s in range(3)]
    assert three["accuracy"].intervals[0] == stats.runs_2se(runs)


def test_clustered_interval_sees_question_variance_the_runs_interval_misses():
    # Five runs that agree exactly, on questions that are either always right or always wrong:
    # the runs' spread is zero, the question-clustered SE is not.
    rows = [(f"q{i}", s, "correct" if i % 2 else "incorrect") for i in range(40) for s in range(5)]
    ivs = {iv.method: iv for iv in {f.name: f for f in figures(_frame(rows))}["accuracy"].intervals}
    assert ivs["runs_2se"].se == 0.0 and ivs["runs_2se"].low == ivs["runs_2se"].high == 0.5
    assert ivs["clustered_t"].se == approx(math.sqrt(40 / 39 * 0.25) / math.sqrt(40))


@pytest.mark.parametrize("correct,n", [(1, 3), (0, 3), (3, 3), (44, 345), (6351, 12032), (0, 1), (1, 1)])
def test_wilson_and_clopper_pearson_match_scipy(correct, n):
    """Issue 20: beside binomial_2se (1 of 3 gives [0.00, 87.77]%), the two intervals labs ask for."""
    from scipy.stats import binomtest

    from audit import stats

    res = binomtest(correct, n)
    for got, method in ((stats.wilson(correct, n), "wilson"), (stats.clopper_pearson(correct, n), "exact")):
        want = res.proportion_ci(0.95, method)
        assert got.low == pytest.approx(want.low, abs=1e-12) and got.high == pytest.approx(want.high, abs=1e-12)
    assert stats.wilson(0, 0) is None and stats.clopper_pearson(0, 0) is None


def test_a_one_run_figure_prints_wilson_and_clopper_pearson_beside_binomial_2se():
    from audit import stats
    from audit.verdicts import Figure
    from audit.views import figure_lines

    f = Figure(name="accuracy", sample=None, denominator="graded", correct=1, total=3, value=1 / 3,
               intervals=[stats.binomial_2se(1, 3)])
    assert figure_lines([f]) == ["accuracy                      33.33%  (1/3)  binomial_2se [0.00, 87.77]; wilson "
                                 "[6.15, 79.23]; clopper_pearson [0.84, 90.57]"]


@pytest.mark.parametrize("n,c,k", [(8, 3, 1), (8, 3, 4), (8, 0, 8), (8, 8, 1), (20, 5, 10), (100, 1, 50)])
def test_pass_at_k_is_the_unbiased_estimator(n, c, k):
    """Chen et al. 2021: 1 - C(n-c, k) / C(n, k); pass@1 is the plain accuracy c/n."""
    assert stats.pass_at_k(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert stats.pass_at_k(n, c, 1) == pytest.approx(c / n)
    with pytest.raises(ValueError):
        stats.pass_at_k(3, 1, 4)


def test_pass_at_k_and_majority_vote_with_the_tie_rule_recorded():
    from audit.summary import MAJORITY_TIE_RULE, sample_figures

    rows = []
    # q1: 2 of 4 correct, answers A A B C (majority A, correct); q2: 1 of 4, answers B C C D (majority C, wrong);
    # q3: a tie between A (correct) and B (wrong): counted wrong; q4: all ungraded (no vote)
    for item, answers, right in (("q1", "AABC", "A"), ("q2", "BCCD", "B"), ("q3", "AABB", "A"), ("q4", "----", "A")):
        for s, a in enumerate(answers):
            verdict = "ungraded" if a == "-" else ("correct" if a == right else "incorrect")
            rows.append({"item_id": item, "sample": s, "verdict": verdict, "answer": None if a == "-" else a})
    figs = {f.name: f for f in sample_figures(pd.DataFrame(rows))}
    assert list(figs) == ["pass@1", "pass@4", "maj@4"]
    c = [2, 1, 2, 0]
    assert figs["pass@1"].value == pytest.approx(sum(x / 4 for x in c) / 4)
    assert figs["pass@4"].value == pytest.approx(3 / 4)
    assert figs["pass@4"].interval.method == "clustered_t"
    assert (figs["maj@4"].value, figs["maj@4"].interval.method) == (1 / 4, "wilson")
    assert MAJORITY_TIE_RULE in figs["maj@4"].note and "1 item tied" in figs["maj@4"].note
    assert sample_figures(pd.DataFrame(rows[:4] + rows[5:])) == []  # unequal samples per item: not estimated
