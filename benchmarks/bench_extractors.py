"""Speed of `mmlu_pro.official` against the literal upstream regex cascade, measured in the same run.

    .venv/bin/python benchmarks/bench_extractors.py [--repeats 5] [--literal-repeats 3] [--quick]

(a) all 13,000 real responses of ../shared/data/mmlu_pro/mmlu_pro_responses_sample.jsonl:
    extraction time of both, answers compared on every row;
(b) synthetic responses of 10-400 KB with no L1/L2 match, in lines of ~100 characters
    and as one line, with a standalone capital A-J every ~120 characters: time per size,
    growth per doubling, the literal cascade where it finishes in reasonable time;
(c) the adversarial text: 4,000 candidate letters, then 100 KB without one (one line);
(d) every registered extractor on the synthetic texts, to show linear growth.

Targets (issue 3): identical answers everywhere; all 13,000 in under 1 s (>= 50x the
literal cascade); (c) under 0.25 s; 2x the text -> at most 2.2x the time.
Figures are medians of `--repeats` runs (`--literal-repeats` for the slow literal cascade).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from audit import extractors  # noqa: E402
from reference_extractors import literal_official, literal_official_rule  # noqa: E402

DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
MMLU = DATA / "mmlu_pro" / "mmlu_pro_responses_sample.jsonl"
WORDS = ("the of and to in is that for it as with was on be by this are from at which value force energy "
         "mass rate since then thus given option ratio using first second result therefore").split()


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def synthetic(size: int, *, one_line: bool, seed: int = 0) -> str:
    """Prose without `answer is` or `answer:`, a standalone capital A-J about every 120 characters."""
    rng = random.Random(seed)
    parts: list[str] = []
    n = line = 0
    since_letter = 0
    while n < size:
        if since_letter >= 120:
            w = rng.choice("ABCDEFGHIJ")
            since_letter = 0
        else:
            w = rng.choice(WORDS)
        sep = " "
        if not one_line and line + len(w) > 100:
            sep, line = "\n", 0
        parts.append(w + sep)
        n += len(w) + 1
        line += len(w) + 1
        since_letter += len(w) + 1
    return "".join(parts)[:size]


def adversarial() -> str:
    """4,000 candidate letters, then 100 KB of text without one, on one line (about 105 KB in all)."""
    letters = " ".join("ABCDEFGHIJ"[i % 10] for i in range(4000))
    rest = synthetic(200_000, one_line=True, seed=1)
    rest = "".join(c for c in rest if not ("A" <= c <= "J"))[:100_000]
    return letters + " " + rest


def bench_real(repeats: int, literal_repeats: int) -> None:
    with open(MMLU, encoding="utf-8") as f:
        texts = [json.loads(line)["response"] for line in f]
    ex = extractors.get("mmlu_pro.official@f418b11")
    fast = [ex.extract(t) for t in texts]
    slow = [literal_official_rule(t) for t in texts]
    same_answer = sum(f.answer == s[0] for f, s in zip(fast, slow, strict=True))
    same_all = sum((f.answer, f.rule, f.span) == s for f, s in zip(fast, slow, strict=True))
    t_fast = median_time(lambda: [ex.extract(t) for t in texts], repeats)
    t_slow = median_time(lambda: [literal_official(t) for t in texts], literal_repeats)
    mb = sum(len(t) for t in texts) / 1e6
    print(f"(a) {len(texts):,} real MMLU-Pro responses ({mb:.1f} M characters)")
    print(f"    identical answers {same_answer:,}/{len(texts):,}; identical answer, rule and span {same_all:,}")
    print(f"    mmlu_pro.official {t_fast:8.3f} s   literal cascade {t_slow:8.2f} s   ratio {t_slow / t_fast:7.0f}x "
          f"  (target < 1 s, >= 50x)")


def bench_synthetic(repeats: int, literal_repeats: int, sizes: list[int], literal_limit: dict[bool, int]) -> None:
    ex = extractors.get("mmlu_pro.official@f418b11")
    print("(b) synthetic responses without an L1/L2 match (median seconds)")
    for one_line in (False, True):
        label = "one line" if one_line else "100-char lines"
        print(f"    {label}:")
        print(f"    {'KB':>6} {'official':>10} {'x prev':>7} {'literal':>10} {'ratio':>8}")
        prev = None
        for kb in sizes:
            text = synthetic(kb * 1000, one_line=one_line)
            got = ex.extract(text)
            assert got.rule == "L3", got
            t_fast = median_time(lambda: ex.extract(text), repeats)
            growth = f"{t_fast / prev:6.2f}x" if prev else "      -"
            prev = t_fast
            if kb <= literal_limit[one_line]:
                assert literal_official(text) == got.answer
                t_slow = median_time(lambda: literal_official(text), literal_repeats)
                lit = f"{t_slow:10.3f} {t_slow / t_fast:7.0f}x"
            else:
                lit = f"{'(skipped)':>10} {'':>8}"
            print(f"    {kb:6d} {t_fast:10.5f} {growth} {lit}")


def bench_adversarial(repeats: int, run_literal: bool) -> None:
    ex = extractors.get("mmlu_pro.official@f418b11")
    text = adversarial()
    got = ex.extract(text)
    t_fast = median_time(lambda: ex.extract(text), repeats)
    print(f"(c) adversarial: {len(text) / 1000:.0f} KB, 4,000 candidate letters then 100 KB without one, one line")
    line = f"    mmlu_pro.official {t_fast:.5f} s -> {got.answer} ({got.rule})  (target < 0.25 s)"
    if run_literal:
        t = time.perf_counter()
        lit = literal_official(text)
        t_slow = time.perf_counter() - t
        assert lit == got.answer
        line += f"   literal cascade {t_slow:.1f} s (1 run)   ratio {t_slow / t_fast:.0f}x"
    print(line)


def bench_all_extractors(repeats: int, sizes: list[int]) -> None:
    print("(d) every registered extractor on the 100-char-line synthetic texts (median ms; growth per doubling)")
    texts = {kb: synthetic(kb * 1000, one_line=False) for kb in sizes}
    for ex in sorted(extractors.all_extractors(), key=lambda e: e.key):
        cells = []
        prev = None
        for kb in sizes:
            t = median_time(lambda ex=ex, kb=kb: ex.extract(texts[kb]), repeats)
            cells.append(f"{t * 1000:8.2f}" + (f" ({t / prev:4.2f}x)" if prev else "        "))
            prev = t
        print(f"    {ex.key:<28}" + " ".join(cells))
    print(f"    {'KB:':<28}" + " ".join(f"{kb:>16}" for kb in sizes))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="runs per figure for the fast extractors (median)")
    ap.add_argument("--literal-repeats", type=int, default=3, help="runs per figure for the literal cascade (median)")
    ap.add_argument("--quick", action="store_true", help="skip the literal cascade on the 13,000 responses and (c)")
    args = ap.parse_args(argv)
    sizes = [10, 25, 50, 100, 200, 400]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if not args.quick:
        bench_real(args.repeats, args.literal_repeats)
    bench_synthetic(args.repeats, args.literal_repeats, sizes, {False: 100, True: 25})
    bench_adversarial(args.repeats, run_literal=not args.quick)
    bench_all_extractors(args.repeats, [25, 50, 100, 200, 400])
    return 0


if __name__ == "__main__":
    sys.exit(main())
