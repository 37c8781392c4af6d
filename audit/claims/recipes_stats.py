"""Statistics recipes: error bars by formula, denominator sensitivity, paired duration ratios, arithmetic.

Error bars reuse `audit.stats`: `stats.binomial_2se` and `stats.runs_2se` are the two
formulas labs quote; `stats.clustered_t` is the question-clustered one (Miller 2024).
`stats.paired_log_ratio` is the per-task paired ratio of agentic runs: the geometric
mean of per-task ratios with a t-interval on the logs. `arithmetic` computes a claim
from other claims' recomputed values.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from audit import stats
from audit.claims.ledger import evaluate, parse_expression
from audit.claims.recipes_grade import GradeSource, Rows, graded_rows, recorded_rows
from audit.claims.registry import Context, FileId, PackageId, RecipeArgs, RecipeFailed, Result, Series, recipe
from audit.claims.units import ANY
from audit.models import unsafe_path_reason
from audit.verdicts.models import Interval


class EitherSource(RecipeArgs):
    """A fresh grading of `package` (with `benchmark`), or the rows of the verdict file `verdicts`."""

    package: PackageId | None = None
    """Responses package to grade (give `benchmark` too)."""
    benchmark: str | None = None
    """Benchmark spec for grading `package`."""
    items: PackageId | None = None
    """Package holding the item rows, when the responses package has none."""
    extractor: str | None = None
    """Override the spec's extractor."""
    grader: str | None = None
    """Override the spec's grader."""
    reference_field: str | None = None
    """Item field holding the gold answer."""
    policy: dict[str, str | int | list[str]] = Field(default_factory=dict)
    """Policy overrides (see `audit grade --policy`)."""
    verdicts: FileId | None = None
    """A verdict file (or recorded verdicts) instead of a fresh grading."""

    @model_validator(mode="after")
    def _one_source(self) -> EitherSource:
        if (self.package is None) == (self.verdicts is None):
            raise ValueError("give exactly one of package (with benchmark) or verdicts")
        if self.package is not None:
            if self.benchmark is None:
                raise ValueError("package needs benchmark")
            self.grade_source()  # validates benchmark, components and policies
        elif any(v for v in (self.benchmark, self.items, self.extractor, self.grader, self.reference_field,
                             self.policy)):
            raise ValueError("benchmark, items, extractor, grader, reference_field and policy go with package")
        return self

    def grade_source(self) -> GradeSource:
        assert self.package is not None and self.benchmark is not None  # checked by _one_source
        return GradeSource(package=self.package, benchmark=self.benchmark, items=self.items,
                           extractor=self.extractor, grader=self.grader, reference_field=self.reference_field,
                           policy=self.policy)

    def rows(self, ctx: Context) -> Rows:
        if self.verdicts is not None:
            return recorded_rows(ctx, self.verdicts)
        return graded_rows(self.grade_source(), ctx)


# --------------------------------------------------------------------------- error bars

Part = Literal["half_width", "value", "low", "high", "se"]


class ErrorBarArgs(EitherSource):
    """Arguments of the error-bar recipes."""

    figure: Literal["accuracy", "accuracy_all"] = "accuracy"
    """`accuracy`: ungraded rows left out; `accuracy_all`: counted wrong."""
    part: Part = "half_width"
    """What the claim states: the error bar's half-width (±), the centre, an end, or the standard error."""


class BinomialArgs(ErrorBarArgs):
    """Arguments of stats.binomial_2se."""

    sample: int | None = Field(default=None, ge=0)
    """One run; unset pools every row of every run (as a single-run report would)."""


def _scope(rows: Rows, figure: str, sample: int | None = None) -> Any:
    f = rows.frame
    if sample is not None:
        f = f[f["sample"] == sample]
        if f.empty:
            raise RecipeFailed(f"no rows in run {sample}")
    c = (f["verdict"] == "correct").astype("int64")
    d = (f["verdict"] != "ungraded").astype("int64") if figure == "accuracy" else np.ones(len(f), "int64")
    import pandas as pd

    return pd.DataFrame({"item_id": f["item_id"].to_numpy(), "sample": f["sample"].to_numpy(), "c": c.to_numpy(),
                         "d": np.asarray(d)})


def _bar(center: float, iv: Interval | None, mult: float, part: str, what: str, rows: Rows, n: int,
         n_label: str) -> Result:
    if iv is None or iv.se is None:
        raise RecipeFailed(f"{what}: not enough data for this interval")
    half = mult * iv.se
    values = {"half_width": half, "value": center, "low": iv.low, "high": iv.high, "se": iv.se}
    basis = (f"{what}: {100 * center:.2f}% ± {100 * half:.2f} points (se {iv.se:.4f}, n={n} {n_label}); "
             f"{rows.basis}")
    return Result(value=values[part], unit="fraction", interval=iv if part == "value" else None, n=n,
                  n_label=n_label, basis=basis, grading=rows.grading, figure=(center, iv))


@recipe("stats.binomial_2se", unit="fraction")
def binomial_2se(args: BinomialArgs, ctx: Context) -> Result:
    """The single-run error bar labs quote: p ± 2·√(p(1−p)/n)."""
    rows = args.rows(ctx)
    df = _scope(rows, args.figure, args.sample)
    c, n = int(df["c"].sum()), int(df["d"].sum())
    if n == 0:
        raise RecipeFailed("the denominator is empty")
    return _bar(c / n, stats.binomial_2se(c, n), 2.0, args.part, f"binomial_2se over {c}/{n}", rows, n, "rows")


def _run_values(df: Any) -> list[float]:
    per = df.groupby("sample", sort=True)[["c", "d"]].sum()
    return [float(r.c / r.d) for r in per.itertuples() if r.d]


def _runs(args: ErrorBarArgs, ctx: Context, method: str, formula: Any, multiplier: Any) -> Result:
    """The K-run error bar `method` (`formula`: `stats.runs_2se` or `stats.runs_t`) over the runs' accuracies,
    its half-width `multiplier(K)`·se."""
    rows = args.rows(ctx)
    values = _run_values(_scope(rows, args.figure))
    k = len(values)
    if k < 2:
        raise RecipeFailed(f"{method} needs at least 2 runs; the grading has {k}")
    return _bar(float(np.mean(values)), formula(values), multiplier(k), args.part, f"{method} over {k} runs", rows,
                k, "runs")


@recipe("stats.runs_2se", unit="fraction")
def runs_2se(args: ErrorBarArgs, ctx: Context) -> Result:
    """The K-run error bar labs quote: mean ± 2·sd/√K over the runs' accuracies."""
    return _runs(args, ctx, "runs_2se", stats.runs_2se, lambda k: 2.0)


@recipe("stats.runs_t", unit="fraction")
def runs_t(args: ErrorBarArgs, ctx: Context) -> Result:
    """The K-run error bar with the t quantile (right for small K): mean ± t(K−1)·sd/√K."""
    return _runs(args, ctx, "runs_t", stats.runs_t, lambda k: stats._t_quantile(0.975, k - 1))


@recipe("stats.clustered_t", unit="fraction")
def clustered_t(args: ErrorBarArgs, ctx: Context) -> Result:
    """Question-clustered error bar (Miller 2024): mean of per-question means ± t(n−1)·sd/√n."""
    rows = args.rows(ctx)
    df = _scope(rows, args.figure)
    q = df.groupby("item_id", sort=True)[["c", "d"]].sum()
    q = q[q["d"] > 0]
    means = (q["c"] / q["d"]).tolist()
    if len(means) < 2:
        raise RecipeFailed(f"clustered_t needs at least 2 questions; the grading has {len(means)}")
    n = len(means)
    return _bar(float(np.mean(means)), stats.clustered_t(means), stats._t_quantile(0.975, n - 1), args.part,
                f"clustered_t over {n} questions", rows, n, "questions")


# --------------------------------------------------------------------------- denominator sensitivity


class SensitivityArgs(EitherSource):
    """Arguments of stats.denominator_sensitivity."""

    part: Literal["difference", "left_out", "counted_wrong"] = "difference"
    """What the claim states: left-out minus counted-wrong, or one of the two accuracies."""
    sample: int | None = Field(default=None, ge=0)
    """One run; unset for every run pooled."""


@recipe("stats.denominator_sensitivity", unit="fraction")
def denominator_sensitivity(args: SensitivityArgs, ctx: Context) -> Result:
    """How much the figure moves when ungraded rows (excluded, truncated-excluded, missing) are left out of
    the denominator instead of counted wrong."""
    rows = args.rows(ctx)
    f = rows.frame if args.sample is None else rows.frame[rows.frame["sample"] == args.sample]
    correct = int((f["verdict"] == "correct").sum())
    graded = int((f["verdict"] != "ungraded").sum())
    total = int(len(f))
    if graded == 0:
        raise RecipeFailed("every row is ungraded: the left-out figure has an empty denominator")
    left_out, counted_wrong = correct / graded, correct / total
    statuses = f.loc[f["verdict"] == "ungraded", "status"].value_counts().sort_index()
    why = ", ".join(f"{v} {k}" for k, v in statuses.items()) or "none"
    values = {"difference": left_out - counted_wrong, "left_out": left_out, "counted_wrong": counted_wrong}
    basis = (f"left out {correct}/{graded} = {100 * left_out:.2f}%, counted wrong {correct}/{total} = "
             f"{100 * counted_wrong:.2f}%; ungraded rows: {why}; {rows.basis}")
    return Result(value=values[args.part], unit="fraction", n=total, n_label="rows", basis=basis, grading=rows.grading)


# --------------------------------------------------------------------------- paired ratio


class PairedLogRatioArgs(RecipeArgs):
    """Arguments of stats.paired_log_ratio."""

    package: PackageId
    """The package holding the table of paired durations."""
    file: str
    """The table's path inside the package, as its manifest lists it (`.jsonl`, `.jsonl.gz` or `.csv`)."""
    key: str = "task"
    """Column naming the task; each task once."""
    numerator: str
    """Column of the numerator (e.g. the baseline's duration, for a speed-up)."""
    denominator: str
    """Column of the denominator (e.g. the candidate's duration)."""
    level: float = Field(default=0.95, gt=0, lt=1)
    """Confidence level of the t-interval."""

    @field_validator("file")
    @classmethod
    def _table(cls, v: str) -> str:
        reason = unsafe_path_reason(v)
        if reason:
            raise ValueError(f"{reason}: a path inside the package, as its manifest lists it")
        if not v.endswith((".jsonl", ".jsonl.gz", ".csv")):
            raise ValueError("the table must be .jsonl, .jsonl.gz or .csv")
        return v


MAX_TABLE_BYTES = 256 << 20
"""Largest table read (decompressed): a .jsonl.gz listed as a text file has no row count to stop at."""


def _read_table(data: bytes, label: str) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a table from its bytes (read once, pinned by the package's manifest); JSON rows strictly
    (a duplicate key is refused, naming it), a gzip'd one decompressed to at most MAX_TABLE_BYTES."""
    import gzip

    from audit.fileio import READ_ERRORS, ParseError, iter_raw_lines, parse_object

    rows: list[tuple[int, dict[str, Any]]] = []
    if label.endswith(".csv"):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise RecipeFailed(f"{label}: not valid UTF-8 at byte {e.start}") from None
        reader = csv.DictReader(io.StringIO(text), strict=True)
        try:
            for i, r in enumerate(reader, start=2):
                if None in r or None in r.values():
                    more = "more" if None in r else "fewer"
                    raise RecipeFailed(f"{label}: row {i}: has {more} cells than the header")
                rows.append((i, dict(r)))
        except csv.Error as e:
            raise RecipeFailed(f"{label}: not valid CSV: {e}") from None
        return rows
    if label.endswith(".gz"):
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data), mode="rb") as gz:
                plain = gz.read(MAX_TABLE_BYTES + 1)
        except READ_ERRORS as e:
            raise RecipeFailed(f"{label}: not a readable gzip file: {e}") from None
        if len(plain) > MAX_TABLE_BYTES:
            raise RecipeFailed(f"{label}: decompresses past the {MAX_TABLE_BYTES:,}-byte limit for a table")
        data = plain
    for raw in iter_raw_lines(io.BytesIO(data)):
        if raw.error or raw.data is None:
            raise RecipeFailed(f"{label}: row {raw.lineno}: {raw.error}")
        obj, err = parse_object(raw.data)
        if err:
            where = f"field {err.field}: " if isinstance(err, ParseError) and err.field else ""
            raise RecipeFailed(f"{label}: row {raw.lineno}: {where}{err}")
        rows.append((raw.lineno, obj))  # type: ignore[arg-type]
    return rows


def _positive(v: Any, label: str, row: int, column: str) -> float:
    if isinstance(v, bool) or v is None:
        raise RecipeFailed(f"{label}: row {row}: field {column}: expected a positive number, got {v!r}")
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            raise RecipeFailed(f"{label}: row {row}: field {column}: expected a positive number, got {v!r}") from None
    elif isinstance(v, (int, float)):
        x = float(v)
    else:
        raise RecipeFailed(f"{label}: row {row}: field {column}: expected a positive number, got {v!r}")
    if not (math.isfinite(x) and x > 0):
        raise RecipeFailed(f"{label}: row {row}: field {column}: expected a positive number, got {v!r}")
    return x


@recipe("stats.paired_log_ratio", unit="ratio")
def paired_log_ratio(args: PairedLogRatioArgs, ctx: Context) -> Result:
    """Per-task paired ratio numerator/denominator: geometric mean, with a t-interval on the logs over n tasks."""
    pkg = ctx.package(args.package)
    entry = next((f for f in pkg.manifest.files if f.path == args.file), None)
    if entry is None:
        raise RecipeFailed(f"package {args.package} lists no file {args.file!r}")
    label = f"{args.package}/{args.file}"
    seen: dict[str, int] = {}
    logs: list[float] = []
    tasks: list[str] = []
    with ctx.reading(args.package):
        data = pkg.read_bytes(entry.path)  # checked against the manifest: the bytes the ledger's digest pins
    for row, obj in _read_table(data, label):
        task = obj.get(args.key)
        if task is None or isinstance(task, (dict, list, bool)) or task == "":
            raise RecipeFailed(f"{label}: row {row}: field {args.key}: missing task id")
        task = str(task)
        if task in seen:
            raise RecipeFailed(f"{label}: row {row}: field {args.key}: task {task!r} repeats row {seen[task]}")
        seen[task] = row
        a = _positive(obj.get(args.numerator), label, row, args.numerator)
        b = _positive(obj.get(args.denominator), label, row, args.denominator)
        logs.append(math.log(a / b))
        tasks.append(task)
    n = len(logs)
    if n < 2:
        raise RecipeFailed(f"{label}: needs at least 2 paired tasks, found {n}")
    arr = np.asarray(logs)
    mean = float(arr.mean())
    se = float(arr.std(ddof=1)) / math.sqrt(n)
    t = stats._t_quantile(0.5 + args.level / 2, n - 1)
    gm = math.exp(mean)
    iv = Interval(method="paired_log_t",
                  formula=f"exp(mean ± t{{{args.level:g}, n−1}}·sd/√n) of per-task ln(ratio), n paired tasks",
                  low=math.exp(mean - t * se), high=math.exp(mean + t * se), se=se)
    ratios = sorted(math.exp(x) for x in logs)
    series = Series(title=f"{args.numerator} / {args.denominator} per task", xlabel="task (sorted by ratio)",
                    ylabel="ratio", lines=(("per task", tuple((i + 1.0, r) for i, r in enumerate(ratios))),),
                    style="dots", log_y=True, reference=1.0, band=(iv.low, iv.high), center=gm, unit="ratio")
    basis = (f"geometric mean of {args.numerator}/{args.denominator} over {n} paired tasks of {label}; "
             f"log-scale sd {float(arr.std(ddof=1)):.4f}")
    return Result(value=gm, unit="ratio", interval=iv, n=n, n_label="tasks", basis=basis, series=series)


# --------------------------------------------------------------------------- arithmetic


class ArithmeticArgs(RecipeArgs):
    """Arguments of arithmetic."""

    expr: str
    """An expression over other claims' ids: numbers, + - * /, parentheses, abs/min/max/sqrt/log/exp. Each id
    stands for that claim's recomputed value in its own unit."""

    @field_validator("expr")
    @classmethod
    def _parses(cls, v: str) -> str:
        parse_expression(v)
        return v


@recipe("arithmetic", unit=ANY, claims=lambda a: parse_expression(a.expr)[1])
def arithmetic(args: ArithmeticArgs, ctx: Context) -> Result:
    """A value computed from other claims' recomputed values."""
    tree, names = parse_expression(args.expr)
    values = {n: ctx.claim_value(n) for n in names}
    value = evaluate(tree, values)
    if not math.isfinite(value):
        raise RecipeFailed(f"{args.expr} is not finite")
    shown = ", ".join(f"{k} = {v:.6g}" for k, v in values.items())
    return Result(value=value, unit=ANY, basis=f"{args.expr} with {shown}")

