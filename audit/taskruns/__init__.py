"""Agentic task runs: K repetitions of a system over a benchmark's tasks, one row per trial.

Modules, one job each:
- `models`: the trial and run rows (`task_trial_row.v1`, `task_run_row.v1`);
- `formats`: the harnesses' files read into rows, pure functions from bytes (Terminal-Bench, SWE-bench run
  and instance reports, τ-bench, a mapped table);
- `figures`: the numbers (rates over the benchmark's task count, the mean over K with 2·sd/√K and SE,
  pass@k, pass^k, both denominator policies, throughput with its trap);
- `compare`: two arms paired by task (per-task duration and per-turn ratios, geometric mean with a t
  interval on the logs and a seeded bootstrap), and outcome changes between two packages;
- `render`: the words for all of them.
"""
