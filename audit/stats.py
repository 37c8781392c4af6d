"""Accuracy figures and their uncertainty, each interval named by its formula.

Two formulas that labs already quote, by name:
- `binomial_2se` (K = 1): p ± 2·√(p(1−p)/n).
- `runs_2se` (K > 1 independent runs): mean ± 2·sd/√K, sd over the K run accuracies.
Two that account for what those miss:
- `runs_t`: the same with the t quantile for K − 1 degrees of freedom (small K).
- `clustered_t`: question-clustered standard error (average the K samples of each
  question, then sd/√n over questions; Miller 2024, "Adding Error Bars to Evals",
  arXiv:2411.00640), with the t quantile for n − 1 degrees of freedom.
Two exact-coverage intervals for one run's n rows, beside `binomial_2se` (which collapses at 0 and n and
overshoots at small n: 1 of 3 gives [0, 87.77]%):
- `wilson`: the Wilson score interval (Wilson 1927), (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n).
- `clopper_pearson`: the exact binomial interval (Clopper & Pearson 1934), from beta quantiles.
And `zero_failure_upper`: the exact one-sided 95% bound when a run has no failures
(or no successes), where the 2-SE interval collapses to a point.

For several samples per item: `pass_at_k`, the unbiased estimator of Chen et al. 2021 ("Evaluating Large
Language Models Trained on Code", arXiv:2107.03374): per item 1 − C(n−c, k)/C(n, k), averaged over items.

Paired comparison for two gradings of the same responses: `mcnemar_exact`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from audit.verdicts.models import Interval


def _scipy_special() -> Any:
    # Imported where a quantile is computed: kind modules import this module, and `audit trace --force` or any
    # package check must not pay scipy's import (tests/test_public_api.py holds that).
    from scipy import special

    return special


LEVEL = 0.95


def _t_quantile(q: float, df: int) -> float:
    # scipy.stats.t.ppf(q, df) computes exactly this (stdtrit, then * 1 + 0); importing
    # scipy.special alone takes a third of the time of scipy.stats, on every `audit grade`.
    return float(_scipy_special().stdtrit(df, q))


def _clip(x: float) -> float:
    return min(1.0, max(0.0, x))


def binomial_2se(correct: int, n: int) -> Interval | None:
    """p ± 2·√(p(1−p)/n): the single-run interval most reports quote."""
    if n <= 0:
        return None
    p = correct / n
    se = math.sqrt(p * (1 - p) / n)
    return Interval(method="binomial_2se", formula="p ± 2·√(p(1−p)/n)", low=_clip(p - 2 * se),
                    high=_clip(p + 2 * se), se=se)


def wilson(correct: int, n: int, level: float = LEVEL) -> Interval | None:
    """The Wilson score interval for `correct` of `n` (two-sided, `level`)."""
    if n <= 0:
        return None
    p = correct / n
    z = float(_scipy_special().ndtri(0.5 + level / 2))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Interval(method="wilson", formula=f"Wilson score interval, {level:g} two-sided",
                    low=_clip(centre - half), high=_clip(centre + half))


def clopper_pearson(correct: int, n: int, level: float = LEVEL) -> Interval | None:
    """The exact (Clopper–Pearson) interval for `correct` of `n`: beta quantiles, two-sided `level`."""
    if n <= 0:
        return None
    a = (1 - level) / 2
    low = 0.0 if correct == 0 else float(_scipy_special().betaincinv(correct, n - correct + 1, a))
    high = 1.0 if correct == n else float(_scipy_special().betaincinv(correct + 1, n - correct, 1 - a))
    return Interval(method="clopper_pearson", formula=f"exact binomial (Clopper–Pearson), {level:g} two-sided",
                    low=low, high=high)


def runs_2se(values: Sequence[float]) -> Interval | None:
    """mean ± 2·sd/√K over K independent runs (sd with K − 1 in the denominator)."""
    k = len(values)
    if k < 2:
        return None
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1)) / math.sqrt(k)
    return Interval(method="runs_2se", formula="mean ± 2·sd/√K over K runs", low=_clip(mean - 2 * se),
                    high=_clip(mean + 2 * se), se=se)


def runs_t(values: Sequence[float], level: float = LEVEL) -> Interval | None:
    """mean ± t(K−1)·sd/√K: the runs interval with the t quantile, right for small K."""
    k = len(values)
    if k < 2:
        return None
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1)) / math.sqrt(k)
    t = _t_quantile(0.5 + level / 2, k - 1)
    return Interval(method="runs_t", formula=f"mean ± t{{{level:g}, K−1}}·sd/√K over K runs",
                    low=_clip(mean - t * se), high=_clip(mean + t * se), se=se)


def clustered_t(question_means: Sequence[float], level: float = LEVEL) -> Interval | None:
    """Question-clustered SE: sd of per-question mean scores / √n, with the t(n−1) quantile."""
    n = len(question_means)
    if n < 2:
        return None
    arr = np.asarray(question_means, dtype=float)
    mean = float(arr.mean())
    se = float(arr.std(ddof=1)) / math.sqrt(n)
    t = _t_quantile(0.5 + level / 2, n - 1)
    return Interval(method="clustered_t",
                    formula=f"mean ± t{{{level:g}, n−1}}·sd(question means)/√n (Miller 2024)",
                    low=_clip(mean - t * se), high=_clip(mean + t * se), se=se)


def zero_failure_upper(correct: int, n: int, level: float = LEVEL) -> Interval | None:
    """Exact one-sided bound when all n are correct (or all wrong): failure rate ≤ 1 − (1−level)^(1/n)."""
    if n <= 0 or 0 < correct < n:
        return None
    bound = 1 - (1 - level) ** (1 / n)
    if correct == n:
        return Interval(method="zero_failure_upper",
                        formula=f"no failures in n: accuracy ≥ (1−{level:g})^(1/n), one-sided",
                        low=1 - bound, high=1.0)
    return Interval(method="zero_failure_upper",
                    formula=f"no successes in n: accuracy ≤ 1−(1−{level:g})^(1/n), one-sided",
                    low=0.0, high=bound)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one item with `c` correct of `n` samples: 1 − C(n−c, k)/C(n, k) (Chen et al. 2021),
    computed as a running product (no huge binomials)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def mcnemar_exact(flips_to_correct: int, flips_to_incorrect: int) -> float:
    """Two-sided exact McNemar p-value for paired verdicts: binomial test of b vs c at 1/2."""
    from scipy import stats as _st  # only `audit diff` needs it

    n = flips_to_correct + flips_to_incorrect
    if n == 0:
        return 1.0
    return float(_st.binomtest(flips_to_correct, n, 0.5).pvalue)
