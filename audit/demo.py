"""`audit demo`: the lab note's numbers, recomputed from the bundled raw packages.

`packages/demo-lab-note/` holds four small responses packages written for this
demo (`scripts/make_demo.py`), one per benchmark of the note, and the per-item
verdicts the lab's runner recorded for them (`lab-recorded/`). For each benchmark
the demo imports the recorded verdicts, regrades the package with the current
extractor and grader, and diffs the two; then it writes a release of the
protected GPQA grading and checks it for leaks. Everything it writes goes under
`--out` (default `out/demo`); what it prints fits one screen.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from audit.diff import diff_files, render_json, render_markdown
from audit.diff.render import guessed_letter
from audit.errors import AuditError
from audit.fileio import dumps_pretty, write_atomic
from audit.grade import grade_package
from audit.importers.verdicts import import_verdicts
from audit.release import build_release
from audit.specs import resolve_config
from audit.summary import pct
from audit.verdicts import Figure, read_verdicts

BENCHMARKS = ("math500", "mmlu_pro", "gpqa_diamond", "hle")
DEFAULT_PACKAGES = Path(__file__).resolve().parent.parent / "packages" / "demo-lab-note"
RELEASED = "gpqa_diamond"
"""The protected benchmark whose grading the demo releases."""
AGENTIC = "agentic"
"""The folder of the note's agentic packages (task-runs), under the demo's packages."""


@dataclass
class DemoLine:
    benchmark: str
    recorded: str
    recomputed: str
    changed: int
    causes: str
    one_sided: str


def _rate(correct: int, total: int) -> str:
    return f"{pct(correct / total)} ({correct}/{total})" if total else "n/a"


def _answer(side: dict[str, Any], width: int = 12) -> str:
    """The answer read, or the letter a random-guess row guessed."""
    guess = guessed_letter(side)
    return f"guess {guess}" if guess and side["answer"] is None else _cut(side["answer"], width)


def _cut(text: str | None, width: int) -> str:
    s = "—" if text is None else " ".join(str(text).split())
    return s if len(s) <= width else s[: width - 1] + "…"


def run_demo(packages: Path = DEFAULT_PACKAGES, out: Path = Path("out/demo")) -> list[str]:
    """Run the demo; return the lines to print."""
    if out.exists():
        for p in _check_replaceable(out):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
    else:
        out.mkdir(parents=True)
    summary: list[DemoLine] = []
    details: list[str] = []
    for bench in BENCHMARKS:
        pkg = packages / bench
        recorded = out / f"{bench}.recorded.json"
        regraded = out / f"{bench}.json"
        import_verdicts(packages / "lab-recorded" / f"{bench}.jsonl", recorded, benchmark=bench,
                        tool="the lab's runner", package=pkg)
        grade_package(pkg, resolve_config(bench), out=regraded)
        result = diff_files(recorded, regraded)
        write_atomic(out / f"{bench}.diff.md", render_markdown(result, max_items=50))
        write_atomic(out / f"{bench}.diff.json", render_json(result))

        old = _overall(recorded)
        new = _overall(regraded)
        counts = ", ".join(f"{c.cause} {c.rows}" for c in result.causes)
        only_old, only_new = result.only_old.num_rows, result.only_new.num_rows
        one_sided = ""
        if only_new:
            one_sided = f"+{only_new} rows the lab left out"
        if only_old:
            one_sided = (one_sided + "; " if one_sided else "") + f"{only_old} rows only the lab has"
        summary.append(DemoLine(bench, _rate(old.correct, old.total), _rate(new.correct, new.total),
                                result.changed.num_rows, counts or "-", one_sided))
        for row in result.changed_rows():
            o, n = row["old"], row["new"]
            details.append(f"  {bench:<13}{row['item_id']:<14}{_answer(o):<13}→ {_answer(n):<13}"
                           f"{o['verdict']:>9} → {n['verdict']:<10} {row['cause']:<10} {_cut(n['reason'], 60)}")
        for side, table in (("NEW", result.only_new), ("OLD", result.only_old)):
            for r in table.to_pylist():
                details.append(f"  {bench:<13}{r['item_id']:<14}{'':<28}{'':>9}   {r['verdict']:<10} "
                               f"{'denominator':<10} {'only in ' + ('the regrade' if side == 'NEW' else 'the record')}")

    release_dir = out / f"release-{RELEASED}"
    rel = build_release(out / f"{RELEASED}.json", release_dir)

    lines = [
        f"audit demo: the lab note's four benchmarks, recomputed from the raw packages in {_rel(packages)}",
        "(every question and response there was written for this demo; see its README)",
        "",
        f"{'benchmark':<13}{'recorded by the lab':<22}{'recomputed by audit':<22}{'changed':>8}  causes",
    ]
    for s in summary:
        extra = f"; {s.one_sided}" if s.one_sided else ""
        lines.append(f"{s.benchmark:<13}{s.recorded:<22}{s.recomputed:<22}{s.changed:>8}  {s.causes}{extra}")
    lines += ["", "Each verdict that changed (item, answer recorded → read now, verdict, cause, why):"]
    lines += details
    lines += [
        "",
        "Figures count every row (accuracy_all); rows the lab left out count as not graded.",
        f"Reports: {_rel(out)}/<benchmark>.diff.md (readable), .diff.json (every row); "
        f"verdict files {_rel(out)}/<benchmark>.json",
        f"Release of the protected GPQA grading: {_rel(release_dir)} — {rel.info.rows} rows, "
        f"{rel.info.protected_items} protected items published as verdict and status only; leak check passed.",
        f"Check any of it: audit reproduce {_rel(out)}/math500.json",
    ]
    if (packages / AGENTIC).is_dir():
        lines += ["", *_agentic_lines(packages / AGENTIC, out)]
    return lines


def _agentic_lines(root: Path, out: Path) -> list[str]:
    """The note's two agentic claims, recomputed: the paired ratio with the +40% retraction, and K=6 with the
    sensitivity line (`audit compare-runs`, `audit show`)."""
    from audit.taskruns import compare, render
    from audit.taskruns.package import open_task_runs

    with open_task_runs(root / "deepswe-baseline") as a, open_task_runs(root / "deepswe-mtp-k3") as b:
        arms = (("baseline", a.runs, a.trials), ("mtp-k3", b.runs, b.trials))
        dur = compare.compare(*arms)
        turns = compare.compare(*arms, by="turns")
    with open_task_runs(root / "deepswe-k6") as k6:
        summary = k6.summary
    write_atomic(out / "deepswe.compare.json", dumps_pretty(dur.model_dump(mode="json")))
    r, rt = dur.ratio, turns.ratio
    assert r is not None and rt is not None and r.t_interval and r.bootstrap_interval
    (tpa,), (tpb,) = dur.a.throughput, dur.b.throughput
    by = {m.policy: m for m in summary.mean}
    excl = ", ".join(f"{k} {v}" for k, v in summary.exclusions.items())
    change = f"{100 * (tpb.tasks_per_hour / tpa.tasks_per_hour - 1):+.0f}%"
    return [
        f"Agentic runs ({_rel(root)}; task-runs packages written for this demo):",
        f"  DeepSWE, {r.n} tasks run once without speculation and once with MTP k=3 (audit compare-runs):",
        f"    per-task duration ratio {r.geometric_mean:.2f}× (t 95% {r.t_interval.low:.2f}–{r.t_interval.high:.2f} "
        f"on the logs; bootstrap {r.bootstrap_interval.low:.2f}–{r.bootstrap_interval.high:.2f}, seed {r.seed}); "
        f"per turn {rt.geometric_mean:.2f}×",
        f"    RETRACTED: {tpa.tasks_per_hour:.1f} → {tpb.tasks_per_hour:.1f} tasks/hour "
        f"({change}): {tpa.tasks} tasks on {tpa.workers} workers, so each run's wall clock is its slowest task "
        f"({tpa.wall_s:.0f} s, {tpb.wall_s:.0f} s); the {change} is one task's ratio",
        *[f"    warning: {w}" for w in dur.warnings],
        f"  DeepSWE K={len(by['counted'].values)} at T=1.0, seed ignored, {summary.tasks} tasks (audit show):",
        f"    {'excluded left out':<29}{render.mean_words(by['left_out'])}",
        f"    {'excluded counted as failures':<29}{render.mean_words(by['counted'])}",
        f"    {sum(summary.exclusions.values())} trials excluded: {excl}",
        *[f"    {n}" for n in summary.notes],
        f"  Comparison: {_rel(out)}/deepswe.compare.json; check it: audit compare-runs {_rel(root)}/deepswe-baseline "
        f"{_rel(root)}/deepswe-mtp-k3",
    ]


def _outputs() -> set[str]:
    """Names the demo writes directly under `--out`."""
    names = {f"release-{RELEASED}", "deepswe.compare.json"}
    for bench in BENCHMARKS:
        names |= {f"{bench}.recorded.json", f"{bench}.json", f"{bench}.diff.md", f"{bench}.diff.json"}
    return names


def _check_replaceable(out: Path) -> list[Path]:
    """`--out` is replaced: its entries, when it holds only what a demo run writes (or temporary
    files of one); else refuse, so that `--out .` never deletes a user's files."""
    if not out.is_dir():
        raise AuditError("exists and is not a directory", path=str(out))
    known = _outputs()
    entries = sorted(out.iterdir())
    foreign = [p.name for p in entries if p.name not in known
               and not any(p.name.startswith(f".{k}.") for k in known)]
    if foreign:
        raise AuditError(f"holds files the demo did not write (first: {foreign[0]!r}); give another --out",
                         path=str(out))
    return entries


def _overall(path: Path) -> Figure:
    return next(f for f in read_verdicts(path, rows=None).header.summary.figures if f.name == "accuracy_all")


def _rel(p: Path) -> str:
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)
