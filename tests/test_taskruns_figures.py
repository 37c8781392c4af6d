"""Task-run figures and paired comparison (audit.taskruns.figures, compare, render): tables of small cases
whose answers are worked by hand, and the demo's two agentic data sets (scripts/make_demo_agentic.py)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from audit import stats
from audit.taskruns import compare, figures, render
from audit.taskruns.models import RunRow, TrialRow

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import make_demo_agentic as demo  # noqa: E402


def _t(task: str, run: str = "r", attempt: int = 0, outcome: str = "resolved", **kw: object) -> TrialRow:
    return TrialRow(task_id=task, run_id=run, attempt=attempt, outcome=outcome, **kw)  # type: ignore[arg-type]


def test_the_labs_error_bar_is_2_sd_over_root_k():
    # The note's baseline, counted as failures: runs 61.47, 63.64, 66.06 -> 63.72 ± 2.65
    m = figures._mean("counted", [0.6147, 0.6364, 0.6606])
    assert (round(100 * m.mean, 2), round(100 * m.half_width_2sd, 2)) == (63.72, 2.65)
    assert m.se == pytest.approx(m.half_width_2sd / 2)


def test_denominator_is_the_task_count_and_both_policies_show_when_excluded():
    run = RunRow(run_id="r", task_count=10)
    trials = [_t("a"), _t("b"), _t("c", outcome="unresolved"),
              _t("d", outcome="excluded", exclusion="context_overflow", exclusion_source="ctx"),
              _t("e", outcome="excluded", exclusion="not_submitted")]
    s = figures.summarize([run], trials)
    (rep,) = s.repetitions
    # 2 resolved; 10 tasks; one exclusion a policy may leave out, one not-submitted that it may not
    assert (rep.counted.resolved, rep.counted.denominator) == (2, 10)
    assert (rep.left_out.resolved, rep.left_out.denominator) == (2, 9)
    assert [m.policy for m in s.mean] == ["left_out", "counted"]
    assert s.runs[0].coverage == 4
    assert any("4 of 10 tasks have a trial; the other 6 count as failures" in n for n in s.notes)
    lines = render.summary_lines(s)
    assert any(x.startswith("mean       excluded left out 22.22%") for x in lines)
    assert any(x.startswith("           excluded counted as failures 20.00%") for x in lines)


def test_no_exclusion_no_sensitivity_line():
    s = figures.summarize([RunRow(run_id="r", task_count=2)], [_t("a"), _t("b", outcome="error")])
    assert [m.policy for m in s.mean] == ["counted"]
    assert not any("left out" in x for x in render.summary_lines(s))


PASS_K = [  # (n, c) per task -> pass@k and pass^k at k = 1..n, by hand
    ([(4, 2)], {1: (0.5, 0.5), 2: (1 - 1 / 6, 1 / 6), 3: (1.0, 0.0), 4: (1.0, 0.0)}),
    ([(3, 3), (3, 0)], {1: (0.5, 0.5), 2: (0.5, 0.5), 3: (0.5, 0.5)}),
    ([(2, 1), (2, 2)], {1: (0.75, 0.75), 2: (1.0, 0.5)}),
]


@pytest.mark.parametrize(("tasks", "want"), PASS_K)
def test_pass_at_k_and_pass_hat_k(tasks, want):
    trials = [_t(f"t{i}", attempt=a, outcome="resolved" if a < c else "unresolved")
              for i, (n, c) in enumerate(tasks) for a in range(n)]
    got = {p.k: (p.pass_at_k, p.pass_hat_k) for p in figures._pass_k(trials)}
    assert got.keys() == want.keys()
    for k, (at, hat) in want.items():
        assert got[k] == pytest.approx((at, hat))
        assert at == pytest.approx(sum(stats.pass_at_k(n, c, k) for n, c in tasks) / len(tasks))


def test_mixed_setups_are_one_line():
    trials = [_t(f"a{i}", speculative="none", workers=20) for i in range(29)] + \
             [_t(f"b{i}", speculative="mtp k=3", workers=8) for i in range(82)]
    s = figures.summarize([RunRow(run_id="r", task_count=111)], trials)
    assert s.notes == ["run r mixes 2 serving setups: 82 trials engine unrecorded, speculative mtp k=3, 8 workers; "
                       "29 trials engine unrecorded, speculative none, 20 workers"]


def test_paired_ratio_geometric_mean_t_and_bootstrap():
    runs = [RunRow(run_id="r")]
    a = [_t(f"t{i}", duration_s=d) for i, d in enumerate([100.0, 200.0, 400.0])]
    b = [_t(f"t{i}", duration_s=d) for i, d in enumerate([50.0, 100.0, 400.0])]
    c = compare.compare(("A", runs, a), ("B", runs, b))
    assert [p.ratio for p in c.pairs] == [2.0, 2.0, 1.0]
    r = c.ratio
    assert r.geometric_mean == pytest.approx(4 ** (1 / 3))
    logs = [math.log(2), math.log(2), 0.0]
    se = stats.np.std(logs, ddof=1) / math.sqrt(3)
    t = stats._t_quantile(0.975, 2)
    assert (r.t_interval.low, r.t_interval.high) == pytest.approx(
        (math.exp(sum(logs) / 3 - t * se), math.exp(sum(logs) / 3 + t * se)))
    # the bootstrap is seeded: the same seed, the same interval; the resampled means lie within [1, 2]
    again = compare.compare(("A", runs, a), ("B", runs, b))
    assert again.ratio.bootstrap_interval == r.bootstrap_interval
    assert 1.0 <= r.bootstrap_interval.low <= r.bootstrap_interval.high <= 2.0


def test_censored_in_either_arm_is_left_out_and_said():
    runs = [RunRow(run_id="r")]
    a = [_t("t1", duration_s=100.0), _t("t2", duration_s=3600.0, censored=True, outcome="unresolved")]
    b = [_t("t1", duration_s=50.0), _t("t2", duration_s=1200.0)]
    c = compare.compare(("A", runs, a), ("B", runs, b))
    assert ([p.task_id for p in c.pairs], c.censored) == (["t1"], ["t2"])
    assert any("keeping them biases the ratio toward 1" in x for x in render.comparison_lines(c))


def test_per_task_figure_is_the_median_over_repetitions():
    runs = [RunRow(run_id="r1"), RunRow(run_id="r2"), RunRow(run_id="r3")]
    a = [_t("t", run=f"r{i}", duration_s=d) for i, d in enumerate([90.0, 300.0, 100.0], start=1)]
    b = [_t("t", run="r1", duration_s=50.0)]
    (pair,) = compare.compare(("A", runs, a), ("B", runs[:1], b)).pairs
    assert (pair.a, pair.a_trials, pair.ratio) == (100.0, 3, 2.0)


def test_by_turns_divides_each_trial_by_its_turns():
    runs = [RunRow(run_id="r")]
    a = [_t("t", duration_s=100.0, turns=10), _t("u", duration_s=100.0)]
    b = [_t("t", duration_s=100.0, turns=20), _t("u", duration_s=50.0, turns=5)]
    c = compare.compare(("A", runs, a), ("B", runs, b), by="turns")
    assert [(p.task_id, p.ratio) for p in c.pairs] == [("t", 2.0)]
    assert c.unmeasured == ["u"]


def test_outcome_changes_by_task_and_by_trial():
    a = [_t("t1"), _t("t2", outcome="unresolved"), _t("t3")]
    b = [_t("t1"), _t("t2"), _t("t3", outcome="excluded", exclusion="infrastructure")]
    got = [(c.key, c.a, c.b, c.direction) for c in compare.outcome_changes(a, b)]
    assert got == [("t2", "unresolved", "resolved", "gained"), ("t3", "resolved", "excluded (infrastructure)", "lost")]
    by_trial = compare.outcome_changes(a, b, by_trial=True)
    assert [c.key for c in by_trial] == ["t2 [r attempt 0]", "t3 [r attempt 0]"]


# --------------------------------------------------------------------------- the demo's data


def test_demo_paired_arms_the_ratio_and_the_plus_40_percent_trap():
    (ra, ta), (rb, tb) = demo.paired_arms()
    c = compare.compare(("baseline", ra, ta), ("mtp-k3", rb, tb))
    assert round(c.ratio.geometric_mean, 2) == 1.52 and c.ratio.n == 8
    assert round(compare.compare(("baseline", ra, ta), ("mtp-k3", rb, tb), by="turns").ratio.geometric_mean, 2) == 1.64
    (tpa,), (tpb,) = c.a.throughput, c.b.throughput
    assert (round(tpa.tasks_per_hour, 1), round(tpb.tasks_per_hour, 1)) == (13.2, 18.5)
    assert tpa.bound_by_slowest and tpb.bound_by_slowest
    # the +40% is the slowest task's ratio, not the tasks' geometric mean
    assert tpb.tasks_per_hour / tpa.tasks_per_hour == pytest.approx(tpa.wall_s / tpb.wall_s)
    lines = render.comparison_lines(c)
    assert "tasks/hour A 13.2 (8 tasks, 8 workers, wall 2182 s) → B 18.5 (8 tasks, 8 workers, wall 1556 s): +40%" \
        in lines
    assert any(x.startswith("warning    the arms ran on different days (2026-05-01 and 2026-05-03)") for x in lines)


def test_demo_k6_sensitivity_and_mixed_repetition():
    runs, trials = demo.k6_runs()
    s = figures.summarize(runs, trials)
    assert s.exclusions == {"context_overflow": 8, "infrastructure": 2, "time_limit": 3}
    left, counted = s.mean
    assert (left.policy, counted.policy) == ("left_out", "counted")
    assert left.mean > counted.mean
    assert [r.counted.resolved for r in s.repetitions] == [70, 68, 73, 71, 66, 74]
    assert any(n.startswith("run rep-3 mixes 2 serving setups: 82 trials") for n in s.notes)
