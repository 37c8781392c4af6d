"""Figures of judged gradings: HLE's accuracy, intervals and calibration error, and a judge's flip rate.

HLE (centerforaisafety/hle `hle_eval/run_judge_results.py` at a59048963171c5b9cfe89fbcb97ddde39b540897,
`dump_metrics` and `calib_err`):

- accuracy is `round(100 * correct / n, 2)` with n all questions of the dataset, so a question the judge never
  answered counts wrong; audit prints it beside the accuracy over the judged questions;
- the interval is Wald's, `round(1.96 * sqrt(acc * (100 - acc) / n), 2)` on the rounded percentage; audit prints
  Wilson's beside it;
- the calibration error is an RMS over bins of 100 predictions sorted by confidence (numpy's default, unstable
  argsort), the last bin stretched to the end, and then skipped by the loop (`range(len(bins) - 1)`), computed
  over the judged predictions only, rounded to 2 places and multiplied by 100. Below 100 predictions upstream
  fails (`bins[-1]` of an empty list): audit refuses in one line. The corrected figure keeps every bin (a stable
  sort; fewer than 100 predictions are one bin) and is not rounded before scaling.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from audit.errors import AuditError


def upstream_calibration_error(confidence: Sequence[float], correct: Sequence[bool], beta: int = 100) -> float:
    """HLE's `calib_err(p='2', beta=100)` then `100 * round(x, 2)`, as upstream computes it (its top bin
    skipped); AuditError below `beta` predictions, where upstream fails."""
    n = len(confidence)
    if n < beta:
        raise AuditError(f"upstream's calibration error needs at least {beta} judged predictions, there are {n} "
                         f"(its calib_err fails below that)")
    conf = np.asarray(confidence, dtype=float) / 100
    corr = np.asarray(correct, dtype=bool)
    idx = np.argsort(conf)
    conf, corr = conf[idx], corr[idx]
    bins = [[i * beta, (i + 1) * beta] for i in range(n // beta)]
    bins[-1] = [bins[-1][0], n]
    cerr = 0.0
    for lo, hi in bins[:-1]:
        diff = abs(float(np.nanmean(conf[lo:hi])) - float(np.nanmean(corr[lo:hi])))
        cerr += (hi - lo) / n * diff * diff
    return 100 * round(math.sqrt(cerr), 2)


def calibration_error(confidence: Sequence[float], correct: Sequence[bool], beta: int = 100) -> float | None:
    """The RMS calibration error over every bin of `beta` (stable order by confidence; the last bin holds the
    remainder; fewer than `beta` predictions are one bin), x 100, unrounded; None without predictions."""
    n = len(confidence)
    if n == 0:
        return None
    conf = np.asarray(confidence, dtype=float) / 100
    corr = np.asarray(correct, dtype=float)
    idx = np.argsort(conf, kind="stable")
    conf, corr = conf[idx], corr[idx]
    edges = [i * beta for i in range(max(1, n // beta))] + [n]
    cerr = 0.0
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        diff = float(conf[lo:hi].mean() - corr[lo:hi].mean())
        cerr += (hi - lo) / n * diff * diff
    return 100 * math.sqrt(cerr)


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson's score interval for correct/n, in percent."""
    if n == 0:
        return (math.nan, math.nan)
    p = correct / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (100 * (centre - half), 100 * (centre + half))


@dataclass(frozen=True)
class HLEFigures:
    """HLE's judged figures, upstream's and audit's side by side."""

    questions: int
    """Every question of the items (upstream's n)."""
    judged: int
    """Questions with a parsed judgment."""
    judge_errors: int
    """Questions whose judge call failed or did not parse."""
    correct: int
    accuracy_all: float
    """Upstream's accuracy: round(100 * correct / questions, 2) (a judge error counts wrong)."""
    wald_half_width: float
    """Upstream's interval half-width: round(1.96 * sqrt(acc (100 - acc) / n), 2)."""
    wilson_all: tuple[float, float]
    accuracy_judged: float
    """100 * correct / judged (judge errors left out)."""
    wilson_judged: tuple[float, float]
    calibration_upstream: float | None
    """Upstream's calibration error (its top bin skipped); None where upstream fails (below 100)."""
    calibration_upstream_refused: str | None
    """Why upstream's figure was not computed."""
    calibration_corrected: float | None
    """Every bin kept, stable order, unrounded."""
    exact_match: float | None = None
    """The exact-match figure of the same responses (audit's `hle` spec), printed beside the judged one."""


def hle_figures(judged: Iterable[tuple[bool | None, int | None]], questions: int,
                exact_match: float | None = None) -> HLEFigures:
    """Figures from one (correct, confidence) per judged question (correct None: a judge error)."""
    conf: list[float] = []
    corr: list[bool] = []
    errors = 0
    for ok, c in judged:
        if ok is None:
            errors += 1
            continue
        corr.append(ok)
        conf.append(100.0 if c is None else float(c))
    n_ok = sum(corr)
    acc = round(100 * n_ok / questions, 2) if questions else math.nan
    half = round(1.96 * math.sqrt(acc * (100 - acc) / questions), 2) if questions else math.nan
    refused = None
    try:
        up: float | None = upstream_calibration_error(conf, corr)
    except AuditError as e:
        up, refused = None, str(e)
    return HLEFigures(
        questions=questions, judged=len(corr), judge_errors=errors, correct=n_ok, accuracy_all=acc,
        wald_half_width=half, wilson_all=wilson(n_ok, questions),
        accuracy_judged=100 * n_ok / len(corr) if corr else math.nan, wilson_judged=wilson(n_ok, len(corr)),
        calibration_upstream=up, calibration_upstream_refused=refused,
        calibration_corrected=calibration_error(conf, corr), exact_match=exact_match)


def flip_text(fr: FlipRates, changed: str) -> str:
    """`N of M <changed> (P%)`, or that none was measured where no response has two calls without a judge error
    (a rate of 0 of 0 is no rate)."""
    if not fr.compared:
        return "none measured: no response has two calls without a judge error"
    return f"{fr.flipped:,} of {fr.compared:,} {changed} ({100 * fr.rate:.1f}%)"


def hle_lines(f: HLEFigures) -> list[str]:
    """What `audit show` and `audit grade` print of HLE's figures."""
    lines = [f"judged     accuracy {f.accuracy_all:.2f}% +/- {f.wald_half_width:.2f} (upstream: Wald, n = "
             f"{f.questions:,} questions, {f.judge_errors:,} judge errors counted wrong); Wilson "
             f"[{f.wilson_all[0]:.2f}, {f.wilson_all[1]:.2f}]",
             f"           over the {f.judged:,} judged: {f.accuracy_judged:.2f}%, Wilson "
             f"[{f.wilson_judged[0]:.2f}, {f.wilson_judged[1]:.2f}]" if f.judged else
             "           over the judged: none (every call is a judge error)"]
    if f.calibration_upstream is not None:
        lines.append(f"calibration error {f.calibration_upstream:.1f} as upstream computes it (its top bin "
                     f"skipped); corrected, every bin: {f.calibration_corrected:.2f}")
    else:
        corr = "n/a" if f.calibration_corrected is None else f"{f.calibration_corrected:.2f}"
        lines.append(f"calibration error: upstream's refused ({f.calibration_upstream_refused}); corrected, every "
                     f"bin: {corr}")
    if f.exact_match is not None:
        lines.append(f"exact match {f.exact_match:.2f}% (audit's hle spec, no judge) beside the judged "
                     f"{f.accuracy_all:.2f}%")
    return lines


@dataclass(frozen=True)
class FlipRates:
    """How often a judge disagrees with itself across repeats of the same call."""

    compared: int
    """Responses judged at least twice (judge errors left out)."""
    flipped: int
    """Of those, responses whose repeats did not all agree."""
    per_item: dict[str, float] = field(default_factory=dict)
    """Per item: flipped / compared over its responses."""

    @property
    def rate(self) -> float:
        return self.flipped / self.compared if self.compared else math.nan


def flip_rates(verdicts: Iterable[tuple[str, int, int, str]]) -> FlipRates:
    """Flip rates from (item_id, sample, attempt, status) of every call; only correct/incorrect count."""
    by_response: dict[tuple[str, int, int], set[str]] = defaultdict(set)
    counts: dict[tuple[str, int, int], int] = defaultdict(int)
    for item, sample, attempt, status in verdicts:
        if status in ("correct", "incorrect"):
            by_response[(item, sample, attempt)].add(status)
            counts[(item, sample, attempt)] += 1
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    compared = flipped = 0
    for key, seen in by_response.items():
        if counts[key] < 2:
            continue
        compared += 1
        flip = len(seen) > 1
        flipped += flip
        per[key[0]][0] += flip
        per[key[0]][1] += 1
    return FlipRates(compared, flipped, {k: v[0] / v[1] for k, v in sorted(per.items())})
