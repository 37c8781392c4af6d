"""`audit import task-runs`, `audit show` of a task-runs package, and the bad-input rules (exact output, exit
codes, nothing half-written)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from audit.taskruns.package import open_task_runs

DATA = Path(__file__).parent / "data" / "taskruns"
TAU = DATA / "tau_bench_gpt-4o-airline.trimmed.json"


def _tb_run(root: Path, name: str, trials: list[dict], **meta: object) -> Path:
    run = root / name
    run.mkdir(parents=True)
    resolved = sum(t.get("is_resolved") is True for t in trials)
    (run / "results.json").write_text(json.dumps({"id": name, "results": trials, "n_resolved": resolved,
                                                  "accuracy": resolved / 4}))
    (run / "run_metadata.json").write_text(json.dumps({
        "run_id": name, "dataset_name": "terminal-bench-core", "dataset_version": "0.1.1", "dataset_size": 4,
        "n_attempts": 1, "n_concurrent_trials": 2, "agent_name": "demo", "start_time": "2025-09-24T00:00:00+00:00",
        "end_time": "2025-09-24T01:00:00+00:00", **meta}))
    return run


def _trial(task: str, resolved: bool | None = True, start: str = "00:01:00", end: str = "00:11:00",
           mode: str = "unset", run: str = "r1") -> dict:
    return {"task_id": task, "trial_name": f"{task}.1-of-1.{run}", "is_resolved": resolved, "failure_mode": mode,
            "total_input_tokens": 0, "total_output_tokens": 0, "trial_started_at": f"2025-09-24T{start}+00:00",
            "trial_ended_at": f"2025-09-24T{end}+00:00"}


def test_import_tau_bench_and_show(cli, tmp_path):
    r = cli("import", "task-runs", TAU, "--benchmark", "tau-bench-airline", "--task-count", "50", "-o",
            tmp_path / "tau")
    assert (r.code, r.err) == (0, "")
    assert r.out.startswith(f"wrote {tmp_path / 'tau'}: task-runs package task-runs-tau-bench-airline-")
    assert r.out.endswith(", 200 trials of 1 run (tau-bench)\n")
    r = cli("show", tmp_path / "tau")
    assert r.code == 0
    assert r.out.splitlines()[-5:] == [
        "task runs  tau-bench-airline: 1 run, 50 tasks, 200 trials (resolved 84, unresolved 116)",
        "run        tau_bench_gpt-4o-airline.trimmed: resolved 84/200 = 42.00% (4 attempts)",
        "mean       42.00% ± 1.63 (2·sd/√K, K=4); se 0.82; t 95% [39.40%, 44.60%]",
        "pass@k     k=1 42.00%  k=2 56.67%  k=3 66.00%  k=4 72.00%",
        "pass^k     k=1 42.00%  k=2 27.33%  k=3 22.00%  k=4 20.00%",
    ]
    assert cli("validate", tmp_path / "tau").code == 0


def test_terminal_bench_submission_folder_of_runs(cli, tmp_path):
    sub = tmp_path / "submission"
    _tb_run(sub, "r1", [_trial("a"), _trial("b", False, mode="agent_timeout"), _trial("c", None)])
    _tb_run(sub, "r2", [_trial("a", run="r2"), _trial("b", run="r2"), _trial("c", False, run="r2")])
    r = cli("import", "task-runs", sub, "-o", tmp_path / "pkg")
    assert r.code == 0, r.err
    assert r.out.splitlines()[1:] == ["  note: 6 trials in 2 files wrote total_input_tokens 0, read as null "
                                      "(not measured)",
                                      "  note: 6 trials in 2 files wrote total_output_tokens 0, read as null "
                                      "(not measured)"]
    with open_task_runs(tmp_path / "pkg") as v:
        assert [(f.run_id, f.resolved_rate.resolved, f.resolved_rate.denominator) for f in v.summary.runs] == [
            ("r1", 1, 4), ("r2", 2, 4)]
        assert v.summary.runs[0].coverage == 3
        assert all(t.tokens_in is None for t in v.trials)
        assert v.extra.recorded["r1"]["accuracy"] == 0.25


def test_a_trial_that_ends_before_it_starts_is_one_line_and_nothing_is_written(cli, tmp_path):
    run = _tb_run(tmp_path, "r1", [_trial("a"), _trial("b", start="00:30:00", end="00:10:00")])
    r = cli("import", "task-runs", run, "-o", tmp_path / "pkg")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {run / 'results.json'}: row 2: ended_at is before started_at "
                     f"(--on-bad-row record leaves it out)\n")
    assert not (tmp_path / "pkg").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".pkg")]


def test_on_bad_row_record_leaves_it_out_and_lists_it(cli, tmp_path):
    run = _tb_run(tmp_path, "r1", [_trial("a"), _trial("b", start="00:30:00", end="00:10:00")])
    r = cli("import", "task-runs", run, "-o", tmp_path / "pkg", "--on-bad-row", "record")
    assert r.code == 0, r.err
    assert "1 trials of 1 run (terminal-bench), 1 bad records left out (listed in the provenance)" in r.out
    with open_task_runs(tmp_path / "pkg") as v:
        assert v.extra.bad_rows == [{"file": str(run / "results.json"), "row": 2, "field": None,
                                     "message": "ended_at is before started_at"}]
        assert (v.summary.runs[0].resolved_rate.resolved, v.summary.runs[0].resolved_rate.denominator) == (1, 4)
    shown = cli("show", tmp_path / "pkg").out
    assert "1 bad records left out at import (--on-bad-row record; listed in provenance.extra.bad_rows)" in shown


TABLE_HEAD = "task,run,outcome,reward,secs\n"


def _table(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "trials.csv"
    p.write_text(TABLE_HEAD + body)
    return p


def _import_table(cli, tmp_path, src):
    return cli("import", "task-runs", src, "--format", "table", "--map", "task_id=task", "--map", "run_id=run",
               "--map", "duration_s=secs", "--task-count", "3", "-o", tmp_path / "pkg")


BAD_TABLE = [
    ("t1,a,resolved,1,10\nt1,a,unresolved,0,12\n", "row 2: field task_id: trial (task 't1', run 'a', attempt 0) "
                                                   "repeats row 1"),
    ("t1,a,resolved,1.5,10\n", "row 1: field reward: reward must be in [0, 1], got 1.5"),
    ("t1,a,solved,1,10\n", "row 1: field outcome: unknown outcome 'solved' (expected resolved, unresolved, "
                           "excluded, error)"),
    ("t1,a,resolved,1,-3\n", "row 1: field secs: Input should be greater than or equal to 0"),
]


def test_bad_table_rows_are_one_line_naming_file_row_and_field(cli, tmp_path):
    for body, line in BAD_TABLE:
        src = _table(tmp_path, body)
        r = _import_table(cli, tmp_path, src)
        assert (r.code, r.out) == (2, ""), body
        assert r.err == f"audit: error: {src}: {line} (--on-bad-row record leaves it out)\n", body
        assert not (tmp_path / "pkg").exists()


def test_table_import_counts_over_the_task_count(cli, tmp_path):
    src = _table(tmp_path, "t1,a,resolved,1,10\nt2,a,unresolved,0,12\n")
    r = _import_table(cli, tmp_path, src)
    assert r.code == 0, r.err
    with open_task_runs(tmp_path / "pkg") as v:
        assert (v.summary.runs[0].resolved_rate.resolved, v.summary.runs[0].resolved_rate.denominator) == (1, 3)
        assert [t.duration_s for t in v.trials] == [10.0, 12.0]


def test_a_tampered_summary_is_refused(cli, tmp_path):
    assert cli("import", "task-runs", TAU, "-o", tmp_path / "tau").code == 0
    pkg = tmp_path / "tau"
    summary = json.loads((pkg / "summary.json").read_text())
    summary["runs"][0]["resolved_rate"]["resolved"] = 99
    (pkg / "summary.json").write_text(json.dumps(summary, indent=2))
    assert cli("show", pkg).code != 0


def test_sources_of_two_formats_are_refused(cli, tmp_path):
    run = _tb_run(tmp_path / "tb", "r1", [_trial("a")])
    shutil.copy(TAU, tmp_path / "tau.json")
    r = cli("import", "task-runs", run, tmp_path / "tau.json", "-o", tmp_path / "pkg")
    assert r.code == 2
    assert "the sources are in different formats (tau-bench, terminal-bench); import them apart" in r.err


def _demo_arms(tmp_path: Path) -> tuple[Path, Path]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
    import make_demo_agentic as demo

    from audit.models import Provenance
    from audit.taskruns.package import write

    (ra, ta), (rb, tb) = demo.paired_arms()
    write(tmp_path / "baseline", ra, ta, Provenance(notes="demo"))
    write(tmp_path / "mtp", rb, tb, Provenance(notes="demo"))
    return tmp_path / "baseline", tmp_path / "mtp"


def test_compare_runs_prints_the_ratio_and_the_retraction(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _demo_arms(tmp_path)
    r = cli("compare-runs", "baseline", "mtp")
    assert (r.code, r.err) == (0, "")
    lines = r.out.splitlines()
    assert lines[0] == ("compare-runs  A baseline (1 run) vs B mtp (1 run), by duration: ratio A/B per task, "
                        "each the median over its repetitions")
    assert lines[9] == ("geomean    1.52× (t 95% 1.35–1.72 on the logs, n=8; bootstrap 95% 1.38–1.66 (seed 0, "
                        "10,000 resamples))")
    assert lines[13:15] == [
        "tasks/hour A 13.2 (8 tasks, 8 workers, wall 2182 s) → B 18.5 (8 tasks, 8 workers, wall 1556 s): +40%",
        "           not a throughput figure: with workers ≥ tasks every task starts at once and a run's wall clock "
        "is its slowest task, so the change measures one task"]
    assert lines[15].startswith("warning    the arms ran on different days (2026-05-01 and 2026-05-03)")
    r = cli("compare-runs", "baseline", "mtp", "--by", "turns", "--format", "json")
    doc = json.loads(r.out)
    assert (doc["by"], round(doc["ratio"]["geometric_mean"], 2), doc["throughput_bound"]) == ("turns", 1.64, True)


def test_diff_of_a_rescored_task_runs_package_lists_the_changed_trials(cli, tmp_path):
    from audit.models import Provenance
    from audit.taskruns.package import write

    base, _ = _demo_arms(tmp_path)
    with open_task_runs(base) as v:
        runs, trials = v.runs, v.trials
    flipped = [t.model_copy(update={"outcome": "resolved"}) if t.task_id == "demo-swe-05" else t for t in trials]
    write(tmp_path / "rescored", runs, flipped, Provenance(notes="rescored"))
    r = cli("diff", base, tmp_path / "rescored")
    assert r.code == 1, r.err
    assert r.out.splitlines()[1:] == [
        "run        baseline: resolved 5/8 → 6/8 (+12.50 points)",
        "changed    1 trials (OLD → NEW):",
        "  demo-swe-05 [baseline attempt 0]               unresolved → resolved         gained"]
    assert cli("diff", base, base).code == 0


def test_a_file_of_another_format_is_refused_whole_even_under_record(cli, tmp_path):
    r = cli("import", "task-runs", TAU, "--format", "swe-bench", "--on-bad-row", "record", "-o", tmp_path / "pkg")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {TAU}: field total_instances: not a SWE-bench run report (no total_instances)\n"
    assert not (tmp_path / "pkg").exists()


def test_table_importer_points_a_tau_bench_file_to_task_runs(cli, tmp_path):
    r = cli("import", "table", TAU, "--kind", "responses", "-o", tmp_path / "pkg")
    assert r.code == 2
    assert r.err == (f"audit: error: {TAU}: this looks like a τ-bench results file (task_id, trial and reward per "
                     f"trial); use `audit import task-runs {TAU} --format tau-bench -o OUT`\n")


def test_a_results_file_that_is_a_fifo_is_refused_not_waited_on(cli, tmp_path):
    import os

    run = tmp_path / "r1"
    run.mkdir()
    os.mkfifo(run / "results.json")
    (run / "run_metadata.json").write_text("{}")
    r = cli("import", "task-runs", run, "--format", "terminal-bench", "-o", tmp_path / "pkg")
    assert r.code == 2 and not (tmp_path / "pkg").exists()
    assert r.err == f"audit: error: {run}: no Terminal-Bench run here (results.json with run_metadata.json)\n"
    r = cli("import", "task-runs", run / "results.json", "--format", "tau-bench", "-o", tmp_path / "pkg")
    assert r.code == 2 and r.err.startswith(f"audit: error: {run / 'results.json'}: ")


def test_a_source_rewritten_after_it_was_hashed_is_refused(cli, tmp_path, monkeypatch):
    import audit.importers.task_runs as imp

    real = imp.read_document

    def swapped(path, *a, **kw):  # the bytes read after the hash are not the bytes hashed
        data, err = real(path, *a, **kw)
        return (data.replace(b'"reward":1.0', b'"reward":0.0', 1) if data else data), err

    monkeypatch.setattr(imp, "read_document", swapped)
    r = cli("import", "task-runs", TAU, "-o", tmp_path / "pkg")
    assert (r.code, r.err) == (2, f"audit: error: {TAU}: the file changed since it was hashed: run again\n")
    assert not (tmp_path / "pkg").exists()


def test_a_trial_of_no_run_is_refused_on_write_and_on_read(cli, tmp_path):
    import pytest

    from audit.errors import AuditError
    from audit.models import Provenance
    from audit.packages import PackageWriter
    from audit.taskruns.models import RunRow, TrialRow
    from audit.taskruns.package import write

    runs = [RunRow(run_id="a", task_count=2)]
    trials = [TrialRow(task_id="t", run_id="b", outcome="resolved")]
    with pytest.raises(AuditError, match="trial of task 't' names run 'b', which runs.jsonl does not list"):
        write(tmp_path / "pkg", runs, trials, Provenance())
    assert not (tmp_path / "pkg").exists()
    # Written past the writer (rows valid one by one, no summary to match): the reader refuses it too.
    with PackageWriter(tmp_path / "forged", kind="task-runs", provenance=Provenance()) as w:
        with w.rows("runs.jsonl", "task_run_row.v1") as sink:
            sink.write(runs[0])
        with w.rows("trials.jsonl", "task_trial_row.v1") as sink:
            sink.write(trials[0])
        w.add_text("summary.json", "{}")
    r = cli("show", tmp_path / "forged")
    assert r.code == 2
    assert r.err == (f"audit: error: {tmp_path / 'forged'}/trials.jsonl: trial of task 't' names run 'b', which "
                     f"runs.jsonl does not list\n")


def test_exclude_maps_a_harness_word_to_a_reason_and_shows_both_policies(cli, tmp_path):
    run = _tb_run(tmp_path, "r1", [_trial("a"), _trial("b", False, mode="context_length_exceeded"),
                                   _trial("c", True, mode="agent_timeout"), _trial("d", False)])
    r = cli("import", "task-runs", run, "--exclude", "context_length_exceeded=context_overflow",
            "--exclude", "agent_timeout=time_limit", "-o", tmp_path / "pkg")
    assert r.code == 0, r.err
    with open_task_runs(tmp_path / "pkg") as v:
        got = [(t.task_id, t.outcome, t.exclusion, t.exclusion_source) for t in v.trials]
        assert got == [("a", "resolved", None, None), ("b", "excluded", "context_overflow", "context_length_exceeded"),
                       ("c", "resolved", None, None), ("d", "unresolved", None, None)]  # a resolved trial stays
        assert [m.policy for m in v.summary.mean] == ["left_out", "counted"]
    shown = cli("show", tmp_path / "pkg").out
    assert "mean       excluded left out 66.67% (K=1: no spread from one repetition)" in shown
    r = cli("import", "task-runs", run, "--exclude", "agent_timeout=slow", "-o", tmp_path / "pkg2")
    assert (r.code, r.err) == (2, "audit: error: --exclude agent_timeout=slow: 'slow' is not an exclusion reason "
                                  "(expected context_overflow, time_limit, infrastructure, harness_error, "
                                  "not_submitted)\n")
