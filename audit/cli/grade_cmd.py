"""Commands that grade: grade, reproduce, benchmarks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from audit.cli.app import benchmark_option, cli

if TYPE_CHECKING:
    from audit.grade import FitCheck


@cli.command()
@click.argument("package", type=click.Path(path_type=Path))
@benchmark_option("Benchmark spec (see `audit benchmarks`).", required=True)
@click.option("--items", type=click.Path(path_type=Path), metavar="ITEMS_PACKAGE",
              help="Package holding the item rows (default: the responses package's own).")
@click.option("-o", "--output", type=click.Path(path_type=Path), required=True, metavar="RESULTS.json",
              help="Verdict file to write.")
@click.option("--extractor", metavar="NAME[@VERSION]", help="Override the spec's extractor.")
@click.option("--grader", metavar="NAME[@VERSION]", help="Override the spec's grader.")
@click.option("--policy", "policies", multiple=True, metavar="KEY=VALUE",
              help="Override a policy: truncation=wrong|exclude, resampling=original|longer-only, "
                   "no_answer=wrong|random-guess|upstream-guess@964a136 (audit's per-item draw, or upstream MMLU-Pro's "
                   "reseeded one), guess_seed=N, exclude=ID,ID, scope=items|responses, "
                   "at_budget=count|truncated (a stop at exactly max_tokens), judge_error=wrong|exclude (with "
                   "--judge-calls: a failed or unparsed judge call).")
@click.option("--reference-field", metavar="FIELD", help="Item field holding the gold answer: reference or extra.KEY.")
@click.option("--parquet/--no-parquet", default=None,
              help="Also write the rows as Parquet beside the file (default: for 100,000 rows or more).")
@click.option("--workers", type=click.IntRange(1, 64), metavar="N",
              help="Worker processes for symbolic grading (default: the CPUs available).")
@click.option("--judge-calls", type=click.Path(path_type=Path), metavar="CALLS",
              help="Grade from the recorded judge calls of this judge-calls package (no judge is called).")
@click.option("--judge-rule", metavar="NAME[@VERSION]",
              help="With --judge-calls: re-read the recorded replies with this parse rule (default: the calls' own).")
@click.option("--judge-raw", type=click.Choice(["required", "recorded-parse"]), default="required", show_default=True,
              help="With --judge-calls: a call without its raw reply recorded is refused, or counted by its parsed "
                   "fields.")
@click.option("--force", is_flag=True, help="Replace RESULTS.json if it exists and is a verdict file.")
@click.option("-q", "--quiet", is_flag=True, help="Print only the path written.")
def grade(package: Path, benchmark: str, items: Path | None, output: Path, extractor: str | None,
          grader: str | None, policies: tuple[str, ...], reference_field: str | None, parquet: bool | None,
          workers: int | None, judge_calls: Path | None, judge_rule: str | None, judge_raw: str, force: bool,
          quiet: bool) -> int:
    """Regrade a responses PACKAGE into a verdict file.

    The file names every input by digest, the extractor and grader by version and fingerprint, and
    every policy; identical inputs give a byte-identical file.
    """
    from audit.errors import AuditError
    from audit.grade import NoItems, grade_package
    from audit.outputs import check_output
    from audit.specs import resolve_config

    if package.is_file() and not package.name.lower().endswith((".tar.gz", ".tgz")):
        from audit.importers.detect import PACKAGE, sniff

        found = sniff(package)
        hint = (found.message(package) if found is not None and found is not PACKAGE else
                f"import it first (`audit import table {package} --kind responses ... -o PKG`, or "
                f"`audit import lm-eval` / `audit import mmlu-pro`)")
        raise AuditError(f"is a file, not a responses package: {hint}", path=str(package))
    check_output(output, force=force, kind="verdicts")
    from audit.specs import PolicyError

    try:
        config = resolve_config(benchmark, extractor=extractor, grader=grader, policies=policies,
                                reference_field=reference_field)
    except PolicyError as e:
        raise AuditError(f"--{e.problem.message}") from None
    if judge_calls is not None:
        return _grade_judged(package, config, judge_calls, items, output, judge_rule, judge_raw, force, quiet)
    if judge_rule is not None:
        raise click.UsageError("--judge-rule needs --judge-calls CALLS")
    try:
        grading = grade_package(package, config, items=items, out=output, parquet=parquet, workers=workers,
                                overwrite=force)
    except NoItems as e:
        raise AuditError(f"{e.problem.message}: give --items ITEMS_PACKAGE", path=e.problem.path or None) from None
    vf = grading.header
    click.echo(f"wrote {output}" + (f" and {vf.rows_file.path}" if vf.rows_file else ""))
    if not quiet:
        ex, gr = vf.extractor, vf.grader
        assert ex is not None and gr is not None  # a grading names both
        from audit.views import at_budget_lines, format_summary, visible

        click.echo(f"{visible(vf.benchmark)}: {len(grading)} rows, {vf.summary.items} items x {vf.summary.samples} "
                   f"samples; extractor {ex.name}@{ex.version}, grader {gr.name}@{gr.version}")
        for line in format_summary(vf) + at_budget_lines(grading.columns["reason"], vf.policies.at_budget):
            click.echo(line)
        if vf.summary.samples > 1:
            from audit.views import sample_figure_lines

            for line in sample_figure_lines(vf.summary.sample_figures or [], stored=True):
                click.echo(line)
        from collections import Counter

        from audit.grade import fit_check
        from audit.views import rule_lines, strength_lines

        rules = Counter(grading.columns["rule"])
        for line in rule_lines(rules, [vf.extractor, vf.mc_extractor]):
            click.echo(line)
        for line in strength_lines(rules, [vf.extractor, vf.mc_extractor], grading.possibly_cut):
            click.echo(line)
        fit = fit_check(grading, package, config)
        if fit is not None:
            for line in fit_lines(fit):
                click.echo(line)
        from audit.summary import error_share_note

        errors = error_share_note(vf.summary)
        if errors is not None:
            click.echo(f"warning: {errors}")
        judged = _recorded_grader_note(package, f"{gr.name}@{gr.version}")
        if judged is not None:
            click.echo(f"note: {judged}")
    return 0


def _recorded_grader_note(package: Path, grader: str) -> str | None:
    """The note when the package's import recorded that its run's verdicts came from a model-graded scorer (an
    inspect log's model_graded_fact): a regrade by a rule that differs from them is no retraction by itself."""
    from audit.packages.validate import load_manifest
    from audit.summary import recorded_grader_note

    manifest, _ = load_manifest(package, str(package)) if package.is_dir() else (None, [])
    imported = (manifest.provenance.extra or {}).get("import") if manifest is not None else None
    if not isinstance(imported, dict):
        return None
    return recorded_grader_note(imported.get("scorer_kind"), imported.get("scorer"), grader)


def _grade_judged(package: Path, config: Any, calls: Path, items: Path | None, output: Path, rule: str | None,
                  raw: str, force: bool, quiet: bool) -> int:
    from audit.judge.grading import grade_judged, judged_lines
    from audit.views import format_summary

    g = grade_judged(package, config, calls, items=items, rule=rule, raw_policy=raw, out=output, overwrite=force)
    vf = g.header
    click.echo(f"wrote {output}")
    if not quiet:
        j = vf.judge
        assert j is not None
        click.echo(f"{vf.benchmark}: {len(g.columns['item_id'])} rows judged from {j.calls_package.package_id} "
                   f"(no judge called); rule {j.rule.key}, template {j.template.key if j.template else 'unregistered'}"
                   f"; judge_error counted {'wrong' if vf.policies.judge_error == 'wrong' else 'left out'}")
        for line in format_summary(vf) + judged_lines(g):
            click.echo(line)
    return 0


def fit_lines(fit: FitCheck) -> list[str]:
    """The warning `audit grade` prints when the spec's extractor reads no answer in most rows."""
    from audit.summary import pct

    lines = [f"warning: {fit.no_answer:,} of {fit.read:,} rows ({pct(fit.no_answer / fit.read)}) read no answer: "
             f"these responses do not look written in the format {fit.extractor} expects ({fit.expects})"]
    if fit.better:
        shown = "; ".join(f"{k} reads one in {n:,}" for k, n in fit.better)
        lines.append(f"  {fit.sampled:,} of those responses re-read with the other registered extractors: {shown} "
                     f"(--extractor NAME, or a --benchmark whose spec uses it)")
    else:
        lines.append(f"  no other registered extractor reads an answer statement in the {fit.sampled:,} re-read")
    return lines


@cli.command()
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--package", type=click.Path(path_type=Path), help="Responses package (default: the recorded path).")
@click.option("--items", type=click.Path(path_type=Path), help="Items package (default: the recorded path).")
def reproduce(results: Path, package: Path | None, items: Path | None) -> int:
    """Re-grade RESULTS from its referenced package; exit 0 only if the result is identical.

    Rows that differ only because a grading timed out in one run and not in the other are
    listed apart as environment-dependent (they depend on the machine's load, not on the code
    or the inputs). Refuses (exit 2) when the package's content digest differs from the recorded one.
    """
    from audit.errors import AuditError
    from audit.grade import NoPath
    from audit.grade import reproduce as run
    from audit.verdicts import load_verdict_file

    try:
        vf = load_verdict_file(results)
        if vf.judge is not None:  # graded from recorded judge calls: re-read them, no judge called
            from audit.judge.grading import reproduce_judged

            outcome = reproduce_judged(vf, Path(results), package=package, items=items)
        else:
            outcome = run(results, package=package, items=items)
    except NoPath as e:
        raise AuditError(f"{e.problem.message}: give --{e.what} PATH") from None
    for note in outcome.notes:
        click.echo(f"note: {note}")
    if outcome.identical:
        click.echo(f"identical: {results}")
        for line in outcome.not_rederived:
            click.echo(f"not re-derived: {line}")
        return 0
    env = outcome.environment_dependent
    if outcome.differences:
        click.echo(f"differs: {results} ({len(outcome.differences)} differences"
                   + (f", and {len(env)} environment-dependent rows)" if env else ")"))
    else:
        click.echo(f"differs only in environment-dependent rows: {results} ({len(env)} rows where a grading "
                   f"timed out in one run and not in the other)")
    for line in outcome.differences[:50]:
        click.echo(f"  {line}")
    for line in env[:50]:
        click.echo(f"  environment-dependent (timeout): {line}")
    for line in outcome.not_rederived:
        click.echo(f"not re-derived: {line}")
    return 1


@cli.command("benchmarks")
def benchmarks_cmd() -> int:
    """List the benchmark specs: extractor, grader and policies of each."""
    from audit.specs import SPECS

    for spec in SPECS.values():
        c = spec.config
        mc = f" (multiple choice: {c.mc_extractor}, {c.mc_grader})" if c.mc_grader else ""
        click.echo(f"{spec.name:<14} {c.extractor} + {c.grader}{mc}")
        click.echo(f"{'':<14} {spec.description}")
    return 0
