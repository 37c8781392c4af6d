"""Rerun the importers' trial on real lm-eval output folders copied from public repositories.

The copies stay out of the repository (keep them under /tmp or .dev/); give each folder with the source it
came from:

    .venv/bin/python benchmarks/trial_real_lm_eval.py \\
        /tmp/lmeval_real/errorbars/lm_eval_output=antonsoo/errorbars@05f148ff:tests/fixtures/lm_eval_output \\
        /tmp/lmeval_real/olot/lmeh=containers/olot@0596e93c:tests/data/lmeh ...

For each folder: `audit import lm-eval DIR -o TMP --recorded TMP.recorded` (one package per task, each
cross-checked against its results file, and a verdict file of the run's own verdicts per task), then each package
is regraded by audit (`selected_choice` for multiple-choice samples, the
`gsm8k` spec for gsm8k tasks, else `exact`) and one Markdown row per task is printed: source@commit, folder,
task and n, the tool's own metric (from the results file, else the mean of the per-sample metric), the figure of
the task's verdict file (`--recorded`; a column since issue 31 item 8), audit's figure, and the difference. A
folder the importer refuses gets one row with its error line.

Last run (2026-12-01; copies under /tmp/lmeval_real: the errorbars and olot files are byte-identical to
tests/data/lm_eval, whose README gives their sha256, except hf-internal-testing__tiny-random-gpt2, rebuilt
record by record from the stored text: 19,182 and 1,013 bytes as stored, every doc, prompt and target hash
verified by the import; csabakecskemeti/lm_eval_results from its git snapshot):

| source@commit | package | task, n | tool's metric | audit's figure | difference |
| --- | --- | --- | --- | --- | --- |
| antonsoo/errorbars@05f148ff tests/fixtures/lm_eval_output | hf-internal-testing__tiny-random-gpt2/copa | copa, 20 | acc 80.00% (results file) | 80.00% (16/20) | none; cross-check passed |
| antonsoo/errorbars@05f148ff tests/fixtures/lm_eval_output | sshleifer__tiny-gpt2/copa | copa, 20 | acc 60.00% (results file) | 60.00% (12/20) | none; cross-check passed |
| antonsoo/errorbars@8d233535 tests/fixtures (arc_easy file only) | arc_easy | arc_easy, 5 | acc 20.00% (per-sample) | 20.00% (1/5) | none; no results file |
| containers/olot@0596e93c tests/data/lmeh | gsm8k | gsm8k, 3 | exact_match 0.00% (per-sample, strict-match) | 0.00% (0/3, gsm8k spec) | none; no results file |
| csabakecskemeti/lm_eval_results@d1f48eb7 | - | 2 models, 40+ tasks | - | - | refused: the samples are Git LFS pointers (only the results files are in git) |

Run of 2026-12-07 (issue 31; the 31 results files of mattdepaolis/llm-evaluation@8af483033c5f, `results/`, each
a `simple_evaluate(..., log_samples=True)` output with its samples inside, named
`results_<model>_<harness>_<task>_<date>.json`, copies under /work/realfiles/imp/llm-evaluation; before this run
the folder held "no lm-eval samples" and each file alone was refused as "aggregate scores only", 17 of them also
for their integer `target`):

| source@commit | package | task, n | tool's metric | audit's figure | difference |
| --- | --- | --- | --- | --- | --- |
| mattdepaolis/llm-evaluation@8af48303 (all 31 files) | 226 task packages | arc_easy, arc_challenge, gsm8k, 39-44 leaderboard tasks | each task's results file | 220 packages equal to the logged figure | none; every cross-check passed |
| same | arc_easy_20250530_123425 | arc_easy, n=10 (integer targets) | acc,none 90.00% | 90.00% (9/10, selected_choice) | none (was refused row by row) |
| same | leaderboard_bbh_causal_judgement_20250530_134808 | n=15, logs acc_norm only | acc_norm,none 53.33% | 53.33% (8/15, chosen by acc_norm) | none (was graded by acc's choice) |
| same | gsm8k_20250530_115057 | gsm8k, n=10 | exact_match,strict-match 0.00% | 0.00% (0/10, gsm8k) | none |
| same | leaderboard_mmlu_pro_20250530_130644 | n=4 | acc,none 25.00% | 25.00% (1/4, selected_choice) | none |
| same | leaderboard_math_prealgebra_hard_20250530_130837 | n=4 | exact_match,none 25.00% | 25.00% (1/4, math) | none |
| same | leaderboard_math_num_theory_hard_20250401_081149 | n=1 | exact_match,none 0.00% | 100.00% (1/1, math) | +100 pt: the response boxes 44 (the gold), then rechecks and is cut mid-line; the leaderboard's filter reads only "Final Answer: The final answer is X", audit's `math` spec the last box |
| same | leaderboard_ifeval (5 runs) | n=1-4 | inst_level_loose_acc | - | not compared: no audit spec grades instruction following |

Run of 2026-12-07, after issue 31 item 8 (`--recorded` for a folder; before it, `--recorded` was refused for a
folder and for a results file holding its samples): the same two sources, tests/data/lm_eval and the 31 files of
mattdepaolis/llm-evaluation@8af48303, 231 task packages, 8 min 37 s on the shared 2-core machine:

| source@commit | package | task, n | tool's metric | its verdict file (--recorded) | audit's figure | difference |
| --- | --- | --- | --- | --- | --- | --- |
| both | 226 of 231 task packages | every task but ifeval | each logged figure | 226 equal to the logged figure | as in the run above | none between the verdict file and the log |
| tests/data/lm_eval | sshleifer__tiny-gpt2/copa | copa, n=20 | acc,none 60.00% (results file) | 60.00% (12/20, acc) | 60.00% (12/20, selected_choice) | +0.00 pt; `audit diff` of the two: 0 verdicts changed |
| tests/data/lm_eval | mattdepaolis_llm-evaluation/leaderboard_bbh_causal_judgement | n=10, logs acc_norm only | acc_norm,none 60.00% | 60.00% (6/10, acc_norm) | 60.00% (6/10, selected_choice) | +0.00 pt |
| mattdepaolis/llm-evaluation@8af48303 | leaderboard_math_num_theory_hard_20250401_081149 | n=1 | exact_match,none 0.00% | 0.00% (0/1, exact_match) | 100.00% (1/1, math) | +100 pt, as above: the verdict file and `audit diff` now show the row |
| same | leaderboard_ifeval (5 runs) | n=1-4 | inst_level_loose_acc | none written: "metric prompt_level_strict_acc is False, not 0 or 1: not a verdict" (one line each, --on-bad-row record) | - | not compared |

Other importers on real files, the same day (issue 31 item 8; not rerun by this script):

| source@commit | file | what | before | after |
| --- | --- | --- | --- | --- |
| UKGovernmentBEIS/inspect_ai@499e6152 | tests/analysis/test_logs/...security-guide.json | model_graded_fact (gpt-4o-mini), 3 samples, regraded with `exact` | recorded 100.00% (3/3), exact 0.00% (0/3): a -100 pt "Retraction" with no word of the judge | the same figures; `audit grade` and `audit diff` note "the recorded verdicts came from a model-graded scorer (model_graded_fact); exact.hle@1 is not the same grader" |
| same | tests/log/test_list_logs/...input-task_8zXjbRzCWrL9GXiXo2vus9.json (tests/data/judge) | the log copied to a name without an extension | refused: unknown file type | `--format json`: the same rows as the .json |
| EleutherAI/lm-evaluation-harness output (antonsoo/errorbars@8d233535, tests/data/lm_eval) | samples_arc_easy_...jsonl without its extension | `import lm-eval --format jsonl` | refused: unknown file type | the same 5 rows, 20.00% (1/5) |
| a log inspect_ai 0.3 writes for a task without a scorer (mockllm) | .eval and .json | `import inspect --recorded` | "the log has 0 scorers (none): give --scorer" | one line naming both ways on; `inspect score LOG --scorer match --output-file SCORED.json` then `--recorded`: 50.00% (1/2) |
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
AUDIT = [str(Path(sys.executable).parent / "audit")]  # the console script of the environment running this


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*AUDIT, *args], capture_output=True, text=True, cwd=REPO)


def _spec(pkg: Path, task: str) -> str | None:
    man = json.loads((pkg / "manifest.json").read_text())
    types = man["provenance"]["extra"]["import"].get("output_types", {})
    if types.get("multiple_choice"):
        return "selected_choice"
    if "ifeval" in task:
        return None  # instruction-following checks: no audit spec grades them
    if "math" in task:
        return "math"  # leaderboard_math_*_hard, minerva_math: a final answer, symbolic equivalence
    return "gsm8k" if task.startswith("gsm8k") else "exact"


def _tool_metric(pkg: Path) -> tuple[str, float | None, str]:
    man = json.loads((pkg / "manifest.json").read_text())
    imp = man["provenance"]["extra"]["import"]
    checks = imp.get("cross_check", {}).get("checks", [])
    for c in checks:
        if c["what"] not in ("n-samples", "results", "results file") and c["logged"] is not None and \
                c["what"].split(",", 1)[1:] in ([imp.get("filter")], ["none"]):
            return c["what"], c["logged"], "results file"
    # No results file: the mean of the per-sample metric the harness logged.
    rows = [json.loads(line) for line in (pkg / "responses.jsonl").read_text().splitlines()]
    for name in ("acc", "exact_match"):
        values = [r["extra"].get("metrics", {}).get(name) for r in rows]
        if values and all(isinstance(v, (int, float)) for v in values):
            return f"{name},{imp.get('filter')}", sum(values) / len(values), "per-sample metrics"
    return "-", None, "-"


def _recorded(rec: Path, rel: str) -> str:
    """The figure of the task's verdict file that `--recorded` wrote (the run's own verdicts), or why there is none."""
    path = rec / f"{rel}.json"
    if not path.is_file():
        return "none written"
    vf = json.loads(path.read_text())
    fig = next(f for f in vf["summary"]["figures"] if f["name"] == "accuracy_all")
    return f"{100 * fig['value']:.2f}% ({fig['correct']}/{fig['total']}, {vf['environment']['recorded_by']})"


def trial(folder: Path, source: str, work: Path) -> list[str]:
    out = work / folder.name
    rec = work / f"{folder.name}.recorded"
    # --on-bad-row record: a file the importer refuses is listed, and the folder's other tasks still compared.
    # --recorded with one benchmark for every task: each task's own verdicts as a verdict file (the label is not
    # the spec it is graded by below; the rows are the harness's metric either way).
    r = _run("import", "lm-eval", str(folder), "-o", str(out), "--on-bad-row", "record", "--recorded", str(rec),
             "--benchmark", "selected_choice")
    rows = [f"| {source} | - | - | - | - | - | not imported: {line.split(': ', 1)[1]} |"
            for line in r.stdout.splitlines() if line.startswith("  not imported")]
    if r.returncode == 2:
        return [*rows, f"| {source} | - | - | - | - | - | refused: "
                       f"{r.stderr.strip().removeprefix('audit: error: ')} |"]
    for manifest in sorted(out.rglob("manifest.json")):
        pkg = manifest.parent
        man = json.loads(manifest.read_text())
        task = man["provenance"]["extra"]["import"].get("task", pkg.name)
        checks = man["provenance"]["extra"]["import"].get("cross_check", {}).get("checks", [])
        n = man["provenance"]["extra"]["import"]["documents"]
        spec = _spec(pkg, task)
        verdicts = work / f"{pkg.name}-{abs(hash(str(pkg)))}.json"
        name, tool, where = _tool_metric(pkg)
        rel = pkg.relative_to(out).as_posix()
        recorded = _recorded(rec, rel)
        if spec is None:
            rows.append(f"| {source} | {rel} | {task}, n={n} | {name} {100 * (tool or 0):.2f}% | {recorded} | - | not "
                        f"compared: no audit spec grades {task} |")
            continue
        g = _run("grade", str(pkg), "--benchmark", spec, "-o", str(verdicts), "-q")
        if g.returncode != 0:
            ours, diff = f"grade failed: {g.stderr.strip()}", "-"
        else:
            vf = json.loads(verdicts.read_text())
            fig = next(f for f in vf["summary"]["figures"] if f["name"] == "accuracy_all")
            ours = f"{100 * fig['value']:.2f}% ({fig['correct']}/{fig['total']}, {spec})"
            diff = "-" if tool is None else f"{100 * (fig['value'] - tool):+.2f} pt"
        failed = [c["what"] for c in checks if c["ok"] is False]
        note = ("cross-check MISMATCH: " + ", ".join(failed)) if failed else \
            ("cross-check passed" if any(c["ok"] for c in checks) else "no results file: not cross-checked")
        tool_s = "-" if tool is None else f"{name} {100 * tool:.2f}% ({where})"
        rows.append(f"| {source} | {rel} | {task}, n={n} | {tool_s} | {recorded} | {ours} | {diff}; {note} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", metavar="DIR=SOURCE@COMMIT[:PATH]")
    args = ap.parse_args()
    print("| source@commit | package | task, n | tool's metric | its verdict file (--recorded) | audit's figure | "
          "difference |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.folders:
            folder, _, source = spec.partition("=")
            for row in trial(Path(folder), source or folder, Path(tmp)):
                print(row)


if __name__ == "__main__":
    main()
