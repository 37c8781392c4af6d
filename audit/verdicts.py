"""The verdict file: what `audit grade` writes and `audit diff` / `audit release` read.

One JSON document: a header naming every input by hash (responses and items
packages), the extractor and grader by `name@version` and fingerprint, the code
version and every policy; per-item rows under `items`; figures with their
intervals under `summary`. Rows are written one per line so the file diffs well
and stays byte-identical for identical inputs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pydantic
from pydantic import Field

from audit.errors import AuditError, ValidationFailed
from audit.jsonl import dumps
from audit.models import Producer, Record
from audit.schemas import register

VERDICT_FILE_SCHEMA_VERSION = 1

VERDICTS = ("correct", "incorrect", "ungraded")

ROW_STATUSES = (
    "correct",
    "incorrect",
    "no_answer",
    "truncated",
    "random_guess",
    "parse_error_answer",
    "parse_error_reference",
    "timeout",
    "error",
    "excluded",
    "missing",
)
"""Why a row got its verdict. `correct`/`incorrect` are plain gradings; the rest name a
special case, and the verdict says how it counts under the run's policies."""


class ComponentRef(Record):
    """A versioned extractor or grader."""

    name: str
    """Registered name, e.g. `mmlu_pro.official`."""
    version: str
    """Registered version, e.g. `f418b11`."""
    fingerprint: str
    """sha256 of the version's code and config (see `extractors.registry`)."""


class PackageRef(Record):
    """A package used as input, pinned by content digest."""

    package_id: str
    """The package's id from its manifest."""
    digest: str
    """Content digest (sha256 over its files' paths and hashes); `audit reproduce` refuses another."""
    path: str | None = None
    """Where the package was read from, relative to the verdict file's directory when possible."""


class Policies(Record):
    """Every choice that affects a figure, recorded so a grading can be reproduced and diffed."""

    truncation: Literal["wrong", "exclude"] = "wrong"
    """A response cut at the output ceiling (finish_reason `length`) is never credited: counted wrong, or excluded."""
    resampling: Literal["original", "longer-only"] = "original"
    """Which attempt counts when a (item, sample) has several: the original, or `longer-only` (a re-run
    longer than the original's cut replaces it, else the original stays)."""
    no_answer: Literal["wrong", "random-guess"] = "wrong"
    """No extracted answer: counted wrong, or (official MMLU-Pro) replaced by a seeded random guess."""
    guess_seed: int = 12345
    """Seed of the random guess policy (upstream MMLU-Pro's compute_accuracy.py uses 12345)."""
    exclude: list[str] = Field(default_factory=list)
    """Item ids excluded by the caller (in addition to rows the package marks `excluded`)."""
    scope: Literal["items", "responses"] = "items"
    """Which items are in the denominator: every item of the items package (an item without a
    response in some run is a `missing` row), or only items with at least one response row."""


class VerdictRow(Record):
    """One graded (item, sample): the answer read, how, and the verdict."""

    item_id: str
    """The item's id."""
    sample: int
    """Run index (0..K-1)."""
    attempt: int | None
    """Attempt that was graded (0 = original); null when no response exists."""
    answer: str | None
    """Answer the extractor read; null when none."""
    rule: str | None
    """Extractor step that fired (e.g. `L1`, `final_line`), or why none did."""
    span: list[int] | None = None
    """[start, end) character offsets of the evidence in the response."""
    verdict: Literal["correct", "incorrect", "ungraded"]
    """How the row counts: graded correct, graded incorrect, or left out of the graded denominator."""
    status: str
    """Why: one of ROW_STATUSES (e.g. `truncated`, `no_answer`, `timeout`, `excluded`)."""
    reason: str
    """One line explaining the verdict."""
    reference: str | None = None
    """Gold answer the row was graded against (verdict files are private; releases drop it for protected items)."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """Policy details for this row, e.g. the random guess `{seed, draw, guess}` or the attempts considered."""


class Interval(Record):
    """An uncertainty interval around a figure, with the formula that produced it."""

    method: str
    """Formula id: `binomial_2se`, `runs_2se`, `runs_t`, `clustered_t`, `zero_failure_upper`."""
    formula: str
    """The formula in words, e.g. `p ± 2·√(p(1−p)/n)`."""
    low: float
    """Lower end."""
    high: float
    """Upper end."""
    se: float | None = None
    """Standard error used, when the formula has one."""


class Figure(Record):
    """One accuracy figure: a run's or the overall, with one denominator variant."""

    name: str
    """Stable id used by `audit diff`, e.g. `accuracy[sample=0]`, `accuracy`, `accuracy_counting_excluded`."""
    sample: int | None
    """Run index, or null for the overall figure."""
    denominator: Literal["graded", "all"]
    """`graded`: excluded and ungradable rows left out; `all`: every row, those counted wrong."""
    correct: int
    """Rows graded correct."""
    total: int
    """Denominator."""
    value: float
    """correct / total (for the overall figure over K runs: the mean of the runs' values)."""
    intervals: list[Interval] = Field(default_factory=list)
    """Uncertainty intervals, each naming its formula."""


class Summary(Record):
    """Figures per run and overall, and counts by status."""

    samples: int
    """Number of runs K."""
    items: int
    """Number of distinct items."""
    statuses: dict[str, int]
    """Rows per status."""
    figures: list[Figure]
    """Every figure: per run and overall, both denominators."""
    excluded: list[dict[str, Any]] = Field(default_factory=list)
    """Rows left out of the graded denominator, each `{item_id, sample, status, reason}`."""


class RowsFileRef(Record):
    """A Parquet copy of the rows beside the verdict file, for fast reading of large gradings."""

    path: str
    """File name relative to the verdict file's directory."""
    sha256: str
    """sha256 of the Parquet file; readers verify it before trusting it."""
    rows: int
    """Number of rows (equals `len(items)`)."""


class VerdictFile(Record):
    """`results.json`: a complete, reproducible grading of one responses package."""

    schema_version: int = VERDICT_FILE_SCHEMA_VERSION
    """Version of this format; readers refuse newer versions."""
    kind: Literal["verdicts"] = "verdicts"
    """Always `verdicts`."""
    benchmark: str
    """Benchmark spec used, e.g. `mmlu_pro`."""
    responses_package: PackageRef | None
    """The graded responses, pinned by digest (null for verdicts imported from another tool)."""
    items_package: PackageRef | None = None
    """The items (references), when they came from a separate package."""
    extractor: ComponentRef | None
    """Extractor version and fingerprint (null when answers were imported)."""
    grader: ComponentRef | None
    """Grader version and fingerprint."""
    mc_extractor: ComponentRef | None = None
    """For benchmarks mixing answer types (HLE): the extractor used on multiple-choice items."""
    mc_grader: ComponentRef | None = None
    """For benchmarks mixing answer types (HLE): the grader used on multiple-choice items."""
    reference_field: str = "reference"
    """Item field the references were read from (`reference`, or `extra.KEY`)."""
    producer: Producer
    """The audit version (and git commit) that graded."""
    environment: dict[str, str] = Field(default_factory=dict)
    """Versions of libraries the grader depends on (e.g. sympy)."""
    policies: Policies
    """Every policy applied."""
    summary: Summary
    """Figures and counts."""
    rows_file: RowsFileRef | None = None
    """Parquet copy of `items`, written for large gradings."""
    items: list[VerdictRow]
    """One row per (item, sample), sorted by item_id then sample."""


register("verdict_file.v1", VerdictFile)


def dump_verdict_file(vf: VerdictFile) -> str:
    """Serialise: header keys indented, one row per line; identical inputs give identical bytes."""
    data = vf.model_dump(mode="json", by_alias=True)
    rows = data.pop("items")
    head = json.dumps(data, ensure_ascii=False, indent=2, allow_nan=False)
    body = ",\n".join("    " + dumps(r) for r in rows)
    items = "[\n" + body + "\n  ]" if rows else "[]"
    return head[:-2] + ',\n  "items": ' + items + "\n}\n"


def load_verdict_file(path: str | Path) -> VerdictFile:
    """Read and validate a verdict file; errors name the file and field."""
    p = Path(path)
    if not p.is_file():
        raise AuditError("no such file", path=str(p))
    try:
        obj = json.loads(p.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise AuditError(f"not a JSON verdict file: {e}", path=str(p)) from None
    if not isinstance(obj, dict):
        raise AuditError("not a JSON verdict file: expected an object", path=str(p))
    version = obj.get("schema_version")
    if isinstance(version, int) and version > VERDICT_FILE_SCHEMA_VERSION:
        raise AuditError(f"schema_version {version} is newer than this audit reads "
                         f"({VERDICT_FILE_SCHEMA_VERSION}); upgrade audit", path=str(p), field="schema_version")
    try:
        return VerdictFile.model_validate(obj)
    except pydantic.ValidationError as e:
        from audit.packages import _pydantic_problems

        problems = _pydantic_problems(str(p), None, e)
        # Rows are addressed as items.N: report them as rows (1-based).
        fixed = []
        for pr in problems:
            if pr.field and pr.field.startswith("items."):
                idx, _, rest = pr.field[6:].partition(".")
                if idx.isdigit():
                    fixed.append(type(pr)(pr.path, pr.message, int(idx) + 1, rest or None))
                    continue
            fixed.append(pr)
        raise ValidationFailed(str(p), fixed) from None
