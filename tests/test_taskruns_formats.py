"""The task-run format readers (audit.taskruns.formats), on real public files and on records of their shape.

Real files: τ-bench's committed gpt-4o airline results (trimmed copy, MIT, tests/data/taskruns); the
Terminal-Bench leaderboard runs and Multi-SWE-bench run reports under $AUDIT_REALFILES (no licence: not
committed; those tests skip where the files are absent). Each is checked against the producing tool's own
published figure.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from audit.taskruns import figures, formats

DATA = Path(__file__).parent / "data" / "taskruns"
TAU = DATA / "tau_bench_gpt-4o-airline.trimmed.json"
REAL = Path(os.environ.get("AUDIT_REALFILES", "/work/realfiles/runs"))


def _needs(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"real file not here: {path}")
    return path


def _tb(run: Path) -> formats.Parsed:
    return formats.terminal_bench((run / "results.json").read_bytes(), (run / "run_metadata.json").read_bytes(),
                                  str(run / "results.json"), str(run / "run_metadata.json"))


# --------------------------------------------------------------------------- real files, against their own figures


def test_tau_bench_airline_gpt4o_reproduces_the_readme_pass_hat_k():
    p = formats.tau_bench(TAU.read_bytes(), TAU.name, "tc-gpt-4o-airline", "tau-bench-airline")
    formats.check_keys(p)
    assert (len(p.trials), p.bad) == (200, [])
    s = figures.summarize(p.runs, p.trials)
    # README, Airline, "TC (gpt-4o)": Pass^1..4 = 0.420, 0.273, 0.220, 0.200
    assert [round(k.pass_hat_k, 3) for k in s.pass_k] == [0.420, 0.273, 0.220, 0.200]
    assert [r.counted.resolved for r in s.repetitions] == [21, 22, 20, 21]
    assert s.runs[0].task_count_source == "tasks seen" and s.tasks == 50
    assert all(t.turns is not None and t.turns > 0 for t in p.trials)


TB_DROID_GPT5 = [("tb_rc2_g5_1", 39), ("tb_rc2_g5_2", 45), ("tb_rc2_g5_3", 39), ("tb_rc2_g5_4", 47),
                 ("tb_rc2_g5_5", 40)]


def test_terminal_bench_droid_gpt5_five_runs_mean_is_the_published_52_5():
    root = _needs(REAL / "tbench" / "droid_gpt-5")
    p = formats.Parsed()
    for run, _ in TB_DROID_GPT5:
        p.extend(_tb(root / run))
    formats.check_keys(p)
    assert p.bad == [] and len(p.trials) == 400
    s = figures.summarize(p.runs, p.trials, p.recorded)
    assert [(r.run_id, r.resolved) for r in s.repetitions] == TB_DROID_GPT5
    # Factory's post and the leaderboard: Droid + GPT-5 (medium) 52.5% on terminal-bench-core 0.1.1
    (mean,) = s.mean
    assert (mean.policy, round(100 * mean.mean, 2)) == ("counted", 52.5)
    assert round(100 * mean.half_width_2sd, 2) == 4.18
    for fig in s.runs:  # each run's own accuracy field, recomputed
        assert fig.resolved_rate.value == fig.recorded["accuracy"]
    # total_input_tokens 0 is "not measured": read as null, and said
    assert sum(t.tokens_in is None for t in p.trials) >= 347
    assert p.all_notes()[0] == "347 trials in 5 files wrote total_input_tokens 0, read as null (not measured)"


def test_terminal_bench_orchestrator_one_run_of_five_attempts_reproduces_its_pass_at_k():
    run = _needs(REAL / "tbench" / "orchestrator_claude-4.1-opus")
    p = _tb(run)
    formats.check_keys(p)
    assert (len(p.trials), p.bad) == (400, [])
    s = figures.summarize(p.runs, p.trials, p.recorded)
    rec = s.runs[0].recorded
    assert s.runs[0].resolved_rate.value == rec["accuracy"] == 0.3975
    got = {str(k.k): k.pass_at_k for k in s.pass_k}
    for k, v in rec["pass_at_k"].items():  # {'2': 0.48625, '4': 0.56, '5': 0.575}
        assert got[k] == pytest.approx(v, abs=1e-12)
    assert len(s.repetitions) == 5 and s.runs[0].censored == 167
    assert s.outcomes == {"error": 18, "resolved": 159, "unresolved": 223}


MSB = [("20240825_SWE-agent_deepseek-chat-v2", 9), ("20240825_SWE-agent_deepseek-coder-v2", 7),
       ("20240825_SWE-agent_doubao-pro-128k", 1), ("20240825_SWE-agent_gpt-4o-2024-05-13", 6),
       ("20240825_SWE-agent_gpt-4o-mini-2024-07-18", 1)]


@pytest.mark.parametrize(("name", "resolved"), MSB)
def test_multi_swe_bench_java_verified_reads_over_91(name, resolved):
    f = _needs(REAL / "multi-swe-bench" / name / "results.json")
    p = formats.swe_bench_report(f.read_bytes(), str(f), name, "multi-swe-bench-java-verified")
    formats.check_keys(p)
    assert p.bad == []
    s = figures.summarize(p.runs, p.trials, p.recorded)
    fig = s.runs[0]
    # the leaderboard ranks by len(resolved) over the 91 instances of index.json
    assert (fig.resolved_rate.resolved, fig.resolved_rate.denominator) == (resolved, 91)
    assert fig.recorded["resolved_instances"] == resolved


def test_multi_swe_bench_one_of_91_submitted_reads_1_of_91_never_1_of_1():
    name = "20240825_SWE-agent_gpt-4o-mini-2024-07-18"
    f = _needs(REAL / "multi-swe-bench" / name / "results.json")
    p = formats.swe_bench_report(f.read_bytes(), str(f), name)
    s = figures.summarize(p.runs, p.trials, p.recorded)
    fig = s.runs[0]
    assert (fig.coverage, fig.resolved_rate.value, fig.left_out_rate.denominator) == (1, 1 / 91, 91)
    assert s.exclusions == {"not_submitted": 90}
    assert any("1 of 91 tasks have a trial" in n for n in s.notes)


# --------------------------------------------------------------------------- records of each shape


def _tb_doc(*trials: dict) -> bytes:
    return json.dumps({"id": "r", "results": list(trials)}).encode()


def _trial(**kw: object) -> dict:
    base = {"task_id": "hello-world", "trial_name": "hello-world.1-of-1.r", "is_resolved": True,
            "failure_mode": "unset", "total_input_tokens": 10, "total_output_tokens": 5,
            "trial_started_at": "2025-09-24T00:32:51+00:00", "trial_ended_at": "2025-09-24T00:33:51+00:00"}
    base.update(kw)
    return base


BAD_TB = [
    ("ends-before-start", _trial(trial_ended_at="2025-09-24T00:30:00+00:00"), None, "ended_at is before started_at"),
    ("naive-time", _trial(trial_started_at="2025-09-24T00:32:51"), "trial_started_at", "has no time zone"),
    ("resolved-word", _trial(is_resolved="yes"), "is_resolved", "expected true, false or null"),
    ("negative-tokens", _trial(total_input_tokens=-1), "total_input_tokens", "non-negative integer"),
    ("no-task", _trial(task_id=""), "task_id", "missing task id"),
]


@pytest.mark.parametrize(("case", "trial", "field", "words"), BAD_TB, ids=[c[0] for c in BAD_TB])
def test_terminal_bench_bad_trial_is_one_line_naming_file_row_and_field(case, trial, field, words):
    p = formats.terminal_bench(_tb_doc(_trial(task_id="ok"), trial), None, "runs/r/results.json")
    assert len(p.trials) == 1
    (bad,) = p.bad
    assert (bad.label, bad.row, bad.field) == ("runs/r/results.json", 2, field)
    assert words in bad.message and bad.line().startswith("runs/r/results.json: row 2: ")


def test_terminal_bench_timeouts_are_censored_and_errors_are_errors():
    p = formats.terminal_bench(_tb_doc(_trial(task_id="a", is_resolved=False, failure_mode="agent_timeout"),
                                       _trial(task_id="b", is_resolved=None, failure_mode="unknown_agent_error"),
                                       _trial(task_id="c", is_resolved=False, failure_mode="test_timeout")), None, "x")
    got = [(t.task_id, t.outcome, t.censored, t.failure_mode) for t in p.trials]
    assert got == [("a", "unresolved", True, "agent_timeout"), ("b", "error", False, "unknown_agent_error"),
                   ("c", "unresolved", False, "test_timeout")]
    assert p.trials[0].duration_s == 60.0


def test_a_trial_given_twice_is_a_bad_row_naming_the_first():
    p = formats.terminal_bench(_tb_doc(_trial(), _trial()), None, "r.json")
    formats.check_keys(p)
    assert len(p.trials) == 1
    assert p.bad[0].line() == ("r.json: row 2: field task_id: trial (task 'hello-world', run 'r', attempt 1) "
                               "repeats row 1")


def test_swe_bench_report_id_in_two_lists_and_counts_that_disagree_are_bad_rows():
    doc = {"total_instances": 3, "resolved_ids": ["a"], "unresolved_ids": ["a", "b"], "resolved_instances": 2}
    p = formats.swe_bench_report(json.dumps(doc).encode(), "report.json", "run")
    lines = [b.line() for b in p.bad]
    assert lines == ["report.json: row 1: field unresolved_ids: instance 'a' is also listed in resolved_ids",
                     "report.json: field resolved_instances: says 2 but resolved_ids lists 1"]


def test_swe_bench_instance_report():
    doc = {"django__django-1": {"patch_is_None": False, "patch_exists": True, "patch_successfully_applied": False,
                                "resolved": False, "tests_status": {}}}
    p = formats.swe_bench_instance(json.dumps(doc).encode(), "logs/django__django-1/report.json", "run")
    (t,) = p.trials
    assert (t.task_id, t.outcome, t.failure_mode) == ("django__django-1", "unresolved", "patch_failed_to_apply")


BAD_TAU = [
    ({"task_id": 1, "trial": 0, "reward": 1.5}, "reward", "must be in [0, 1], got 1.5"),
    ({"task_id": 1, "trial": 0, "reward": "1"}, "reward", "expected a number"),
    ({"task_id": 1, "trial": -1, "reward": 0.0}, "trial", "non-negative integer"),
    ({"trial": 0, "reward": 0.0}, "task_id", "missing task id"),
]


@pytest.mark.parametrize(("record", "field", "words"), BAD_TAU)
def test_tau_bench_bad_records(record, field, words):
    p = formats.tau_bench(json.dumps([{"task_id": 0, "trial": 0, "reward": 1.0}, record]).encode(), "t.json", "r")
    (bad,) = p.bad
    assert (bad.row, bad.field) == (2, field) and words in bad.message


def test_tau_bench_success_is_within_1e_6_of_one():
    recs = [{"task_id": 0, "trial": 0, "reward": 1 - 1e-7}, {"task_id": 0, "trial": 1, "reward": 0.999}]
    p = formats.tau_bench(json.dumps(recs).encode(), "t.json", "r")
    assert [t.outcome for t in p.trials] == ["resolved", "unresolved"]
    assert p.trials[1].reward == 0.999


def test_table_maps_columns_and_refuses_unknown_words():
    records = [(1, {"task": "t1", "run": "a", "status": "PASS", "secs": "12.5", "excl": None}),
               (2, {"task": "t2", "run": "a", "status": "excluded", "excl": "context_overflow", "secs": "3"}),
               (3, {"task": "t3", "run": "a", "status": "maybe", "secs": "1"}),
               (4, {"task": "t4", "run": "a", "status": "excluded", "excl": "bored", "secs": "1"})]
    maps = {"task_id": "task", "run_id": "run", "outcome": "status", "duration_s": "secs", "exclusion": "excl"}
    p = formats.table(records, "runs.csv", maps, {"task_count": 4})
    assert [(t.task_id, t.outcome, t.exclusion, t.duration_s) for t in p.trials] == [
        ("t1", "resolved", None, 12.5), ("t2", "excluded", "context_overflow", 3.0)]
    assert [b.line() for b in p.bad] == [
        "runs.csv: row 3: field status: unknown outcome 'maybe' (expected resolved, unresolved, excluded, error)",
        "runs.csv: row 4: field excl: unknown exclusion reason 'bored' (expected context_overflow, time_limit, "
        "infrastructure, harness_error, not_submitted)"]
    assert p.runs[0].task_count == 4


def test_table_refuses_a_map_onto_no_field():
    p = formats.table([], "x.csv", {"speed": "s"})
    assert p.bad[0].line().startswith("x.csv: field speed: not a trial field")


def test_malformed_json_is_one_bad_row_for_the_file():
    p = formats.tau_bench(b'[{"task_id": 1, "task_id": 2}]', "t.json", "r")
    assert [b.line() for b in p.bad] == ["t.json: field task_id: duplicate key in a JSON object"]


def test_table_reads_times_as_iso_or_unix_seconds_and_computes_the_duration():
    records = [(1, {"task_id": "t", "run_id": "a", "outcome": "resolved", "started_at": "2026-05-01T00:00:00Z",
                    "ended_at": 1777593660}),
               (2, {"task_id": 7, "run_id": "a", "outcome": "resolved", "started_at": "1777593600"})]
    p = formats.table(records, "x.jsonl", {})
    assert p.bad == []
    assert [(t.task_id, t.started_at, t.duration_s) for t in p.trials] == [("t", 1777593600.0, 60.0),
                                                                           ("7", 1777593600.0, None)]


def test_one_column_may_fill_two_fields():
    p = formats.table([(1, {"id": "t", "outcome": "resolved"})], "x.jsonl", {"task_id": "id", "run_id": "id"})
    assert [(t.task_id, t.run_id) for t in p.trials] == [("t", "t")]
