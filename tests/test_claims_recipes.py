"""Recipes against independent computations: paired log ratios (scipy), error bars by formula, denominator
sensitivity, verdict files read from their rows, units and tolerances."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from scipy import stats as st
from tests.builders import make_package
from tests.verdict_helpers import make_verdict_file, write_verdict_file

from audit.claims.ledger import Tolerance
from audit.claims.verify import verify
from audit.fileio import sha256_file
from audit.packages import PackageWriter, open_package

LETTERS = "ABCD"


def digest(path) -> str:
    with open_package(path) as pkg:
        return pkg.digest


def ledger(root, claims, packages=(), files=()):
    """Write claims.yaml in `root` (as JSON, which is YAML) pinning the given packages and files."""
    doc = {
        "schema_version": 1,
        "title": "test ledger",
        "packages": [{"id": pid, "path": path, "sha256": digest(root / path)} for pid, path in packages],
        "files": [{"id": fid, "path": path, "sha256": sha256_file(root / path)[0], **extra}
                  for fid, path, extra in files],
        "claims": claims,
    }
    p = root / "claims.yaml"
    p.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return p


def claim(cid, value, recipe, args, *, unit="fraction", status="measured", tol=1e-9, sources=None):
    srcs = sources if sources is not None else [v for k, v in args.items() if k in ("package", "verdicts", "items")]
    return {"id": cid, "text": cid, "value": value, "unit": unit, "status": status, "sources": srcs,
            "recipe": {"name": recipe, "args": args}, "tolerance": {"absolute": tol}}


def results(path):
    v = verify(path)
    return {c.claim.id: c for c in v.claims}


# --------------------------------------------------------------------------- a K = 3 choice package


def choice_package(root, k=3, n=12, seed=7):
    """n four-option items answered K times; some wrong, one cut at the ceiling, one item excluded in run 0."""
    rng = random.Random(seed)
    items = [{"item_id": f"q{i:02d}", "reference": LETTERS[i % 4], "num_choices": 4} for i in range(n)]
    rows = []
    for s in range(k):
        for i, it in enumerate(items):
            right = rng.random() < 0.6 + 0.03 * i
            letter = it["reference"] if right else LETTERS[(i + 1) % 4]
            row = {"item_id": it["item_id"], "sample": s, "response": f"So the answer is ({letter}).",
                   "finish_reason": "stop"}
            if (i, s) == (3, 1):
                row["finish_reason"] = "length"
            if (i, s) == (5, 0):
                row = {"item_id": it["item_id"], "sample": s, "response": None, "excluded": "prompt too long"}
            rows.append(row)
    make_package(root / "pkg", responses=rows, items=items, benchmark="choice", package_id="pkg")
    return rows, items


def truth(rows, items, k):
    """Verdict per (item, sample) computed here, not by audit: correct / incorrect / ungraded."""
    ref = {it["item_id"]: it["reference"] for it in items}
    out = {}
    for r in rows:
        if r.get("excluded"):
            v = "ungraded"
        elif r["finish_reason"] == "length":
            v = "incorrect"
        else:
            v = "correct" if r["response"][-3] == ref[r["item_id"]] else "incorrect"
        out[(r["item_id"], r["sample"])] = v
    return out


@pytest.fixture
def choice(tmp_path):
    rows, items = choice_package(tmp_path)
    return tmp_path, truth(rows, items, 3)


def test_error_bars_match_their_formulas(choice):
    root, verdicts = choice
    base = {"package": "pkg", "benchmark": "choice"}
    path = ledger(root, [
        claim("A", 0, "grade.accuracy", {**base, "interval": "clustered_t"}),
        claim("B", 0, "stats.binomial_2se", dict(base)),
        claim("R", 0, "stats.runs_2se", dict(base)),
        claim("T", 0, "stats.runs_t", dict(base)),
        claim("C", 0, "stats.clustered_t", dict(base)),
        claim("CL", 0, "stats.clustered_t", {**base, "part": "low"}),
    ], packages=[("pkg", "pkg")])
    got = results(path)
    # Independently: graded rows only (the excluded row is left out of `accuracy`).
    graded = {k: v for k, v in verdicts.items() if v != "ungraded"}
    c, n = sum(v == "correct" for v in graded.values()), len(graded)
    assert got["A"].result.value == pytest.approx(c / n)
    assert got["B"].result.value == pytest.approx(2 * math.sqrt((c / n) * (1 - c / n) / n))
    runs = [np.mean([v == "correct" for (i, s), v in graded.items() if s == k]) for k in range(3)]
    se_runs = np.std(runs, ddof=1) / math.sqrt(3)
    assert got["R"].result.value == pytest.approx(2 * se_runs)
    assert got["T"].result.value == pytest.approx(st.t.ppf(0.975, 2) * se_runs)
    q = {}
    for (i, s), v in graded.items():
        q.setdefault(i, []).append(v == "correct")
    means = [np.mean(v) for v in q.values()]
    se_q = np.std(means, ddof=1) / math.sqrt(len(means))
    t = st.t.ppf(0.975, len(means) - 1)
    assert got["C"].result.value == pytest.approx(t * se_q)
    assert got["CL"].result.value == pytest.approx(max(0.0, np.mean(means) - t * se_q))
    assert got["A"].result.interval.method == "clustered_t"
    assert got["A"].result.interval.se == pytest.approx(se_q)
    assert got["R"].result.n_label == "runs" and got["C"].result.n == 12


def test_denominator_sensitivity_and_counts(choice):
    root, verdicts = choice
    base = {"package": "pkg", "benchmark": "choice"}
    policy_excl = {**base, "policy": {"truncation": "exclude"}}
    path = ledger(root, [
        claim("S", 0, "stats.denominator_sensitivity", dict(policy_excl)),
        claim("L", 0, "stats.denominator_sensitivity", {**policy_excl, "part": "left_out"}),
        claim("W", 0, "stats.denominator_sensitivity", {**policy_excl, "part": "counted_wrong"}),
        claim("N", 0, "grade.count", {**policy_excl, "verdict": "ungraded"}, unit="count"),
        claim("I", 0, "grade.count", {**base, "status": "excluded", "count": "items"}, unit="count"),
        claim("P", 0, "grade.count", {**base, "status": "truncated", "sample": 1}, unit="count"),
    ], packages=[("pkg", "pkg")])
    got = results(path)
    c = sum(v == "correct" for v in verdicts.values())
    assert got["L"].result.value == pytest.approx(c / 34)  # 36 rows, one excluded, one truncated-excluded
    assert got["W"].result.value == pytest.approx(c / 36)
    assert got["S"].result.value == pytest.approx(c / 34 - c / 36)
    assert "ungraded rows: 1 excluded, 1 truncated" in got["S"].result.basis
    assert (got["N"].result.value, got["I"].result.value, got["P"].result.value) == (2, 1, 1)


def test_an_interval_the_grading_cannot_give_is_explained(tmp_path, cli, monkeypatch):
    rows, items = choice_package(tmp_path, k=1, seed=1)
    verdicts = truth(rows, items, 1)
    c = sum(v == "correct" for v in verdicts.values())
    n = sum(v != "ungraded" for v in verdicts.values())
    assert 0 < c < n
    path = ledger(tmp_path, [
        claim("R", 0.1, "stats.runs_2se", {"package": "pkg", "benchmark": "choice"}),
        claim("Z", 0.1, "grade.accuracy", {"package": "pkg", "benchmark": "choice", "interval": "zero_failure_upper"}),
    ], packages=[("pkg", "pkg")])
    monkeypatch.chdir(tmp_path)
    r = cli("verify", path.name)
    assert r.code == 1
    assert "  cannot recompute: runs_2se needs at least 2 runs; the grading has 1\n" in r.out
    assert "  cannot recompute: interval zero_failure_upper needs no failures or no successes; this figure has " \
           f"1 run(s), {c}/{n} correct\n" in r.out


def test_units_convert_and_tolerances_bound(choice):
    root, verdicts = choice
    graded = [v for v in verdicts.values() if v != "ungraded"]
    pct = 100 * sum(v == "correct" for v in graded) / len(graded)
    base = {"package": "pkg", "benchmark": "choice"}
    path = ledger(root, [
        claim("P", round(pct, 2), "grade.accuracy", dict(base), unit="percent", tol=0.005),
        claim("F", round(pct / 100, 4), "grade.accuracy", dict(base), unit="fraction", tol=0.00005),
        claim("Q", round(pct, 2) + 0.01, "grade.accuracy", dict(base), unit="percent", tol=0.005),
        {**claim("X", pct * 1.009, "grade.accuracy", dict(base), unit="percent"), "tolerance": {"relative": 0.01}},
        {**claim("Y", pct * 1.011, "grade.accuracy", dict(base), unit="percent"), "tolerance": {"relative": 0.01}},
    ], packages=[("pkg", "pkg")])
    got = results(path)
    assert [got[k].survives for k in "PFQXY"] == [True, True, False, True, False]
    assert got["P"].result.interval.low == pytest.approx(100 * got["F"].result.interval.low)
    tol = Tolerance(relative=0.01)
    assert tol.allows(100.0, 101.0) and not tol.allows(100.0, 101.01)
    assert Tolerance(absolute=0).allows(0.1 + 0.2, 0.3)  # float noise is not a difference


# --------------------------------------------------------------------------- paired log ratio


def durations_package(root, rows, name="durations.csv", kind="throughput"):
    if name.endswith(".csv"):
        text = "task,baseline_s,mtp_s\n" + "".join(f"{t},{a},{b}\n" for t, a, b in rows)
    else:
        text = "".join(json.dumps({"task": t, "baseline_s": a, "mtp_s": b}) + "\n" for t, a, b in rows)
    with PackageWriter(root / "bench", kind=kind, package_id="bench-agentic") as w:
        w.add_text(name, text)


@pytest.mark.parametrize("name", ["durations.csv", "durations.jsonl"])
def test_paired_log_ratio_matches_scipy(tmp_path, name):
    rng = np.random.default_rng(3)
    base = rng.lognormal(4, 0.6, 17)
    mtp = base / rng.lognormal(0.6, 0.25, 17)
    rows = [(f"task-{i:02d}", round(float(a), 3), round(float(b), 3)) for i, (a, b) in enumerate(zip(base, mtp))]
    durations_package(tmp_path, rows, name)
    path = ledger(tmp_path, [claim("S", 1.8, "stats.paired_log_ratio",
                                   {"package": "bench-agentic", "file": name, "numerator": "baseline_s",
                                    "denominator": "mtp_s"}, unit="ratio", tol=0.5)],
                  packages=[("bench-agentic", "bench")])
    r = results(path)["S"].result
    logs = np.log(np.array([a for _, a, _ in rows]) / np.array([b for _, _, b in rows]))
    lo, hi = st.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=st.sem(logs))
    assert r.value == pytest.approx(math.exp(logs.mean()))
    assert (r.interval.low, r.interval.high) == (pytest.approx(math.exp(lo)), pytest.approx(math.exp(hi)))
    assert (r.n, r.n_label, r.interval.method) == (17, "tasks", "paired_log_t")
    assert len(r.series.lines[0][1]) == 17 and r.series.log_y


@pytest.mark.parametrize("rows, message", [
    ([("a", 10, 5), ("a", 12, 6)], "bench-agentic/durations.csv: row 3: field task: task 'a' repeats row 2"),
    ([("a", 10, 5), ("b", 0, 6)], "bench-agentic/durations.csv: row 3: field baseline_s: expected a positive number, got '0'"),
    ([("a", 10, 5), ("b", "nan", 6)], "bench-agentic/durations.csv: row 3: field baseline_s: expected a positive number, got 'nan'"),
    ([("a", 10, 5), ("b", "12s", 6)], "bench-agentic/durations.csv: row 3: field baseline_s: expected a positive number, got '12s'"),
    ([("a", 10, 5)], "bench-agentic/durations.csv: needs at least 2 paired tasks, found 1"),
])
def test_paired_log_ratio_refuses_bad_tables(tmp_path, rows, message):
    durations_package(tmp_path, rows)
    path = ledger(tmp_path, [claim("S", 2, "stats.paired_log_ratio",
                                   {"package": "bench-agentic", "file": "durations.csv", "numerator": "baseline_s",
                                    "denominator": "mtp_s"}, unit="ratio")],
                  packages=[("bench-agentic", "bench")])
    c = results(path)["S"]
    assert c.reasons == [f"cannot recompute: {message}"]


def test_paired_log_ratio_reads_only_files_its_package_lists(tmp_path):
    durations_package(tmp_path, [("a", 10, 5), ("b", 12, 6)])
    path = ledger(tmp_path, [claim("S", 2, "stats.paired_log_ratio",
                                   {"package": "bench-agentic", "file": "other.csv", "numerator": "baseline_s",
                                    "denominator": "mtp_s"}, unit="ratio")],
                  packages=[("bench-agentic", "bench")])
    assert results(path)["S"].reasons == ["cannot recompute: package bench-agentic lists no file 'other.csv'"]


# --------------------------------------------------------------------------- verdict files


def test_verdicts_accuracy_reads_rows_not_the_summary(tmp_path):
    rows = [{"item_id": f"q{i}", "sample": 0, "verdict": "correct" if i < 3 else "incorrect"} for i in range(4)]
    vf = make_verdict_file(rows)
    figures = [f.model_copy(update={"value": 0.99}) if f.name == "accuracy" else f for f in vf.summary.figures]
    write_verdict_file(tmp_path / "v.json", vf.model_copy(update={"summary": vf.summary.model_copy(
        update={"figures": figures})}))
    path = ledger(tmp_path, [claim("V", 0.75, "verdicts.accuracy", {"verdicts": "v"}),
                             claim("C", 1, "verdicts.count", {"verdicts": "v", "verdict": "incorrect"}, unit="count")],
                  files=[("v", "v.json", {"format": "verdicts"})])
    got = results(path)
    assert got["V"].survives and got["V"].result.value == 0.75
    assert got["V"].result.basis.endswith("its summary says 0.990000, which its rows do not give")
    assert got["C"].survives


def test_arithmetic_in_each_claims_unit(tmp_path):
    rows = [{"item_id": f"q{i}", "sample": 0, "verdict": "correct" if i < 3 else "incorrect"} for i in range(4)]
    write_verdict_file(tmp_path / "v.json", make_verdict_file(rows))
    path = ledger(tmp_path, [
        claim("V", 75.0, "verdicts.accuracy", {"verdicts": "v"}, unit="percent"),
        claim("N", 4, "verdicts.count", {"verdicts": "v"}, unit="count"),
        claim("G", 25.0, "arithmetic", {"expr": "100 - V"}, unit="points", status="arithmetic", sources=[]),
        claim("M", 1.0, "arithmetic", {"expr": "N * (100 - V) / 100"}, unit="count", status="arithmetic",
              sources=[]),
        claim("Z", 1.0, "arithmetic", {"expr": "V / (N - 4)"}, unit="count", status="arithmetic", sources=[]),
    ], files=[("v", "v.json", {"format": "verdicts"})])
    got = results(path)
    assert [got[k].survives for k in "VNGM"] == [True] * 4
    assert got["Z"].reasons == ["cannot recompute: ZeroDivisionError: float division by zero"]


@pytest.mark.parametrize("text, message", [
    ("task,baseline_s,mtp_s\nx,1,2\ny,3\n", "row 3: has fewer cells than the header"),
    ("task,baseline_s,mtp_s\nx,1,2\ny,3,4,5\n", "row 3: has more cells than the header"),
    ("task,baseline_s\nx,1\ny,3\n", "row 2: field mtp_s: expected a positive number, got None"),
])
def test_paired_log_ratio_refuses_ragged_csv(tmp_path, text, message):
    with PackageWriter(tmp_path / "bench", kind="throughput", package_id="bench-agentic") as w:
        w.add_text("durations.csv", text)
    path = ledger(tmp_path, [claim("S", 2, "stats.paired_log_ratio",
                                   {"package": "bench-agentic", "file": "durations.csv", "numerator": "baseline_s",
                                    "denominator": "mtp_s"}, unit="ratio")],
                  packages=[("bench-agentic", "bench")])
    assert results(path)["S"].reasons == [f"cannot recompute: bench-agentic/durations.csv: {message}"]
