"""Verdict recipes: accuracy and counts, from a fresh grading of a package or from a verdict file.

`grade.*` runs the real grading (`audit.grade.grade_package`) on a responses package
with the benchmark's spec and any overrides; `verdicts.*` reads an existing verdict
file (or another tool's per-item verdicts, imported as `audit import verdicts` does)
and recomputes its figures from its rows, never from its summary.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import Field, field_validator

from audit.claims.registry import Context, FileId, PackageId, RecipeArgs, RecipeFailed, Result, recipe
from audit.errors import key_repr
from audit.verdicts.models import Figure, Interval, Policies

FigureName = Literal["accuracy", "accuracy_all"]
IntervalName = Literal["auto", "binomial_2se", "wilson", "clopper_pearson", "runs_2se", "runs_t", "clustered_t",
                       "zero_failure_upper"]


# --------------------------------------------------------------------------- arguments


class GradeSource(RecipeArgs):
    """A fresh grading of a responses package."""

    package: PackageId
    """The responses package to grade."""
    benchmark: str
    """Benchmark spec (`audit benchmarks`): extractor, grader, reference field and policies."""
    items: PackageId | None = None
    """Package holding the item rows, when the responses package has none."""
    extractor: str | None = None
    """Override the spec's extractor (`name@version`)."""
    grader: str | None = None
    """Override the spec's grader (`name@version`)."""
    reference_field: str | None = None
    """Item field holding the gold answer: `reference` or `extra.KEY`."""
    policy: dict[str, str | int | list[str]] = Field(default_factory=dict)
    """Policy overrides, e.g. `{truncation: wrong, resampling: longer-only}` (see `audit grade --policy`)."""

    @field_validator("benchmark")
    @classmethod
    def _known_benchmark(cls, v: str) -> str:
        from audit.specs import SPECS

        if v not in SPECS:
            raise ValueError(f"unknown benchmark {v!r} (known: {', '.join(sorted(SPECS))})")
        return v

    @field_validator("extractor", "grader")
    @classmethod
    def _known_component(cls, v: str | None, info: Any) -> str | None:
        if v is None:
            return v
        from audit.errors import AuditError
        from audit.specs import lookup

        try:
            lookup(info.field_name, v)
        except AuditError as e:
            raise ValueError(str(e.args[0] if e.args else e)) from None
        return v

    @field_validator("policy")
    @classmethod
    def _known_policies(cls, v: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(v) - set(Policies.model_fields))
        if unknown:
            raise ValueError(f"unknown policy {key_repr(unknown[0])} (known: {', '.join(Policies.model_fields)})")
        Policies.model_validate({**Policies().model_dump(), **v})
        return v


class VerdictSource(RecipeArgs):
    """An existing verdict file (or recorded per-item verdicts) from the ledger's `files`."""

    verdicts: FileId
    """The verdict file, or a verdict table another tool recorded."""


class _Figure(RecipeArgs):
    figure: FigureName = "accuracy"
    """`accuracy`: ungraded rows left out; `accuracy_all`: every row, ungraded counted wrong."""
    sample: int | None = Field(default=None, ge=0)
    """One run's figure; unset for the overall figure."""
    interval: IntervalName = "auto"
    """Interval formula: `auto` is binomial_2se for one run and clustered_t for several (zero_failure_upper when
    every row agrees, where those collapse to a point)."""


class _SampleFigure(RecipeArgs):
    figure: str = Field(pattern=r"^(pass|maj)@[1-9][0-9]{0,3}$")
    """`pass@1`, `pass@K` or `maj@K` (K samples per item), as `audit grade` prints it, with its named interval
    (clustered_t over the items for pass@k, wilson over items for maj@k)."""


class _Count(RecipeArgs):
    status: str | None = None
    """Count rows with this status (`truncated`, `no_answer`, `excluded`, `missing`, ...)."""
    verdict: Literal["correct", "incorrect", "ungraded"] | None = None
    """Count rows with this verdict."""
    count: Literal["rows", "items"] = "rows"
    """Count rows, or distinct items among them."""
    sample: int | None = Field(default=None, ge=0)
    """Only this run."""


class GradeAccuracyArgs(_Figure, GradeSource):
    """Arguments of grade.accuracy."""


class GradeCountArgs(_Count, GradeSource):
    """Arguments of grade.count."""


class VerdictsAccuracyArgs(_Figure, VerdictSource):
    """Arguments of verdicts.accuracy."""


class VerdictsCountArgs(_Count, VerdictSource):
    """Arguments of verdicts.count."""


class GradeSampleFigureArgs(_SampleFigure, GradeSource):
    """Arguments of grade.sample_figure."""


class VerdictsSampleFigureArgs(_SampleFigure, VerdictSource):
    """Arguments of verdicts.sample_figure."""


# --------------------------------------------------------------------------- rows


@dataclass
class Rows:
    """A grading's rows (item_id, sample, verdict, status) and a line on where they come from."""

    frame: pd.DataFrame
    basis: str
    grading: Any = None
    """The fresh grading (`audit.grade.Grading`), for a package graded here."""
    header: Any = None
    """The verdict file's header (its summary states figures), for rows read from one."""


def _config(args: GradeSource) -> Any:
    """The spec with the recipe's overrides: a `ResolvedConfig` (settings and the components they name)."""
    from audit.specs import resolve_config

    resolved = resolve_config(args.benchmark, extractor=args.extractor, grader=args.grader,
                              reference_field=args.reference_field)
    policies = Policies.model_validate({**resolved.policies.model_dump(), **args.policy})
    return dataclasses.replace(resolved, config=dataclasses.replace(resolved.config, policies=policies))


def _component_text(vf: Any) -> str:
    parts = [f"{c.name}@{c.version}" for c in (vf.extractor, vf.grader) if c is not None]
    mc = [f"{c.name}@{c.version}" for c in (vf.mc_extractor, vf.mc_grader) if c is not None]
    text = " + ".join(parts) if parts else "imported verdicts"
    return text + (f" (multiple choice: {' + '.join(mc)})" if mc else "")


def _policy_text(p: Policies) -> str:
    default = Policies()
    changed = [f"{k}={getattr(p, k)}" for k in Policies.model_fields if getattr(p, k) != getattr(default, k)]
    return ", ".join(changed) if changed else "default policies"


def graded_rows(args: GradeSource, ctx: Context) -> Rows:
    """The package graded with the spec and overrides; one grading per configuration, shared by claims."""
    from audit.grade import grade_package

    config = _config(args)
    key = ("grade", args.package, args.items, repr(config.config))
    if key in ctx.cache:
        cached: Rows = ctx.cache[key]
        return cached
    # The packages verify checked, read as they are: each file is read under the digest its manifest pins
    # (a file changed since the check is refused), so nothing is reopened or validated twice.
    items = ctx.package(args.items) if args.items else None
    grading = grade_package(ctx.package(args.package), config, items=items, base_dir=ctx.tmp)
    c = grading.columns
    frame = pd.DataFrame({k: c[k] for k in ("item_id", "sample", "verdict", "status", "answer")})
    basis = (f"{args.package} graded as {args.benchmark}: {_component_text(grading.header)}; "
             f"{_policy_text(config.policies)}")
    rows = Rows(frame, basis, grading)
    ctx.cache[key] = rows
    return rows


def recomputed_rows(ctx: Context, claim_id: str, grading: Any) -> Any:
    """A claim's fresh grading as `audit.diff.diff_files` compares it, in memory (`VerdictRows`): its package
    paths start where it was graded (`ctx.tmp`), and its responses package is the one already open."""
    from audit.diff import VerdictRows

    return VerdictRows(grading.header, grading.columns, label=f"the recomputed grading of claim {claim_id}",
                       base_dir=ctx.tmp, responses=_opened(ctx, grading.header))


def _opened(ctx: Context, header: Any) -> Any:
    """The responses package `header` names, as the ledger opened it (None when the ledger has none such)."""
    ref = header.responses_package
    if ref is None:
        return None
    with contextlib.suppress(RecipeFailed):  # not one the ledger opened: the diff opens it from its path
        return ctx.package(ref.package_id)
    return None


def verdict_source(ctx: Context, ident: str) -> Any:
    """A verdict file input: its path, or, for a verdict table another tool recorded, its verdicts imported
    in memory (once) as `audit import verdicts` would write them (`audit.diff.VerdictRows`)."""
    from audit.diff import VerdictRows
    from audit.importers.verdicts import recorded_verdicts
    from audit.verdicts import FRAME_COLUMNS

    entry = ctx.loaded.files[ident]
    path = ctx.file(ident)
    if entry.format == "verdicts":
        return path
    key = ("imported", ident)
    if key not in ctx.cache:
        assert entry.benchmark is not None and entry.package is not None
        responses = ctx.package(entry.package)
        header, rows = recorded_verdicts(path, benchmark=entry.benchmark, tool=entry.tool or "another tool",
                                         package=responses, base_dir=ctx.tmp)
        columns = {k: [r[k] for r in rows] for k in FRAME_COLUMNS}
        ctx.cache[key] = VerdictRows(header, columns, label=str(path), base_dir=ctx.tmp, responses=responses)
    return ctx.cache[key]


def recorded_rows(ctx: Context, ident: str) -> Rows:
    """A verdict file's rows (validated as `audit diff` reads them)."""
    from audit.verdicts.read import read_verdicts

    key = ("verdicts", ident)
    if key in ctx.cache:
        cached: Rows = ctx.cache[key]
        return cached
    source = verdict_source(ctx, ident)
    if isinstance(source, Path):
        read = read_verdicts(source)
        header, table = read.header, read.rows
    else:
        header, table = source.header, source.table
    frame = table.select(["item_id", "sample", "verdict", "status", "answer"]).to_pandas()
    entry = ctx.loaded.files[ident]
    what = "verdict file" if entry.format == "verdicts" else f"verdicts recorded by {entry.tool or 'another tool'}"
    basis = f"{ident} ({what}, {header.benchmark}): {_component_text(header)}; {_policy_text(header.policies)}"
    rows = Rows(frame, basis, header=header)
    ctx.cache[key] = rows
    return rows


# --------------------------------------------------------------------------- figures


def _figures(frame: pd.DataFrame) -> dict[str, Figure]:
    from audit.summary import figures

    return {f.name: f for f in figures(frame)}


def pick_interval(fig: Figure, method: str, frame: pd.DataFrame) -> Interval | None:
    """The figure's interval by formula; `auto` as documented on `_Figure.interval`."""
    from audit import stats

    by = {iv.method: iv for iv in fig.intervals}
    if method == "auto":
        if fig.total and fig.correct in (0, fig.total):
            return by.get("zero_failure_upper")
        return by.get("clustered_t") or by.get("binomial_2se")
    if method == "binomial_2se" and method not in by:
        return stats.binomial_2se(fig.correct, fig.total)  # pooled over the runs
    if method in ("wilson", "clopper_pearson") and method not in by:  # of the counts, as `audit grade` prints it
        return stats.wilson(fig.correct, fig.total) if method == "wilson" else \
            stats.clopper_pearson(fig.correct, fig.total)
    if method not in by:
        samples = frame["sample"].nunique()
        need = "at least 2 runs" if method in ("runs_2se", "runs_t", "clustered_t") else "no failures or no successes"
        raise RecipeFailed(f"interval {method} needs {need}; this figure has {samples} run(s), "
                           f"{fig.correct}/{fig.total} correct")
    return by[method]


def _figure_name(figure: str, sample: int | None) -> str:
    from audit.summary import figure_name

    return figure_name("graded" if figure == "accuracy" else "all", sample)


def accuracy(rows: Rows, figure: str, sample: int | None, interval: str) -> Result:
    if rows.frame.empty:
        raise RecipeFailed("the grading has no rows")
    name = _figure_name(figure, sample)
    figs = _figures(rows.frame)
    if name not in figs:
        raise RecipeFailed(f"no figure {name} (runs: {sorted(set(rows.frame['sample']))})")
    fig = figs[name]
    if fig.total == 0:
        raise RecipeFailed(f"{name} has an empty denominator (every row ungraded)")
    iv = pick_interval(fig, interval, rows.frame)
    runs = rows.frame["sample"].nunique() if sample is None else 1
    items = rows.frame["item_id"].nunique()
    basis = f"{name} = {fig.correct}/{fig.total} ({items} items × {runs} run{'s' if runs != 1 else ''}); {rows.basis}"
    return Result(value=fig.value, unit="fraction", interval=iv, n=fig.total, n_label="rows", basis=basis,
                  grading=rows.grading)


def count(rows: Rows, args: _Count) -> Result:
    f = rows.frame
    mask = pd.Series(True, index=f.index)
    what = []
    if args.sample is not None:
        mask &= f["sample"] == args.sample
        what.append(f"run {args.sample}")
    if args.status is not None:
        mask &= f["status"] == args.status
        what.append(f"status {args.status}")
    if args.verdict is not None:
        mask &= f["verdict"] == args.verdict
        what.append(f"verdict {args.verdict}")
    sel = f[mask]
    n = int(sel["item_id"].nunique()) if args.count == "items" else int(len(sel))
    of = int(f["item_id"].nunique()) if args.count == "items" else int(len(f))
    where = f" with {', '.join(what)}" if what else ""
    return Result(value=float(n), unit="count", basis=f"{n} of {of} {args.count}{where}; {rows.basis}",
                  grading=rows.grading)


# --------------------------------------------------------------------------- recipes


@recipe("grade.accuracy", unit="fraction")
def grade_accuracy(args: GradeAccuracyArgs, ctx: Context) -> Result:
    """Accuracy of a fresh grading of a responses package, with its interval."""
    return accuracy(graded_rows(args, ctx), args.figure, args.sample, args.interval)


@recipe("grade.count", unit="count")
def grade_count(args: GradeCountArgs, ctx: Context) -> Result:
    """Rows (or items) of a fresh grading with a given status or verdict, e.g. responses cut at the ceiling."""
    return count(graded_rows(args, ctx), args)


@recipe("verdicts.accuracy", unit="fraction")
def verdicts_accuracy(args: VerdictsAccuracyArgs, ctx: Context) -> Result:
    """Accuracy recomputed from a verdict file's rows (not from its summary), with its interval."""
    rows = recorded_rows(ctx, args.verdicts)
    result = accuracy(rows, args.figure, args.sample, args.interval)
    stated = {f.name: f.value for f in rows.header.summary.figures}
    name = _figure_name(args.figure, args.sample)
    if name in stated and abs(stated[name] - result.value) > 1e-12:
        result.basis += f"; its summary says {stated[name]:.6f}, which its rows do not give"
    return result


def sample_figure(rows: Rows, figure: str) -> Result:
    """pass@k or maj@k recomputed from the rows (audit.summary.sample_figures)."""
    from audit.summary import sample_figures

    figs = {f.name: f for f in sample_figures(rows.frame)}
    if figure not in figs:
        k = rows.frame.groupby("item_id")["sample"].count()
        raise RecipeFailed(f"no figure {figure}: the grading has {sorted(set(k))} sample(s) per item (pass@1, "
                           f"pass@K and maj@K need K >= 2 samples of every item)")
    f = figs[figure]
    basis = f"{figure} over {f.items} items" + (f" ({f.note})" if f.note else "") + f"; {rows.basis}"
    return Result(value=f.value, unit="fraction", interval=f.interval, n=f.items, n_label="items", basis=basis,
                  grading=rows.grading)


@recipe("grade.sample_figure", unit="fraction")
def grade_sample_figure(args: GradeSampleFigureArgs, ctx: Context) -> Result:
    """pass@k or maj@k of a fresh grading with several samples per item, with its interval."""
    return sample_figure(graded_rows(args, ctx), args.figure)


@recipe("verdicts.sample_figure", unit="fraction")
def verdicts_sample_figure(args: VerdictsSampleFigureArgs, ctx: Context) -> Result:
    """pass@k or maj@k recomputed from a verdict file's rows (not its summary), with its interval."""
    rows = recorded_rows(ctx, args.verdicts)
    result = sample_figure(rows, args.figure)
    stored = {f.name: f.value for f in getattr(rows.header.summary, "sample_figures", None) or []}
    if args.figure in stored and abs(stored[args.figure] - result.value) > 1e-12:
        result.basis += f"; its summary says {stored[args.figure]:.6f}, which its rows do not give"
    return result


@recipe("verdicts.count", unit="count")
def verdicts_count(args: VerdictsCountArgs, ctx: Context) -> Result:
    """Rows (or items) of a verdict file with a given status or verdict."""
    return count(recorded_rows(ctx, args.verdicts), args)
