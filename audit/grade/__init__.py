"""Regrade a responses package into a verdict file: the library's main job.

The flow, in three streaming passes over a validated package:
1. read each row's metadata (no text) and choose the attempt to grade per
   (item, sample) under the re-sampling policy;
2. extract answers from the chosen rows only, keeping answers, not texts;
3. grade the answers and apply the truncation, no-answer and exclusion
   policies, so each row ends `correct`, `incorrect` or `ungraded` with a status.
Rows for items that have no response in a run are added as `missing`, so an
item can never vanish from the denominator unnoticed.

The package, split by job as `audit.verdicts` is:

    decision      the attempt graded per (item, sample) and how each row ends (`decide` gives a `Decision`)
    passes        `grade_package`: the passes over the package, the `Grading` they give
    fit           `fit_check`: does the spec's extractor fit the responses' format?
    reproduction  `reproduce`: re-grade from the recorded packages and compare
"""

from __future__ import annotations

from audit.grade.decision import (
    INCOMPLETE_FINISH_REASONS,
    AttemptMeta,
    Decision,
    ItemInfo,
    alphabet_too_short,
    choose_attempt,
    decide,
    possibly_cut,
)
from audit.grade.decision import seeded_guess as _guess
from audit.grade.fit import FIT_SAMPLE, FIT_THRESHOLD, FitCheck, fit_check
from audit.grade.passes import (
    ENVIRONMENT_PACKAGES,
    PARQUET_MIN_ROWS,
    Grading,
    NoItems,
    PackageSource,
    _grade_all,
    environment,
    grade_package,
    load_items,
)
from audit.grade.reproduction import NoPath, Reproduction, reproduce
from audit.verdicts.models import AT_BUDGET_NOTE

__all__ = [
    "AT_BUDGET_NOTE", "ENVIRONMENT_PACKAGES", "FIT_SAMPLE", "FIT_THRESHOLD", "INCOMPLETE_FINISH_REASONS",
    "PARQUET_MIN_ROWS", "AttemptMeta", "Decision", "FitCheck", "Grading", "ItemInfo", "NoItems", "NoPath",
    "PackageSource", "Reproduction", "_grade_all", "_guess", "alphabet_too_short", "choose_attempt", "decide",
    "environment", "fit_check", "grade_package", "load_items", "possibly_cut", "reproduce",
]
