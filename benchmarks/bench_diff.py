"""Benchmark `audit diff` on two synthetic 1,000,000-row verdict files.

Targets (issue 6): under 10 s wall time and under 2 GB peak memory per diff.

The files hold 100,000 items x 10 samples with a realistic mix of changes between
OLD and NEW: extractor changes (4%), answer changes that keep the verdict (2%),
grader changes (0.5%), truncation-policy changes (1%), random-guess rows (0.3%),
gold changes (0.2%), and 0.1% of rows present on one side only. Each case runs
`audit diff` as a fresh process (wall time, and peak RSS from wait4), several
times; medians are printed with the ratio against the target and against the
named baseline measured in the same run: `load_verdict_file` on both files (full
pydantic validation, as a reader without the Arrow paths would do) plus a Python
dict join.

    .venv/bin/python benchmarks/bench_diff.py [--rows 1000000] [--runs 5] [--no-baseline]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from _process import measure  # noqa: E402  (benchmarks/, the script's own folder)

from audit.models import Producer  # noqa: E402
from audit.summary import summarize  # noqa: E402
from audit.verdicts import (  # noqa: E402
    ComponentRef,
    PackageRef,
    Policies,
    VerdictFile,
    dump_verdict_file,
    write_rows_parquet,
)

TARGET_S = 10.0
TARGET_RSS_MB = 2048.0
LETTERS = np.array(list("ABCDEFGHIJ"))


def _component(name: str, version: str) -> ComponentRef:
    import hashlib

    return ComponentRef(name=name, version=version, fingerprint=hashlib.sha256(f"{name}@{version}".encode()).hexdigest())


def synthetic(rows: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """OLD and NEW row frames with the documented mix of changes."""
    rng = np.random.default_rng(seed)
    samples = 10
    items = rows // samples
    item_ids = np.char.add("mmlu_pro/", np.char.zfill(np.arange(items).astype(str), 6))
    item_id = np.repeat(item_ids, samples)
    sample = np.tile(np.arange(samples), items)
    n = len(item_id)
    ref = LETTERS[rng.integers(0, 10, items)][np.arange(n) // samples]
    u = rng.random(n)
    answer = np.where(u < 0.70, ref, LETTERS[rng.integers(0, 10, n)]).astype(object)
    status = np.where(answer == ref, "correct", "incorrect").astype(object)
    no_answer = rng.random(n) < 0.03
    answer[no_answer] = None
    status[no_answer] = "no_answer"
    trunc = rng.random(n) < 0.02
    status[trunc] = "truncated"
    verdict = np.where(status == "correct", "correct", "incorrect").astype(object)
    rule = np.where(no_answer, "none", "answer_is").astype(object)
    old = pd.DataFrame({"item_id": item_id, "sample": sample, "attempt": 0, "answer": answer, "rule": rule,
                        "verdict": verdict, "status": status, "reference": ref})

    new = old.copy()
    v = rng.random(n)
    extractor = (v < 0.04) & ~trunc
    new.loc[extractor & no_answer, "answer"] = new.loc[extractor & no_answer, "reference"]
    flip = extractor & ~no_answer
    new.loc[flip, "answer"] = np.where(old.loc[flip, "verdict"] == "correct", "Z", old.loc[flip, "reference"])
    new.loc[extractor, "rule"] = "official_L1"
    same_verdict_answer = (v >= 0.04) & (v < 0.06) & (old["verdict"].to_numpy() == "incorrect") & ~no_answer & ~trunc
    new.loc[same_verdict_answer, "answer"] = "Y"
    grader = (v >= 0.06) & (v < 0.065) & ~no_answer & ~trunc
    new.loc[grader, "verdict"] = np.where(old.loc[grader, "verdict"] == "correct", "incorrect", "correct")
    new.loc[grader, "status"] = new.loc[grader, "verdict"]
    policy = (v >= 0.065) & (v < 0.075) & ~no_answer
    new.loc[policy, "status"] = "truncated"
    guess = (v >= 0.075) & (v < 0.078) & no_answer
    new.loc[guess, "status"] = "random_guess"
    reference = (v >= 0.078) & (v < 0.080) & ~trunc & ~no_answer
    new.loc[reference, "reference"] = "J"

    def regrade(df: pd.DataFrame, trunc_wrong: bool, g: np.ndarray) -> None:
        st = df["status"].to_numpy().copy()
        plain = ~np.isin(st, ["truncated", "no_answer", "random_guess"])
        ok = (df["answer"].to_numpy() == df["reference"].to_numpy())
        st[plain & ~grader] = np.where(ok[plain & ~grader], "correct", "incorrect")
        df["status"] = st
        verdict = np.where(st == "correct", "correct", "incorrect").astype(object)
        verdict[g] = df["verdict"].to_numpy()[g]
        verdict[st == "random_guess"] = np.where(rng.random(int((st == "random_guess").sum())) < 0.1,
                                                 "correct", "incorrect")
        if not trunc_wrong:
            verdict[st == "truncated"] = "ungraded"
        df["verdict"] = verdict

    regrade(new, trunc_wrong=False, g=grader)
    # 0.1% of rows only in OLD, 0.1% only in NEW.
    drop = rng.random(n) < 0.001
    extra = old[rng.random(n) < 0.001].copy()
    extra["item_id"] = extra["item_id"] + "-rerun"
    new = pd.concat([new[~drop], extra], ignore_index=True)
    for df in (old, new):
        df["reason"] = np.where(df["verdict"] == "correct", "answer matches the reference",
                                np.where(df["verdict"] == "ungraded", "cut at the output ceiling: excluded",
                                         "answer does not match the reference"))
    new = new.sort_values(["item_id", "sample"], kind="stable").reset_index(drop=True)
    return old, new


def _json_value(v: object) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "null"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return '"' + str(v) + '"'  # synthetic values need no escaping


def write_file(path: Path, df: pd.DataFrame, *, extractor: ComponentRef, policies: Policies,
               parquet: bool) -> None:
    """A verdict file in `dump_verdict_file`'s exact layout, written without building 1M models."""
    header = VerdictFile(benchmark="mmlu_pro", responses_package=PackageRef(package_id="responses-synthetic",
                                                                             digest="c" * 64),
                         extractor=extractor, grader=_component("mmlu_pro.letter", "1"),
                         producer=Producer(version="bench"), policies=policies, summary=summarize(df), items=[])
    cols = ["item_id", "sample", "attempt", "answer", "rule", "verdict", "status", "reason", "reference"]
    arrays = [df[c].tolist() for c in cols]
    lines = []
    for iid, s, att, ans, rule, ver, st, rea, ref in zip(*arrays):
        lines.append(f'    {{"item_id":"{iid}","sample":{s},"attempt":{att},"response_sha256":null,"answer":{_json_value(ans)},'
                     f'"rule":{_json_value(rule)},"span":null,"verdict":"{ver}","status":"{st}",'
                     f'"reason":"{rea}","reference":{_json_value(ref)},"detail":{{}}}}')
    rows_text = "[\n" + ",\n".join(lines) + "\n  ]\n}\n"
    if parquet:  # the sidecar, and the pin of the JSON rows it stands for (readers check both)
        ref = write_rows_parquet(df, path.with_suffix(".rows.parquet"))
        ref = ref.model_copy(update={"json_rows_sha256": hashlib.sha256(rows_text.encode("utf-8")).hexdigest()})
        header = header.model_copy(update={"rows_file": ref})
    head = dump_verdict_file(header)
    assert head.endswith('"items": []\n}\n')
    with open(path, "w", encoding="utf-8") as f:
        f.write(head[: -len("[]\n}\n")])
        f.write(rows_text)


def check_layout() -> None:
    """The hand-written layout equals dump_verdict_file's on a small file (so the benchmark reads real files)."""
    import tempfile

    from audit.verdicts import VerdictRow

    old, _ = synthetic(200)
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "v.json"
        ext = _component("x", "1")
        write_file(p, old, extractor=ext, policies=Policies(), parquet=False)
        rows = [VerdictRow(item_id=r.item_id, sample=int(r.sample), attempt=int(r.attempt),
                           answer=None if not isinstance(r.answer, str) else r.answer, rule=r.rule, verdict=r.verdict,
                           status=r.status, reason=r.reason, reference=r.reference)
                for r in old.itertuples(index=False)]
        vf = VerdictFile(benchmark="mmlu_pro", responses_package=PackageRef(package_id="responses-synthetic",
                                                                             digest="c" * 64),
                         extractor=ext, grader=_component("mmlu_pro.letter", "1"), producer=Producer(version="bench"),
                         policies=Policies(), summary=summarize(old), items=rows)
        assert p.read_text(encoding="utf-8") == dump_verdict_file(vf), "synthetic layout drifted from dump_verdict_file"


BASELINE = """
import sys
from audit.verdicts import load_verdict_file
a = load_verdict_file(sys.argv[1]); b = load_verdict_file(sys.argv[2])
old = {(r.item_id, r.sample): r for r in a.items}
print(sum(1 for r in b.items if (k := (r.item_id, r.sample)) in old and old[k].verdict != r.verdict))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-baseline", action="store_true", help="skip the slow full-load baseline")
    args = ap.parse_args()
    check_layout()
    audit_bin = str(Path(sys.executable).parent / "audit")
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        d = Path(tmp)
        t0 = time.perf_counter()
        old, new = synthetic(args.rows)
        for parquet in (False, True):
            sfx = ".pq" if parquet else ""
            write_file(d / f"old{sfx}.json", old, extractor=_component("mmlu_pro.lmeval", "1"), policies=Policies(),
                       parquet=parquet)
            write_file(d / f"new{sfx}.json", new, extractor=_component("mmlu_pro.official", "f418b11"),
                       policies=Policies(truncation="exclude"), parquet=parquet)
        size = (d / "old.json").stat().st_size / 1e6
        print(f"synthetic files: {len(old):,} and {len(new):,} rows, {size:.0f} MB of JSON each "
              f"(built in {time.perf_counter() - t0:.0f} s)")
        cases = [
            ("json-stream, markdown", [audit_bin, "diff", str(d / "old.json"), str(d / "new.json"),
                                       "-o", str(d / "out.md")]),
            ("json-stream, --format json", [audit_bin, "diff", str(d / "old.json"), str(d / "new.json"),
                                            "--format", "json", "-o", str(d / "out.json")]),
            ("parquet sidecar, markdown", [audit_bin, "diff", str(d / "old.pq.json"), str(d / "new.pq.json"),
                                           "-o", str(d / "out2.md")]),
        ]
        results = {}
        for label, cmd in cases:
            walls, rss, cpus = [], [], []
            for _ in range(args.runs):
                w, r, code, c = measure(cmd, ok_codes=(0, 1))  # diff exits 1 when files differ
                assert code == 1, "the synthetic files differ: exit 1 expected"
                walls.append(w)
                rss.append(r)
                cpus.append(c)
            results[label] = (statistics.median(walls), statistics.median(rss), statistics.median(cpus))
        base = None
        if not args.no_baseline:
            w, r, _, c = measure([sys.executable, "-c", BASELINE, str(d / "old.json"), str(d / "new.json")])
            base = (w, r, c)
        print(f"\n{'case':<30} {'wall s':>7} {'x target':>9} {'CPU s':>6} {'peak RSS MB':>12} {'x target':>9}"
              + ("  vs baseline (wall, RSS)" if base else ""))
        for label, (w, r, c) in results.items():
            line = f"{label:<30} {w:>7.2f} {w / TARGET_S:>9.2f} {c:>6.2f} {r:>12.0f} {r / TARGET_RSS_MB:>9.2f}"
            if base:
                line += f"  {base[0] / w:>5.1f}x faster, {base[1] / r:.1f}x less memory"
            print(line)
        if base:
            print(f"{'baseline (full load + dicts)':<30} {base[0]:>7.2f} {base[0] / TARGET_S:>9.2f} {base[2]:>6.2f} "
                  f"{base[1]:>12.0f} {base[1] / TARGET_RSS_MB:>9.2f}  (one run)")
        print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        print(f"targets: {TARGET_S:.0f} s, {TARGET_RSS_MB:.0f} MB; medians of {args.runs} runs, each a fresh process "
              f"(wall time includes interpreter start and imports)")


if __name__ == "__main__":
    main()
