"""Benchmark `audit grade` end to end (validate, extract, grade, write), each run a fresh process.

    .venv/bin/python benchmarks/bench_grade.py [--runs 5] [--big-runs 3] [--rows 1000000]
                                               [--lengths 200,2000] [--no-literal] [--skip-big]

(a) The 13,000 real MMLU-Pro responses (../shared/data/mmlu_pro), imported into a package
    (sample = run) and graded with `mmlu_pro.official@f418b11` against the real test set.
    Target (issue 5): under 5 s wall time on this 2-core machine. Baselines measured in
    the same run: validating the same two packages (reading and checking them,
    nothing else; `audit.packages.validate_package` in one process), and the literal upstream regex cascade of TIGER-AI-Lab/MMLU-Pro@f418b11
    (tests/reference_extractors.py) over the same 13,000 texts, in-process, extraction only.
(b) 1,000,000 synthetic multiple-choice rows (100,000 items x 10 samples, ten options), texts
    of about 200 and about 2,000 characters ending "... The answer is (C).", with a realistic
    mix: 3% no answer, 2% cut at the output ceiling (half of them re-run as attempt 1, graded
    with `resampling=longer-only`), the rest right about 70% of the time. Target: under 60 s
    with bounded memory; peak RSS must not grow with text length (texts are streamed, never
    held together). Baseline: validating the same two packages.

Wall time includes interpreter start and imports. Peak RSS comes from wait4 on a forked
child (so it does not start from this process's). Figures are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from _process import measure  # noqa: E402  (benchmarks/, the script's own folder)

DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
MMLU = DATA / "mmlu_pro" / "mmlu_pro_responses_sample.jsonl"
QUESTIONS = DATA / "mmlu_pro" / "mmlu_pro_test_questions.jsonl"
TARGET_MMLU_S = 5.0
TARGET_BIG_S = 60.0


def medians(cmd: list[str], runs: int) -> tuple[float, float, float]:
    got = [measure(cmd) for _ in range(runs)]  # (wall, RSS, exit code, CPU)
    return tuple(statistics.median(g[i] for g in got) for i in (0, 1, 3))  # type: ignore[return-value]


VALIDATE = "import sys; from audit.packages import validate_package as v; sys.exit(any(v(p) for p in sys.argv[1:]))"


def validate_cmd(*packages: Path) -> list[str]:
    """The baseline: validate the packages (what `audit validate` does) in one fresh process."""
    return [sys.executable, "-c", VALIDATE, *map(str, packages)]


def run_ok(cmd: list[str]) -> None:
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {r.stderr}")


# --------------------------------------------------------------------------- (a) real MMLU-Pro


def literal_cascade_seconds() -> tuple[float, int]:
    """One in-process pass of the literal upstream cascade over the 13,000 texts (it is slow: one run)."""
    sys.path.insert(0, str(REPO / "tests"))
    from reference_extractors import literal_official

    with open(MMLU, encoding="utf-8") as f:
        texts = [json.loads(line)["response"] for line in f]
    t = time.perf_counter()
    found = sum(literal_official(x) is not None for x in texts)
    return time.perf_counter() - t, found


def bench_mmlu(audit: str, d: Path, runs: int, literal: bool) -> None:
    run_ok([audit, "import", "table", str(MMLU), "-o", str(d / "mmlu"), "--kind", "responses", "--benchmark",
            "mmlu_pro", "--map", "item_id=question_id", "--sample-from", "run_id", "--keep-extra"])
    run_ok([audit, "import", "table", str(QUESTIONS), "-o", str(d / "items"), "--kind", "items",
            "--map", "item_id=question_id", "--map", "reference=answer", "--map", "choices=options"])
    grade = [audit, "grade", str(d / "mmlu"), "--items", str(d / "items"), "--benchmark", "mmlu_pro",
             "--policy", "scope=responses", "-o", str(d / "mmlu.json"), "--force", "-q"]
    w, r, c = medians(grade, runs)
    vw, vr, vc = medians(validate_cmd(d / "mmlu", d / "items"), runs)
    print(f"(a) 13,000 MMLU-Pro responses, mmlu_pro.official@f418b11, medians of {runs} runs")
    print(f"    {'case':<52} {'wall s':>7} {'CPU s':>6} {'peak RSS MB':>12}")
    print(f"    {'audit grade (validate, extract, grade, write)':<52} {w:>7.2f} {c:>6.2f} {r:>12.0f}"
          f"   {w / TARGET_MMLU_S:.2f}x the {TARGET_MMLU_S:.0f} s target")
    print(f"    {'baseline: validate both packages':<52} {vw:>7.2f} {vc:>6.2f} {vr:>12.0f}"
          f"   grade = {w / vw:.2f}x validate")
    if literal:
        lw, found = literal_cascade_seconds()
        print(f"    {'baseline: literal upstream cascade, extraction only':<52} {lw:>7.2f}"
              f"   (one run, in-process; {found:,} letters) grade is {lw / w:.1f}x faster")


# --------------------------------------------------------------------------- (b) 1M synthetic rows

WORDS = ("the of and to in is that for it as with was on be by this are from at which value force energy "
         "mass rate since then thus given option ratio using first second result therefore").split()


def _prose(rng: random.Random, n: int) -> str:
    # Lower-case words only: no standalone A-J and no "answer is", so no-answer rows stay no-answer.
    out, size = [], 0
    while size < n:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def write_synthetic(root: Path, rows: int, length: int, seed: int = 5) -> dict[str, int]:
    """Items and responses packages of `rows` response rows; returns the mix actually written."""
    from audit.fileio import JsonlWriter, dumps_pretty, sha256_file
    from audit.models import FileEntry, Manifest
    from audit.packages import content_digest, created_now
    from audit.producer import producer

    def package(out: Path, kind: str, rel: str, schema: str, gen) -> None:
        out.mkdir(parents=True)
        n = 0
        with JsonlWriter(out / rel) as w:
            for obj in gen:
                w.write(obj)
                n += 1
        digest, size = sha256_file(out / rel)
        entry = FileEntry(path=rel, sha256=digest, bytes=size, rows=n, schema=schema)
        m = Manifest(package_id=f"{kind}-synthetic-{content_digest([entry])[:12]}", kind=kind, benchmark="mmlu_pro",
                     created=created_now(), producer=producer(), files=[entry])
        (out / "manifest.json").write_text(dumps_pretty(m.model_dump(mode="json", by_alias=True)), encoding="utf-8")

    rng = random.Random(seed)
    letters = "ABCDEFGHIJ"
    samples = 10
    items = rows // samples
    gold = [rng.choice(letters) for _ in range(items)]
    pool = _prose(rng, 4 * length + 4000)
    mix = {"answer": 0, "no_answer": 0, "truncated": 0, "rerun": 0}
    package(root / "items", "items", "items.jsonl", "item_row.v1",
            ({"item_id": f"syn-{i:06d}", "reference": gold[i], "num_choices": 10} for i in range(items)))

    def responses():
        written = 0
        for i in range(items):
            for s in range(samples):
                if written >= rows:
                    return
                start = rng.randrange(0, len(pool) - length - 1)
                body = pool[start:start + length - 24]
                u = rng.random()
                base = {"item_id": f"syn-{i:06d}", "sample": s}
                if u < 0.02 and written + 2 <= rows:
                    cut = body[: len(body) // 2]
                    yield {**base, "attempt": 0, "response": cut, "finish_reason": "length",
                           "completion_tokens": len(cut) // 4, "max_tokens": len(cut) // 4}
                    written += 1
                    mix["truncated"] += 1
                    if u < 0.01:
                        yield {**base, "attempt": 1, "response": body + f" The answer is ({gold[i]}).",
                               "finish_reason": "stop", "completion_tokens": len(body) // 4 + 6}
                        written += 1
                        mix["rerun"] += 1
                    continue
                if u < 0.05:
                    yield {**base, "response": body + " so I cannot decide.", "finish_reason": "stop",
                           "completion_tokens": len(body) // 4 + 5}
                    mix["no_answer"] += 1
                else:
                    a = gold[i] if u < 0.71 else rng.choice(letters)
                    yield {**base, "response": body + f" The answer is ({a}).", "finish_reason": "stop",
                           "completion_tokens": len(body) // 4 + 6}
                    mix["answer"] += 1
                written += 1

    package(root / "responses", "responses", "responses.jsonl", "response_row.v1", responses())
    return mix


def bench_big(audit: str, d: Path, rows: int, lengths: list[int], runs: int) -> None:
    print(f"\n(b) {rows:,} synthetic choice rows, mmlu_pro spec with resampling=longer-only, medians of {runs} runs")
    print(f"    {'text length':<12} {'case':<32} {'wall s':>7} {'CPU s':>6} {'peak RSS MB':>12} {'JSONL MB':>9}")
    peaks = {}
    for length in lengths:
        root = d / f"syn{length}"
        t = time.perf_counter()
        mix = write_synthetic(root, rows, length)
        size = (root / "responses" / "responses.jsonl").stat().st_size / 1e6
        grade = [audit, "grade", str(root / "responses"), "--items", str(root / "items"), "--benchmark", "mmlu_pro",
                 "--policy", "resampling=longer-only", "-o", str(root / "out.json"), "--force", "-q"]
        w, r, c = medians(grade, runs)
        vw, vr, vc = medians(validate_cmd(root / "responses", root / "items"), runs)
        peaks[length] = r
        print(f"    {length:<12} {'audit grade':<32} {w:>7.2f} {c:>6.2f} {r:>12.0f} {size:>9.0f}"
              f"   {w / TARGET_BIG_S:.2f}x the {TARGET_BIG_S:.0f} s target")
        print(f"    {'':<12} {'baseline: validate both packages':<32} {vw:>7.2f} {vc:>6.2f} {vr:>12.0f}"
              f"   grade = {w / vw:.2f}x validate  (mix {mix}; built in {time.perf_counter() - t:.0f} s)")
        for p in root.glob("out*"):
            p.unlink()
        for sub in ("responses", "items"):
            for p in (root / sub).iterdir():
                p.unlink()
    if len(peaks) > 1:
        lo, hi = min(peaks), max(peaks)
        print(f"    peak RSS at {hi} characters / at {lo} characters: {peaks[hi] / peaks[lo]:.2f}x "
              f"(text is {hi / lo:.0f}x longer)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="runs of (a)")
    ap.add_argument("--big-runs", type=int, default=3, help="runs of (b)")
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--lengths", default="200,2000", help="text lengths of (b), comma-separated")
    ap.add_argument("--no-literal", action="store_true", help="skip the literal cascade baseline (~50 s)")
    ap.add_argument("--skip-big", action="store_true", help="run (a) only")
    args = ap.parse_args()
    audit = str(Path(sys.executable).parent / "audit")
    with tempfile.TemporaryDirectory(prefix="bench-grade-") as tmp:
        d = Path(tmp)
        bench_mmlu(audit, d, args.runs, literal=not args.no_literal)
        if not args.skip_big:
            bench_big(audit, d, args.rows, [int(x) for x in args.lengths.split(",")], args.big_runs)
    print(f"\nload average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
