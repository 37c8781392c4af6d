"""Importer throughput on the real data in ../shared/data, against a parse-only baseline.

Baseline: read the same source and `json.loads` every record (the least any importer
must do). Each figure is the median of --runs runs; the ratio is import / baseline.
Run: .venv/bin/python benchmarks/bench_importers.py [--runs 5]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))

from audit.importers import write_outputs  # noqa: E402
from audit.importers.table import parse_spec, table_output  # noqa: E402
from audit.packages import validate_package  # noqa: E402

CASES = [
    ("mmlu_pro responses sample", "mmlu_pro/mmlu_pro_responses_sample.jsonl", "responses",
     dict(maps=("item_id=question_id", "extra.source_pred=source_pred"), sample_from="run_id"), False),
    ("gpqa diamond responses (gzip)", "gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz", "responses",
     dict(maps=("item_id=gpqa-{item_index:03d}-v{version}", "extra.source_extracted=source_extracted"),
          sample_from="model"), True),
    ("qwen2.5-math cot 100x8 (explode)", "qwen25_math_rm_maj_example/math_cot_100.jsonl", "responses",
     dict(maps=("item_id=idx", "extra.pred=pred", "extra.score=score"), explode=("response,pred,score",)), False),
]


def _baseline(path: Path) -> int:
    opener = gzip.open if path.name.endswith(".gz") else open
    n = 0
    with opener(path, "rb") as f:
        for line in f:
            json.loads(line)
            n += 1
    return n


def _median_time(fn, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    print(f"{'source':34} {'rows':>6} {'import s':>9} {'baseline s':>10} {'ratio':>6} {'validate s':>10}")
    for label, rel, kind, opts, gz in CASES:
        src = DATA / rel
        with tempfile.TemporaryDirectory() as tmp:
            counter = iter(range(10**6))

            def run_import():
                out = Path(tmp) / f"pkg{next(counter)}"
                spec = parse_spec(kind, **opts)
                output, imp = table_output(str(src), out, spec, gzip=gz)
                write_outputs([output])
                return out, imp.written

            t_import, (out, rows) = _median_time(run_import, args.runs)
            t_base, _ = _median_time(lambda: _baseline(src), args.runs)
            t_valid, problems = _median_time(lambda: validate_package(out), args.runs)
            assert problems == [], problems
        print(f"{label:34} {rows:>6} {t_import:>9.3f} {t_base:>10.3f} {t_import / t_base:>6.1f} {t_valid:>10.3f}")


if __name__ == "__main__":
    main()
