"""Benchmarks as specs: which extractor, grader, reference field and policies each uses.

A spec is a small typed object, not logic in configuration. Every part can be
overridden on the command line (`--extractor`, `--grader`, `--policy key=value`)
and the verdict file records what was actually used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from audit.errors import AuditError
from audit.verdicts import Policies


@dataclass(frozen=True)
class GradeConfig:
    """Everything that decides a grading besides the input packages; recorded in the verdict file."""

    benchmark: str
    extractor: str
    """Extractor `name@version` for the benchmark's answer format."""
    grader: str
    """Grader `name@version`."""
    mc_extractor: str | None = None
    """For mixed benchmarks (HLE): extractor for items that have options."""
    mc_grader: str | None = None
    """For mixed benchmarks (HLE): grader for items that have options."""
    reference_field: str = "reference"
    """Item field holding the gold answer: `reference` or `extra.KEY`."""
    policies: Policies = field(default_factory=Policies)


@dataclass(frozen=True)
class BenchmarkSpec:
    """A benchmark's default grading, with a one-line description."""

    description: str
    config: GradeConfig

    @property
    def name(self) -> str:
        return self.config.benchmark


SPECS: dict[str, BenchmarkSpec] = {}


def _add(spec: BenchmarkSpec) -> None:
    SPECS[spec.name] = spec


_add(BenchmarkSpec(
    "MMLU-Pro: the official extraction cascade at TIGER-AI-Lab/MMLU-Pro@f418b11, letter match",
    GradeConfig("mmlu_pro", extractor="mmlu_pro.official@f418b11", grader="choice@1")))
_add(BenchmarkSpec(
    "GPQA Diamond prompted for a final `Answer: X` line; truncated responses never credited",
    GradeConfig("gpqa_diamond", extractor="gpqa.final_line@1", grader="choice@1")))
_add(BenchmarkSpec(
    "MATH-500: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
    "symbolic equivalence",
    GradeConfig("math500", extractor="math.final@1", grader="math.equiv@3")))
_add(BenchmarkSpec(
    "Humanity's Last Exam: strict exact match on the `Exact Answer:` line; letter match for "
    "multiple-choice items",
    GradeConfig("hle", extractor="hle.exact_answer@2", grader="exact.hle@1",
                mc_extractor="hle.choice_answer@2", mc_grader="choice@1")))
_add(BenchmarkSpec(
    "Generic multiple choice: a free-form final answer statement, letter match",
    GradeConfig("choice", extractor="choice.freeform@1", grader="choice@1")))
_add(BenchmarkSpec(
    "Generic math: the final answer (last \\boxed{}, else a final-answer statement, math or number), exact "
    "symbolic equivalence",
    GradeConfig("math", extractor="math.final@1", grader="math.equiv@3")))
_add(BenchmarkSpec(
    "GSM8K: the `#### N` line, else the last number (lm-eval's strict-match, then flexible-extract); the "
    "reference is the value on the solution's `####` line; exact numbers",
    GradeConfig("gsm8k", extractor="gsm8k.answer@1", grader="gsm8k.numeric@1")))
_add(BenchmarkSpec(
    "Generic exact match of the whole (stripped) response",
    GradeConfig("exact", extractor="raw@1", grader="exact.hle@1")))


def get_spec(name: str) -> BenchmarkSpec:
    try:
        return SPECS[name]
    except KeyError:
        raise AuditError(f"unknown benchmark {name!r} (known: {', '.join(sorted(SPECS))})") from None
