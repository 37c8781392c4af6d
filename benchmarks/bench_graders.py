"""Benchmark: math.equiv@1, @2 and @3 against math-verify on 800 real CoT responses (not a timed test).

    .venv/bin/python benchmarks/bench_graders.py [--workers 2] [--runs 5]

Data: ../shared/data/qwen25_math_rm_maj_example/math_cot_100.jsonl (100 MATH problems x 8
responses, with Qwen2.5-Math's grader verdicts). The final answer of each response is read with
the project's `boxed@1` extractor (the last `\\boxed{}`).

Measured in the same run, on the same persistent worker pool (`--workers` processes, started and
warmed before timing, start-up reported separately):
- `math.equiv@1`, `@2` and `@3` through `graders.grade_many` (fast path in-process, the rest in workers);
- `math.mathverify@0.9.0` through `graders.grade_many` (every item in workers);
- `math.equiv@1`, `@2` and `@3` with every item sent to the workers (no fast path), to show the symbolic path;
- the named baseline, math-verify as its users call it: `parse` + `verify` in this process's main
  thread, sequentially, with its own signal-based timeouts on.
For each: wall time per run (median of --runs), per-item seconds (median / p99 / max over all
runs), items over the budget, and agreement with the Qwen labels and with the adjudicated
verdicts of tests/golden/graders/math_equiv_adjudicated.jsonl. Ratios are baseline / ours (> 1: ours faster).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit import extractors  # noqa: E402
from audit import graders  # noqa: E402
from audit.graders.budget import shared_pool  # noqa: E402

DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
QWEN = DATA / "qwen25_math_rm_maj_example" / "math_cot_100.jsonl"
ADJUDICATED = REPO / "tests" / "golden" / "graders" / "math_equiv_adjudicated.jsonl"
SOURCE = "qwen25_math_cot_100 (last \\boxed{} of response vs answer)"
BOXED = extractors.get("boxed@1")


def load_rows() -> list[dict]:
    rows = []
    for line in QWEN.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        for k, (resp, label) in enumerate(zip(r["code"], r["score"], strict=True)):
            rows.append({"row": f"{r['idx']}/{k}", "answer": BOXED.extract(resp).answer, "reference": r["answer"],
                         "label": label})
    return rows


def decided_labels(rows: list[dict]) -> list[bool]:
    """The Qwen label, replaced by the hand-adjudicated verdict where one exists."""
    fixes = {}
    for line in ADJUDICATED.read_text(encoding="utf-8").splitlines():
        a = json.loads(line)
        if a["source"] == SOURCE:
            fixes[a["row"]] = a["decided"] == "correct"
    return [fixes.get(r["row"], r["label"]) for r in rows]


def run_mathverify_inline(rows: list[dict]) -> list[graders.Timed]:
    """math-verify as its README shows it: parse + verify in the main thread, its own timeouts on."""
    import logging

    from math_verify import parse, verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    out = []
    for r in rows:
        t0 = time.perf_counter()
        if r["answer"] is None:
            v = graders.Judgment(None, "no_answer", "")
        else:
            gold = parse("\\boxed{" + r["reference"] + "}")
            pred = parse("\\boxed{" + r["answer"] + "}")
            if not gold or not pred:
                v = graders.Judgment(None, "parse_error_answer" if gold else "parse_error_reference", "")
            else:
                ok = verify(gold, pred)
                v = graders.Judgment(ok, "correct" if ok else "incorrect", "")
        out.append(graders.Timed(v, time.perf_counter() - t0))
    return out


def run_all_in_workers(pool, key: str, pairs: list[tuple], args) -> list[graders.Timed]:
    """Every item through the worker pool, no in-process fast path: the cost of the symbolic path."""
    out: list[graders.Timed | None] = [None] * len(pairs)
    todo = []
    for i, (a, r) in enumerate(pairs):
        if a is None:
            out[i] = graders.Timed(graders.Judgment(None, "no_answer", ""), 0.0)
        else:
            todo.append(i)
    res = pool.run_many(key, [(pairs[i][0], pairs[i][1], None) for i in todo], args.budget or 5.0,
                        workers=args.workers)
    for i, o in zip(todo, res):
        out[i] = graders.Timed(o.judgment, o.seconds)
    return out


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=None, help="per-item budget (default: each grader's, 5 s)")
    args = ap.parse_args()
    if not QWEN.exists():
        print(f"missing data: {QWEN}", file=sys.stderr)
        return 2
    rows = load_rows()
    labels = [r["label"] for r in rows]
    decided = decided_labels(rows)
    pairs = [(r["answer"], r["reference"]) for r in rows]

    t0 = time.perf_counter()
    pool = shared_pool()
    pool.max_workers = args.workers
    pool.warm(args.workers)
    start_s = time.perf_counter() - t0
    print(f"{len(rows)} responses; {args.workers} workers started and warmed in {start_s:.2f} s "
          f"(not counted below); {args.runs} runs each, alternating order; cpus={os.cpu_count()}")

    contenders = {
        "math.equiv@1": lambda: graders.grade_many_timed("math.equiv@1", pairs, workers=args.workers,
                                                         budget_s=args.budget),
        "math.equiv@2": lambda: graders.grade_many_timed("math.equiv@2", pairs, workers=args.workers,
                                                         budget_s=args.budget),
        "math.equiv@3": lambda: graders.grade_many_timed("math.equiv@3", pairs, workers=args.workers,
                                                         budget_s=args.budget),
        "math.mathverify@0.9.0": lambda: graders.grade_many_timed("math.mathverify@0.9.0", pairs,
                                                                  workers=args.workers, budget_s=args.budget),
        "math.equiv@1, all in workers": lambda: run_all_in_workers(pool, "math.equiv@1", pairs, args),
        "math.equiv@2, all in workers": lambda: run_all_in_workers(pool, "math.equiv@2", pairs, args),
        "math.equiv@3, all in workers": lambda: run_all_in_workers(pool, "math.equiv@3", pairs, args),
        "baseline: math-verify inline": lambda: run_mathverify_inline(rows),
    }
    walls: dict[str, list[float]] = {k: [] for k in contenders}
    items: dict[str, list[float]] = {k: [] for k in contenders}
    last: dict[str, list[graders.Timed]] = {}
    names = list(contenders)
    for run in range(args.runs):
        order = names if run % 2 == 0 else names[::-1]
        for name in order:
            t = time.perf_counter()
            res = contenders[name]()
            walls[name].append(time.perf_counter() - t)
            items[name].extend(x.seconds for x in res)
            last[name] = res

    budget = args.budget or 5.0
    base = statistics.median(walls["baseline: math-verify inline"])
    mv = statistics.median(walls["math.mathverify@0.9.0"])
    print(f"\n{'grader':<30} {'wall s':>7} {'vs inline':>9} {'vs mv pool':>10} {'med ms':>7} {'p99 ms':>7} "
          f"{'max ms':>7} {'over':>4} {'timeout':>7} {'agree Qwen':>10} {'agree decided':>13}")
    for name in names:
        res = last[name]
        wall = statistics.median(walls[name])
        agree_l = sum((t.judgment.correct is True) == lab for t, lab in zip(res, labels))
        agree_d = sum((t.judgment.correct is True) == lab for t, lab in zip(res, decided))
        over = sum(s > budget for s in items[name])
        timeouts = sum(t.judgment.status == "timeout" for t in res)
        print(f"{name:<30} {wall:7.3f} {base / wall:8.2f}x {mv / wall:9.2f}x {1000 * statistics.median(items[name]):7.2f} "
              f"{1000 * pct(items[name], 0.99):7.1f} {1000 * max(items[name]):7.1f} {over:4d} {timeouts:7d} "
              f"{agree_l:>5}/{len(rows)} {agree_d:>7}/{len(rows)}")
    print("\nwall s per run:", {k: [round(x, 3) for x in v] for k, v in walls.items()})
    for key in ("math.equiv@1", "math.equiv@2", "math.equiv@3"):
        equiv = last[key]
        print(f"{key}: {sum(t.seconds < 1e-3 for t in equiv)} of {len(equiv)} items decided under 1 ms "
              f"(fast path, no worker)")
    v1, v2, v3 = last["math.equiv@1"], last["math.equiv@2"], last["math.equiv@3"]
    differ = sum(a.judgment.status != b.judgment.status for a, b in zip(v1, v2))
    differ3 = sum(a.judgment.status != b.judgment.status for a, b in zip(v2, v3))
    print(f"items whose status differs between @1 and @2: {differ}, between @2 and @3: {differ3}; "
          f"worker kills during the benchmark: {pool.kills}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
