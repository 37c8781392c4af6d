"""The lab note's two agentic packages, written for the demo (run once; the output is committed).

Every task id, duration and count here was written for this demo; none comes from DeepSWE or SWE-bench.
They reproduce the note's two agentic claims and what recomputing them shows:

- `deepswe-paired/`: eight tasks, run once without speculation (A) and once with MTP k=3 (B), on different
  days, eight tasks on eight workers. The per-task durations give a geometric-mean ratio of about 1.52×; the
  note's "13.2 → 18.5 tasks per hour (+40%)" is each run's task count over its wall clock, which with
  workers ≥ tasks is its slowest task: it measures one task.
- `deepswe-k6/`: six repetitions at T = 1.0 (the agent ignores the seed) over 111 tasks, 13 trials excluded
  (8 whose history outgrew the 262,144-token context, 3 at their time limit, 2 lost to the infrastructure),
  one repetition mixing two serving setups (29 tasks at 20 workers without MTP, 82 at 8 workers with MTP).

    python scripts/make_demo_agentic.py
"""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path

from audit.models import Provenance
from audit.taskruns.models import RunRow, TrialRow
from audit.taskruns.package import write

DAY_A = 1_777_593_600.0  # 2026-05-01 00:00 UTC
DAY_B = DAY_A + 2 * 86_400
PAIRED_TASKS = [f"demo-swe-{i:02d}" for i in range(1, 9)]

# Per-task ln(A/B) and A's duration (s); B's duration is A / ratio. Slowest tasks: 2,180 s in A, 1,555 s in B.
_LOG_RATIOS = [0.338, 0.62, 0.30, 0.55, 0.17, 0.49, 0.44, 0.442]
_A_SECONDS = [2180.0, 1710.0, 940.0, 1320.0, 760.0, 1480.0, 1150.0, 1010.0]
_A_TURNS = [61, 48, 29, 40, 25, 44, 35, 31]
_B_TURNS = [66, 52, 31, 43, 27, 47, 38, 34]
_RESOLVED_A = [True, False, True, True, False, True, True, False]
_RESOLVED_B = [True, True, True, True, False, True, False, False]


def paired_arms() -> tuple[tuple[list[RunRow], list[TrialRow]], tuple[list[RunRow], list[TrialRow]]]:
    """Arm A (no speculation) and arm B (MTP k=3): their run and trial rows."""
    arms = []
    for arm, day, spec, turns, resolved in (("baseline", DAY_A, "none", _A_TURNS, _RESOLVED_A),
                                            ("mtp-k3", DAY_B, "mtp k=3", _B_TURNS, _RESOLVED_B)):
        trials = []
        for i, task in enumerate(PAIRED_TASKS):
            secs = _A_SECONDS[i] if arm == "baseline" else round(_A_SECONDS[i] / math.exp(_LOG_RATIOS[i]), 1)
            start = day + 0.1 * i  # all eight start together: eight workers
            trials.append(TrialRow(task_id=task, run_id=arm, attempt=0,
                                   outcome="resolved" if resolved[i] else "unresolved", started_at=start,
                                   ended_at=start + secs, duration_s=secs, turns=turns[i], engine="vllm 0.26.0",
                                   speculative=spec, workers=8))
        wall = max(t.ended_at or 0.0 for t in trials) - day + 1.5  # the run ends when its slowest task does
        run = RunRow(run_id=arm, benchmark="deepswe-demo", task_count=len(PAIRED_TASKS), attempts=1,
                     agent="demo-agent (fictional)", model="demo-model (fictional)", workers=8, started_at=day,
                     ended_at=day + wall, seed_ignored=True)
        arms.append(([run], trials))
    return arms[0], arms[1]


K6_TASKS = [f"demo-k6-{i:03d}" for i in range(1, 112)]
_K6_RESOLVED = [70, 68, 73, 71, 66, 74]
"""Resolved tasks of each repetition (of 111)."""
_K6_EXCLUDED: list[list[tuple[str, str]]] = [
    [("context_overflow", "context_length_exceeded"), ("context_overflow", "context_length_exceeded")],
    [("context_overflow", "context_length_exceeded"), ("time_limit", "agent_timeout")],
    [("context_overflow", "context_length_exceeded"), ("infrastructure", "sandbox_lost"),
     ("time_limit", "agent_timeout")],
    [("context_overflow", "context_length_exceeded")],
    [("context_overflow", "context_length_exceeded"), ("context_overflow", "context_length_exceeded"),
     ("infrastructure", "sandbox_lost")],
    [("context_overflow", "context_length_exceeded"), ("time_limit", "agent_timeout")],
]
"""The excluded trials of each repetition: the closed reason and the harness's word."""
MIXED_REPETITION = 3
"""The repetition that ran 29 tasks at 20 workers without MTP and 82 at 8 workers with MTP."""


def k6_runs() -> tuple[list[RunRow], list[TrialRow]]:
    """Six repetitions over 111 tasks, with exclusions and one mixed repetition."""
    runs, trials = [], []
    for rep in range(6):
        run_id = f"rep-{rep + 1}"
        start = DAY_A + 7 * 86_400 + rep * 86_400
        excluded = _K6_EXCLUDED[rep]
        for i, task in enumerate(K6_TASKS):
            # Each repetition excludes other tasks (13 apart); of the rest, the first `resolved` pass.
            first = (rep * 13) % (len(K6_TASKS) - 3)
            j = i - first if first <= i < first + len(excluded) else -1
            mixed = rep + 1 == MIXED_REPETITION and i < 29
            setup = ({"speculative": "none", "workers": 20} if mixed else {"speculative": "mtp k=3", "workers": 8})
            secs = 300.0 + (i * 37) % 900
            common = dict(task_id=task, run_id=run_id, attempt=0, started_at=start + i * 60,
                          ended_at=start + i * 60 + secs, duration_s=secs, turns=20 + i % 30,
                          engine="vllm 0.26.0", **setup)
            if j >= 0:
                reason, word = excluded[j]
                trials.append(TrialRow(outcome="excluded", exclusion=reason, exclusion_source=word,  # type: ignore[arg-type]
                                       censored=reason == "time_limit", **common))  # type: ignore[arg-type]
            else:
                n_before = i - (len(excluded) if i >= first + len(excluded) else 0)
                trials.append(TrialRow(outcome="resolved" if n_before < _K6_RESOLVED[rep] else "unresolved",
                                       **common))  # type: ignore[arg-type]
        runs.append(RunRow(run_id=run_id, benchmark="deepswe-demo", task_count=len(K6_TASKS), attempts=1,
                           agent="demo-agent (fictional)", model="demo-model (fictional)", workers=8,
                           started_at=start, ended_at=start + 111 * 60 + 1200, seed_ignored=True,
                           time_limit_s=3600.0))
    return runs, trials


ROOT = Path(__file__).resolve().parent.parent / "packages" / "demo-lab-note" / "agentic"
PACKAGES = {"deepswe-baseline": "demo-deepswe-baseline", "deepswe-mtp-k3": "demo-deepswe-mtp-k3",
            "deepswe-k6": "demo-deepswe-k6"}


def _provenance(what: str) -> Provenance:
    return Provenance(model="demo-model (fictional)", engine="vllm", engine_version="0.26.0", hardware="none",
                      notes=f"Authored for the audit demo ({what}); every task id, duration and count is invented. "
                            f"Reproduces the agentic claims of a lab's published note, not its data.")


def main() -> None:
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1795910400")
    if ROOT.exists():
        shutil.rmtree(ROOT)
    ROOT.mkdir(parents=True)
    (ra, ta), (rb, tb) = paired_arms()
    write(ROOT / "deepswe-baseline", ra, ta, _provenance("paired tasks, no speculation"),
          package_id=PACKAGES["deepswe-baseline"])
    write(ROOT / "deepswe-mtp-k3", rb, tb, _provenance("paired tasks, MTP k=3"),
          package_id=PACKAGES["deepswe-mtp-k3"])
    runs, trials = k6_runs()
    write(ROOT / "deepswe-k6", runs, trials, _provenance("six repetitions at T=1.0"),
          package_id=PACKAGES["deepswe-k6"])
    print(f"wrote {ROOT}")


if __name__ == "__main__":
    main()
