"""Benchmark: math.equiv@3 (+ math.final@1) against Math-Verify 0.9.0, verdict by verdict, in one go.

    .venv/bin/python benchmarks/bench_math_agreement.py [--runs 3] [--workers 2]

Data, all read at run time:
- Math-Verify's own published test tables: every `parametrize` table with a gold, a prediction and an
  expected verdict in the tests of the pinned sdist `math_verify-0.9.0.tar.gz` (downloaded with pip
  into ~/.cache/audit, sha256 checked, read in memory; never committed). See benchmarks/_mathverify_suite.py.
- ../shared/data: 800 Qwen2.5-Math CoT responses with Qwen's grader verdicts, 306 PRM800K final answers
  with human ratings.

Truth: Math-Verify's published expectation, the Qwen label, the PRM800K rating; replaced by the
hand-adjudicated verdict where one exists (tests/golden/graders/mathverify_suite_adjudicated.jsonl,
tests/golden/graders/math_equiv_adjudicated.jsonl). Every case on which any contender disagrees with the
truth or with another contender must be adjudicated there: an unadjudicated disagreement stops the
benchmark (exit 1), so the tables below never hide one.

Setups:
- MV suite, equivalence: both sides as Math-Verify's `parse` extracts them (with the test's extraction
  config) go to math.equiv@3; Math-Verify is scored as its test calls it (`parse` + `verify` with the
  test's precision, strictness and set/relation flag).
- MV suite, pipeline: math.final@1 reads both raw texts, math.equiv@3 grades.
- Qwen, equivalence: the last `\\boxed{}` (boxed@1) to math.equiv@3 and to math.mathverify@0.9.0.
- Qwen, pipeline: math.final@1 + math.equiv@3 on the raw response; Math-Verify `parse` + `verify` on it.
- PRM800K: the final answers to math.equiv@3 and math.mathverify@0.9.0.

Counts: agreement with the truth, false credits (credited, truth incorrect) and false rejections
(not credited, truth correct) separately, agreement with the published labels, timeouts. Wall time is the
median of --runs runs per contender (our graders on a warm persistent worker pool; Math-Verify inline).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _mathverify_suite import Case, load_suite, mathverify_verdict  # noqa: E402

from audit import extractors, graders  # noqa: E402
from audit.graders.budget import shared_pool  # noqa: E402

DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
QWEN = DATA / "qwen25_math_rm_maj_example" / "math_cot_100.jsonl"
PRM = DATA / "prm800k_phase1_test_stepwise" / "phase1_test_final_answers_vs_math500.jsonl"
GOLDEN = REPO / "tests" / "golden" / "graders"
SUITE_ADJUDICATED = GOLDEN / "mathverify_suite_adjudicated.jsonl"
DATA_ADJUDICATED = GOLDEN / "math_equiv_adjudicated.jsonl"
SOURCE_BOXED = "qwen25_math_cot_100 (last \\boxed{} of response vs answer)"
SOURCE_PRM = "prm800k_phase1_test_final_answers"
EQUIV = "math.equiv@3"
MV_GRADER = "math.mathverify@0.9.0"
BOXED = extractors.get("boxed@1")
FINAL = extractors.get("math.final@1")


@dataclass
class Result:
    """One contender on one dataset: its credits per row and its wall times."""

    name: str
    credited: list[bool]
    statuses: list[str]
    walls: list[float] = field(default_factory=list)


@dataclass
class Dataset:
    name: str
    keys: list[str]
    truth: list[bool]
    published: list[bool]
    results: list[Result] = field(default_factory=list)


def _timed(fn, runs: int):
    walls, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        walls.append(time.perf_counter() - t0)
    return out, walls


def _ours(pairs: list[tuple[str | None, str | None]], workers: int) -> tuple[list[bool], list[str]]:
    rows = [(a, r) for a, r in pairs if r is not None]
    verdicts = iter(graders.grade_many(EQUIV, rows, workers=workers))
    credited, statuses = [], []
    for a, r in pairs:
        if r is None:  # the reference itself reads as nothing: no verdict is possible
            credited.append(False)
            statuses.append("no_reference")
            continue
        v = next(verdicts)
        credited.append(v.correct is True)
        statuses.append(v.status)
    return credited, statuses


# --------------------------------------------------------------------------- Math-Verify's suite


def suite_datasets(runs: int, workers: int) -> list[Dataset]:
    cases, skipped = load_suite()
    if skipped:
        print(f"note: {len(skipped)} table rows are not literals and were skipped: {skipped}")
    overrides = _suite_overrides(cases)
    truth = [overrides.get(c.key, c.expected) for c in cases]
    published = [c.expected for c in cases]
    keys = [c.key for c in cases]

    mv_out, mv_walls = _timed(lambda: [mathverify_verdict(c) for c in cases], runs)
    mv = Result("Math-Verify 0.9.0 (parse + verify, as its tests call it)", [o[0] for o in mv_out],
                ["correct" if o[0] else "incorrect" for o in mv_out], mv_walls)
    extracted = [(o[2], o[1]) for o in mv_out]  # (answer, reference) as Math-Verify extracts them
    eq_out, eq_walls = _timed(lambda: _ours(extracted, workers), runs)
    equiv = Result(f"{EQUIV} on Math-Verify's extractions", *eq_out, eq_walls)

    def pipeline():
        pairs = [(FINAL.extract(c.pred).answer, FINAL.extract(c.gold).answer) for c in cases]
        return _ours(pairs, workers)

    pl_out, pl_walls = _timed(pipeline, runs)
    ours = Result(f"math.final@1 + {EQUIV} from raw text", *pl_out, pl_walls)
    return [Dataset("Math-Verify suite, equivalence", keys, truth, published, [equiv, mv]),
            Dataset("Math-Verify suite, pipeline", keys, truth, published, [ours, mv])]


def _suite_overrides(cases: list[Case]) -> dict[str, bool]:
    """Adjudicated truths; a row whose gold or prediction changed since it was adjudicated stops the run."""
    by_key = {c.key: c for c in cases}
    out = {}
    for line in SUITE_ADJUDICATED.read_text(encoding="utf-8").splitlines():
        a = json.loads(line)
        case = by_key.get(a["case"])
        if case is None or case.digest != a["digest"]:
            raise SystemExit(f"{SUITE_ADJUDICATED.name}: {a['case']} is not in the suite as adjudicated")
        out[a["case"]] = a["truth"] == "correct"
    return out


def adjudicated_suite_keys() -> set[str]:
    return {json.loads(line)["case"] for line in SUITE_ADJUDICATED.read_text(encoding="utf-8").splitlines()}


# --------------------------------------------------------------------------- Qwen and PRM800K


def _decided(source: str) -> dict[str, bool]:
    out = {}
    for line in DATA_ADJUDICATED.read_text(encoding="utf-8").splitlines():
        a = json.loads(line)
        if a["source"] == source:
            out[a["row"]] = a["decided"] == "correct"
    return out


def _mathverify_raw(text: str, reference: str) -> bool:
    from math_verify import parse, verify

    gold = parse("\\boxed{" + reference + "}", parsing_timeout=None)
    pred = parse(text, parsing_timeout=None)
    return bool(verify(gold, pred, timeout_seconds=None))


def data_datasets(runs: int, workers: int) -> list[Dataset]:
    rows = []
    for line in QWEN.read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        for k, (resp, label) in enumerate(zip(r["code"], r["score"], strict=True)):
            rows.append({"row": f"{r['idx']}/{k}", "text": resp, "reference": r["answer"], "label": bool(label)})
    decided = _decided(SOURCE_BOXED)
    keys = [r["row"] for r in rows]
    truth = [decided.get(r["row"], r["label"]) for r in rows]
    published = [r["label"] for r in rows]
    boxed = [(BOXED.extract(r["text"]).answer, r["reference"]) for r in rows]

    eq_out, eq_walls = _timed(lambda: _ours(boxed, workers), runs)
    mv_out, mv_walls = _timed(lambda: graders.grade_many(MV_GRADER, boxed, workers=workers), runs)
    qwen_eq = Dataset("Qwen 800, boxed@1 answers", keys, truth, published, [
        Result(EQUIV, *eq_out, eq_walls),
        Result(MV_GRADER, [v.correct is True for v in mv_out], [v.status for v in mv_out], mv_walls)])

    pl_out, pl_walls = _timed(lambda: _ours([(FINAL.extract(r["text"]).answer, r["reference"]) for r in rows],
                                            workers), runs)
    mvr_out, mvr_walls = _timed(lambda: [_mathverify_raw(r["text"], r["reference"]) for r in rows], runs)
    qwen_pl = Dataset("Qwen 800, raw text", keys, truth, published, [
        Result(f"math.final@1 + {EQUIV}", *pl_out, pl_walls),
        Result("Math-Verify 0.9.0 parse + verify", mvr_out, ["correct" if x else "incorrect" for x in mvr_out],
               mvr_walls)])

    prm = [json.loads(line) for line in PRM.read_text(encoding="utf-8").splitlines()]
    decided = _decided(SOURCE_PRM)
    pairs = [(r["model_answer"], r["gold_answer"]) for r in prm]
    keys = [str(r["row_index"]) for r in prm]
    labels = [r["human_rating"] == 1 for r in prm]
    p_eq, p_eq_walls = _timed(lambda: _ours(pairs, workers), runs)
    p_mv, p_mv_walls = _timed(lambda: graders.grade_many(MV_GRADER, pairs, workers=workers), runs)
    prm_ds = Dataset("PRM800K 306 final answers", keys, [decided.get(k, lab) for k, lab in zip(keys, labels)],
                     labels, [Result(EQUIV, *p_eq, p_eq_walls),
                              Result(MV_GRADER, [v.correct is True for v in p_mv], [v.status for v in p_mv],
                                     p_mv_walls)])
    return [qwen_eq, qwen_pl, prm_ds]


# --------------------------------------------------------------------------- report


def unadjudicated(ds: Dataset, adjudicated: set[str]) -> list[str]:
    """Keys where a contender disagrees with the truth or with another contender and no adjudication exists."""
    out = []
    for i, key in enumerate(ds.keys):
        verdicts = {r.credited[i] for r in ds.results}
        if (len(verdicts) > 1 or ds.truth[i] not in verdicts or ds.truth[i] != ds.published[i]) and \
                key not in adjudicated:
            out.append(key)
    return out


def report(datasets: list[Dataset], adjudicated: dict[str, set[str]]) -> int:
    print(f"\n{'dataset / contender':<62} {'n':>4} {'agree':>5} {'false':>6} {'false':>7} {'agree':>9} "
          f"{'time':>5} {'wall s':>7}")
    print(f"{'':<62} {'':>4} {'truth':>5} {'credit':>6} {'reject':>7} {'published':>9} {'outs':>5} "
          f"{'median':>7}")
    problems = 0
    for ds in datasets:
        print(ds.name)
        for r in ds.results:
            agree = sum(c == t for c, t in zip(r.credited, ds.truth))
            fc = sum(c and not t for c, t in zip(r.credited, ds.truth))
            fr = sum(t and not c for c, t in zip(r.credited, ds.truth))
            pub = sum(c == p for c, p in zip(r.credited, ds.published))
            timeouts = sum(s == "timeout" for s in r.statuses)
            print(f"  {r.name:<60} {len(ds.keys):>4} {agree:>5} {fc:>6} {fr:>7} {pub:>9} {timeouts:>5} "
                  f"{statistics.median(r.walls):7.2f}")
        missing = unadjudicated(ds, adjudicated[ds.name])
        if missing:
            problems += len(missing)
            print(f"  UNADJUDICATED disagreements: {missing}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for p in (QWEN, PRM):
        if not p.exists():
            print(f"missing data: {p}", file=sys.stderr)
            return 2
    pool = shared_pool()
    pool.max_workers = args.workers
    t0 = time.perf_counter()
    pool.warm(args.workers)
    print(f"{args.workers} workers warmed in {time.perf_counter() - t0:.1f} s (not counted); {args.runs} runs each; "
          f"cpus={os.cpu_count()}")
    suite = suite_datasets(args.runs, args.workers)
    data = data_datasets(args.runs, args.workers)
    suite_keys = adjudicated_suite_keys()
    adjudicated = {ds.name: suite_keys for ds in suite}
    adjudicated[data[0].name] = adjudicated[data[1].name] = set(_decided(SOURCE_BOXED))
    adjudicated[data[2].name] = set(_decided(SOURCE_PRM))
    problems = report(suite + data, adjudicated)
    mv_suite = [sum(c == t for c, t in zip(ds.results[-1].credited, ds.truth)) for ds in suite]
    ours_suite = [sum(c == t for c, t in zip(ds.results[0].credited, ds.truth)) for ds in suite]
    ours_fc = sum(sum(c and not t for c, t in zip(ds.results[0].credited, ds.truth)) for ds in suite)
    target = all(o >= m for o, m in zip(ours_suite, mv_suite)) and ours_fc == 0
    print(f"\ntarget (Math-Verify's suite, both setups: at least Math-Verify's own score, zero false credits): "
          f"{'met' if target else 'NOT MET'}; worker kills: {pool.kills}")
    return 1 if problems or not target else 0


if __name__ == "__main__":
    sys.exit(main())
