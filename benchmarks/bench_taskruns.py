"""Task runs at scale: 100 runs × 500 tasks (50,000 trials) imported and summarized, each a fresh process.

Target (issue 29): `audit import task-runs` of the table and `audit show` of the package (which validates it and
recomputes every figure from the rows) each under 5 s on 2 cores, with bounded memory. Baseline, in the same run:
a fresh Python that reads the same JSONL and `json.loads` every line (the least an importer must do), and one that
only starts (`python -c pass` with audit's imports). Figures are medians of --runs runs.

Run: .venv/bin/python benchmarks/bench_taskruns.py [--runs 3]

Measured (2 shared cores): at load 3.3, import 3.91 s wall (2.75 s CPU), show 2.89 s (2.70 s CPU), parse-only
0.26 s, interpreter and imports 0.89 s, peak 173 MB; at load 8.3, import 7.42 s wall (2.48 s CPU), show 7.01 s
(2.30 s CPU), parse-only 0.64 s: the CPU time stays under 3 s, the wall time follows the machine's load.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from _process import measure  # noqa: E402

AUDIT = str(Path(sys.executable).with_name("audit"))
RUNS, TASKS = 100, 500


def write_table(path: Path, seed: int = 0) -> int:
    """100 runs × 500 tasks of trials, as a harness's JSONL table (3% excluded, durations and turns)."""
    rng = random.Random(seed)
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for run in range(RUNS):
            for task in range(TASKS):
                x = rng.random()
                outcome = "resolved" if x < 0.55 else "unresolved" if x < 0.97 else "excluded"
                row = {"task_id": f"task-{task:04d}", "run_id": f"run-{run:03d}", "outcome": outcome,
                       "duration_s": round(rng.uniform(30, 3000), 1), "turns": rng.randint(5, 80),
                       "started_at": 1.7e9 + run * 86400 + task * 10}
                if outcome == "excluded":
                    row["exclusion"] = "context_overflow"
                f.write(json.dumps(row) + "\n")
                n += 1
    return n


BASELINE = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n    json.loads(line)\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "trials.jsonl"
        n = write_table(src)
        pkg = Path(tmp) / "pkg"
        results: dict[str, list[tuple[float, float, float]]] = {"import": [], "show": [], "parse-only": [],
                                                                  "start": []}
        for _ in range(args.runs):
            shutil.rmtree(pkg, ignore_errors=True)
            wall, rss, _, cpu = measure([AUDIT, "import", "task-runs", str(src), "--format", "table", "--task-count",
                                         str(TASKS), "-o", str(pkg)])
            results["import"].append((wall, cpu, rss))
            wall, rss, _, cpu = measure([AUDIT, "show", str(pkg)])
            results["show"].append((wall, cpu, rss))
            wall, rss, _, cpu = measure([sys.executable, "-c", BASELINE, str(src)])
            results["parse-only"].append((wall, cpu, rss))
            wall, rss, _, cpu = measure([sys.executable, "-c", "import audit.taskruns.package, audit.cli"])
            results["start"].append((wall, cpu, rss))
        base = statistics.median(w for w, _, _ in results["parse-only"])
        print(f"{n:,} trials ({RUNS} runs × {TASKS} tasks), {src.stat().st_size / 1e6:.1f} MB of JSONL; "
              f"medians of {args.runs} runs")
        print(f"{'step':12} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'× parse-only':>13}")
        for step, rows in results.items():
            wall = statistics.median(w for w, _, _ in rows)
            cpu = statistics.median(c for _, c, _ in rows)
            rss = max(r for _, _, r in rows)
            print(f"{step:12} {wall:>7.2f} {cpu:>7.2f} {rss:>8.0f} {wall / base:>13.1f}")


if __name__ == "__main__":
    main()
