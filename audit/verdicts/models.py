"""The verdict file's models: what `audit grade` writes and `audit diff` / `audit release` read.

One JSON document: a header naming every input by hash (responses and items
packages), the extractor and grader by `name@version` and fingerprint, the code
version and every policy; per-item rows under `items`; figures with their
intervals under `summary`. Writing is `audit.verdicts.write`, reading `audit.verdicts.read`.
"""

from __future__ import annotations

import typing
from typing import Any, Literal

import pydantic
from pydantic import ConfigDict, Field

from audit.models import Count, Int64, Producer, Record, Verdict, unsafe_path_reason

VERDICT_FILE_SCHEMA_VERSION = 4
"""Version 2 added `summary.subjects`; 3 every printed figure (`summary.sample_figures`, Wilson and Clopper-Pearson
intervals); 4 the `judge` section of a grading from recorded judge calls (a file without one is still written as
version 3). Older files still load, and reproduce byte for byte."""

VERDICTS: tuple[str, ...] = typing.get_args(Verdict)

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
    "bad_input",
    "judge_error",
)
"""Why a row got its verdict. `correct`/`incorrect` are plain gradings; the rest name a
special case, and the verdict says how it counts under the run's policies."""


CREDITED_STATUSES = frozenset(("correct", "random_guess"))
"""The only statuses under which a row may be credited: a row `no_answer`, `truncated` or `excluded` is never
`correct` (a false credit is worse than a false rejection)."""


def row_contradiction(verdict: str, status: str, answer: str | None) -> str | None:
    """Why a row's verdict and status contradict one another, or None: a credited row whose status says it cannot
    be, a `correct`/`incorrect` status under another verdict. (`answer` is for rules that need it.)"""
    if verdict == "correct" and status not in CREDITED_STATUSES:
        return f"verdict correct with status {status}: a row {status} is never credited"
    if status in ("correct", "incorrect") and verdict != status:
        return f"status {status} with verdict {verdict}"
    return None


class ComponentRef(Record):
    """A versioned extractor or grader."""

    name: str
    """Registered name, e.g. `mmlu_pro.official`."""
    version: str
    """Registered version, e.g. `f418b11`."""
    fingerprint: str
    """sha256 of the version's code and config (see `audit.registry`)."""

    @property
    def key(self) -> str:
        """`name@version`."""
        return f"{self.name}@{self.version}"


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
    no_answer: Literal["wrong", "random-guess", "upstream-guess@964a136"] = "wrong"
    """No extracted answer: counted wrong; or replaced by a random guess among the item's options, drawn either by
    audit's rule (`random-guess`: a stream seeded by seed, item id and sample, so no draw depends on the order rows
    are read in) or by upstream MMLU-Pro's (`upstream-guess@964a136`: `random.seed(seed)` right before each draw,
    then `random.randint(0, options - 1)`, as evaluate_from_local.py did at TIGER-AI-Lab/MMLU-Pro@964a136, the
    commit of the public result zips: every unanswered item of one option count gets the same letter, G of ten)."""
    guess_seed: Int64 = 12345
    """Seed of the random guess policies (upstream MMLU-Pro uses 12345)."""
    exclude: list[str] = Field(default_factory=list)
    """Item ids excluded by the caller (in addition to rows the package marks `excluded`)."""
    scope: Literal["items", "responses"] = "items"
    """Which items are in the denominator: every item of the items package (an item without a
    response in some run is a `missing` row), or only items with at least one response row."""
    at_budget: Literal["count", "truncated"] = "count"
    """A response that used exactly `max_tokens` and said `stop` (see ResponseRow.at_budget): graded as any
    other (`count`, its row's detail says `at_budget`), or taken as cut at the ceiling (`truncated`, under
    the truncation policy). Written in the file only when not `count`."""
    judge_error: Literal["wrong", "exclude"] = "wrong"
    """A judge call that failed, or whose reply does not parse under the rule (status `judge_error`): counted wrong
    (HLE's script divides by every question), or left out of the graded denominator. Written in the file only
    when not `wrong`."""


class VerdictRow(Record):
    """One graded (item, sample): the answer read, how, and the verdict."""

    item_id: str
    """The item's id."""
    sample: Count
    """Run index (0..K-1)."""
    attempt: Count | None
    """Attempt that was graded (0 = original); null when no response exists."""
    response_sha256: str | None = None
    """sha256 of the graded response text (UTF-8), so a diff can tell a changed text from a changed reading."""
    answer: str | None
    """Answer the extractor read; null when none."""
    rule: str | None
    """Extractor step that fired (e.g. `L1`, `final_line`), or why none did."""
    span: list[Count] | None = None
    """[start, end) character offsets of the evidence in the response."""
    verdict: Verdict
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
    sample: Count | None
    """Run index, or null for the overall figure."""
    denominator: Literal["graded", "all"]
    """`graded`: excluded and ungradable rows left out; `all`: every row, those counted wrong."""
    correct: Count
    """Rows graded correct."""
    total: Count
    """Denominator."""
    value: float
    """correct / total, pooled over the runs for the overall figure (0 when total is 0). The `runs_*`
    intervals are centred on the mean of the runs' values and `clustered_t` on the mean of per-question
    means; with equal denominators all three centres are this value."""
    intervals: list[Interval] = Field(default_factory=list)
    """Uncertainty intervals, each naming its formula."""


class SummaryV1(Record):
    """Figures per run and overall, and counts by status."""

    # The committed schemas name it `Summary`: the title comes from the config, the `$defs` key from the
    # qualified name (subclasses set their own title; a version's schema never changes).
    __qualname__ = "Summary"
    model_config = ConfigDict(title="Summary")

    samples: Count
    """Number of runs K."""
    items: Count
    """Number of distinct items."""
    statuses: dict[str, Count]
    """Rows per status."""
    figures: list[Figure]
    """Every figure: per run and overall, both denominators."""
    excluded: list[dict[str, Any]] = Field(default_factory=list)
    """Rows left out of the graded denominator, each `{item_id, sample, status, reason}`."""

    @property
    def bad_input(self) -> int:
        """Rows with status `bad_input` (a source record that disagrees with itself, kept ungraded)."""
        return self.statuses.get("bad_input", 0)


class SubjectSummary(Record):
    """One subject's items and figures (e.g. an MMLU-Pro category)."""

    subject: str | None
    """The items' `subject` (null: items without one, when others have one)."""
    items: list[str]
    """Its item ids, in natural order (`q2` before `q10`)."""
    figures: list[Figure]
    """Its overall figures (all runs pooled), both denominators, with intervals."""


class SummaryV2(SummaryV1):
    """Figures per run and overall, per subject, and counts by status."""

    model_config = ConfigDict(title="SummaryV2")

    subjects: list[SubjectSummary] | None = None
    """Per subject, in natural order of the names (items without a subject last): empty when no item
    names one; null in schema version 1 files, which did not record subjects."""


class SampleFigure(Record):
    """pass@k or maj@k over the items of a grading with several samples per item."""

    name: str
    """`pass@1`, `pass@K` or `maj@K` (K samples per item)."""
    value: float
    """The figure, a fraction."""
    items: Count
    """Items it averages over."""
    interval: Interval | None
    """Its named interval: `clustered_t` over the per-item values for pass@k, `wilson` over items for maj@k."""
    note: str = ""
    """What else it needs said (maj@k: the tie rule and how many items tied)."""


class SummaryV3(SummaryV2):
    """Every figure `audit grade` and `audit show` print: per run, overall and per subject, each overall and
    per-run figure with the Wilson and Clopper–Pearson intervals beside `binomial_2se`, and pass@k and maj@k."""

    model_config = ConfigDict(title="SummaryV3")

    sample_figures: list[SampleFigure] | None = None
    """pass@1, pass@K and maj@K (several samples per item, each item with K); empty otherwise; null in files of
    schema versions 1 and 2, which stored neither these nor the Wilson and Clopper–Pearson intervals."""


class RowsFileRef(Record):
    """A Parquet copy of the rows beside the verdict file, for fast reading of large gradings."""

    path: str
    """File name in the verdict file's directory (no folder: a sidecar never lives elsewhere). `audit grade`
    names it after its content (`NAME.rows-SHA16.parquet`), so a new pair never overwrites the old one."""
    sha256: str
    """sha256 of the Parquet file; readers verify it before trusting it."""
    rows: Count
    """Number of rows (equals `len(items)`)."""
    json_rows_sha256: str | None = None
    """sha256 of the verdict file's own rows text (from the `[` after `"items": ` to the end of the
    file), so a reader that takes the Parquet copy can tell when the JSON rows were edited."""

    @pydantic.field_validator("path")
    @classmethod
    def _a_file_name(cls, v: str) -> str:
        if "/" in v or unsafe_path_reason(v):
            raise ValueError("must be a file name in the verdict file's directory")
        return v


class VerdictFileV1(Record):
    """`results.json`: a complete, reproducible grading of one responses package."""

    # The committed schema names it `VerdictFile` (see SummaryV1).
    __qualname__ = "VerdictFile"
    model_config = ConfigDict(title="VerdictFile")

    schema_version: int = Field(default=1, ge=1, le=1)
    """Version of this format; readers refuse versions they do not know."""
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
    summary: SummaryV1
    """Figures and counts."""
    rows_file: RowsFileRef | None = None
    """Parquet copy of `items`, written for large gradings."""
    items: list[VerdictRow]
    """One row per (item, sample), sorted by item_id then sample."""


class VerdictFileV2(VerdictFileV1):
    """`results.json`: a complete, reproducible grading of one responses package, with per-subject figures."""

    model_config = ConfigDict(title="VerdictFileV2")

    schema_version: int = Field(default=2, ge=1, le=2)
    """Version of this format (2 added `summary.subjects`); readers refuse newer versions. A version-1 file
    loads with `summary.subjects` null and is written back without it."""
    summary: SummaryV2
    """Figures and counts, overall, per run and per subject."""


class VerdictFileV3(VerdictFileV2):
    """`results.json`: a complete, reproducible grading of one responses package, with every printed figure."""

    model_config = ConfigDict(title="VerdictFileV3")

    schema_version: int = Field(default=3, ge=1, le=3)
    """Version of this format (2 added `summary.subjects`; 3 the Wilson and Clopper–Pearson intervals of each
    overall and per-run figure, and `summary.sample_figures`); readers refuse newer versions. Older files load
    with what they lack null or absent, and are written back without it."""
    summary: SummaryV3
    """Figures and counts, overall, per run and per subject, and pass@k and maj@k."""


class JudgeGrading(Record):
    """How a grading from recorded judge calls was made: the calls, the template and rule, and the exact-match
    grading of the same responses that it replaces (its attempts, truncation and exclusions still apply)."""

    calls_package: PackageRef
    """The judge-calls package read, pinned by digest (no judge is called when grading or reproducing)."""
    template: ComponentRef | None
    """The judge template the calls were made with (null for imported calls of an unregistered template)."""
    rule: ComponentRef
    """The parse rule that re-read every recorded reply for this grading."""
    raw: Literal["required", "recorded-parse"] = "required"
    """`required`: every call must have its raw reply recorded; `recorded-parse`: a call without one (HLE's judged
    JSON) counts by the parsed fields its source kept."""
    repeat: Count = 0
    """Which repeat of each call decides the verdict."""
    exact_extractor: ComponentRef | None
    """The benchmark spec's extractor: the exact-match grading the judged rows replace."""
    exact_grader: ComponentRef | None
    """The benchmark spec's grader."""
    exact_mc_extractor: ComponentRef | None = None
    """The spec's multiple-choice extractor, when it has one."""
    exact_mc_grader: ComponentRef | None = None
    """The spec's multiple-choice grader, when it has one."""
    exact_match: Figure | None = None
    """The exact-match figure of the same rows (all rows in the denominator), printed beside the judged one."""


class VerdictFileV4(VerdictFileV3):
    """`results.json`, with the `judge` section of a grading from recorded judge calls."""

    model_config = ConfigDict(title="VerdictFileV4")

    schema_version: int = Field(default=3, ge=1, le=VERDICT_FILE_SCHEMA_VERSION)
    """Version of this format: 4 when `judge` is present, else 3 (or older: files written before)."""
    judge: JudgeGrading | None = None
    """The judge calls the verdicts come from; then `extractor` names the parse rule and `grader` the judge
    template. Absent from files graded without a judge."""

    @pydantic.model_validator(mode="after")
    def _version_says_judge(self) -> VerdictFileV4:
        if (self.judge is not None) != (self.schema_version == 4):
            raise ValueError("schema_version is 4 exactly when the file has a `judge` section")
        return self


# What the library builds and reads: version 4 (it reads version-1 to -3 files too).
Summary: typing.TypeAlias = SummaryV3
"""The current summary (schema version 3 and 4)."""
VerdictFile: typing.TypeAlias = VerdictFileV4
"""The current verdict file (schema version 4; written as 3 without a judge section)."""

VERDICT_ROW_FIELDS = tuple(VerdictRow.model_fields)
"""Key order of a row in the file (the model's field order)."""

AT_BUDGET_NOTE = "; at budget: used all max_tokens={} and said stop"
"""Ends the reason of a row graded although its reply used exactly max_tokens and said stop (`audit.grade`
writes it, `audit.views.at_budget_lines` counts it)."""
