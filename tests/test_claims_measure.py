"""Measurement recipes (bench.*, telemetry.mean, trace.*, floor.*) against figures computed here by hand from the
committed H200 packages' raw rows, and against someone trying to get past them: an edited summary (with and without
re-pinning), a floor bundle swapped or re-bundled with another shape's floor, a profile without steps, wrong
package kinds, telemetry of another run."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import struct
import tarfile
from pathlib import Path

import pandas as pd
import pytest
from tests.claims_helpers import PACKAGES, copy_shipped, edit

from audit.claims import registry
from audit.claims.recipes_bench import ArmArgs
from audit.claims.verify import verify
from audit.fileio import sha256_file
from audit.packages import bundle, open_package

BENCH = PACKAGES / "evidence-h200-bench"
TRACE = PACKAGES / "evidence-h200-trace"
FLOOR = PACKAGES / "evidence-h200-floor"
GRAPHS, EAGER = "throughput-graphs-d45986f960d7", "throughput-eager-00ffc4c83c96"
NGRAM = "throughput-ngram-b007ea0a8257"
TEL_GRAPHS, TEL_EAGER = "telemetry-graphs-11cdc3039dd7", "telemetry-eager-6d25648805bf"
PROFILE, NO_STEPS = "profile-package-82e54bca16ee", "profile-package-3840599218be"
LLAMA = "floor-llama-3.1-8b"
PACKAGE_PATHS = {
    GRAPHS: "evidence-h200-bench/graphs", EAGER: "evidence-h200-bench/eager", NGRAM: "evidence-h200-bench/ngram",
    TEL_GRAPHS: "evidence-h200-bench/graphs.telemetry", TEL_EAGER: "evidence-h200-bench/eager.telemetry",
    PROFILE: "evidence-h200-trace/profile-decode-tp1", NO_STEPS: "evidence-h200-trace/profile-default-marker",
    LLAMA: "evidence-h200-floor/floor-llama-3.1-8b.tar.gz",
    "floor-qwen3-30b-a3b": "evidence-h200-floor/floor-qwen3-30b-a3b.tar.gz",
}


# --------------------------------------------------------------------------- by hand, from the raw rows


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def window_tok_s(arm: str) -> list[float]:
    """Token arrivals of timed requests in each window / its length (no audit code involved)."""
    reqs = [r for r in jsonl(BENCH / arm / "requests.jsonl") if r["phase"] == "timed"]
    arrivals = [r["started_at"] + t for r in reqs for t in r["token_times"]]
    return [sum(w["start"] <= a < w["end"] for a in arrivals) / (w["end"] - w["start"])
            for w in jsonl(BENCH / arm / "windows.jsonl")]


def timed_in_windows(arm: str) -> list[dict]:
    ws = jsonl(BENCH / arm / "windows.jsonl")
    return [r for r in jsonl(BENCH / arm / "requests.jsonl")
            if r["phase"] == "timed" and ws[0]["start"] <= r["started_at"] < ws[-1]["end"]]


def mean_se(xs: list[float]) -> tuple[float, float]:
    return statistics.fmean(xs), statistics.stdev(xs) / math.sqrt(len(xs))


def counter_by_window(tel: str, column: str, gpm: bool) -> list[float]:
    d = pd.read_parquet(BENCH / tel / ("gpm_samples.parquet" if gpm else "gpu_samples.parquet"))
    out = []
    for w in json.loads((BENCH / tel / "manifest.json").read_text())["provenance"]["extra"]["windows"]:
        _, start, end = w
        if gpm:  # each GPM interval weighted by its overlap with the window
            o = (d["t_end"].clip(upper=end) - d["t_start"].clip(lower=start)).clip(lower=0)
            ok = (o > 0) & d[column].notna()
            out.append(float((d.loc[ok, column] * o[ok]).sum() / o[ok].sum()))
        else:
            out.append(float(d.loc[(d["t"] >= start) & (d["t"] < end), column].dropna().mean()))
    return out


def llama_floor_by_hand() -> tuple[float, float]:
    """Bytes per token of Llama-3.1-8B's shape from its safetensors headers: every weight once, the embedding one
    row, plus K and V for 640 tokens; over the bandwidth of NVML's 6016-bit bus at 3201 MHz (×2)."""
    cfg, total, embed = None, 0, 0
    with tarfile.open(FLOOR / "floor-llama-3.1-8b.tar.gz") as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            data = tar.extractfile(m).read()
            if m.name.endswith("config.json") and "checkpoint/" in m.name:
                cfg = json.loads(data)
            elif m.name.endswith(".safetensors"):
                (n,) = struct.unpack("<Q", data[:8])
                for name, t in json.loads(data[8:8 + n]).items():
                    if name == "__metadata__":
                        continue
                    size = t["data_offsets"][1] - t["data_offsets"][0]
                    total += size
                    if name == "model.embed_tokens.weight":
                        embed = size
    head_dim = cfg["hidden_size"] // cfg["num_attention_heads"]
    kv = 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim * 2 * 640
    per_token = total - embed + cfg["hidden_size"] * 2 + kv
    tbps = 6016 / 8 * 3201e6 * 2
    ms = per_token / tbps * 1000
    return ms, 1000 / ms


# --------------------------------------------------------------------------- a ledger over copies of the packages


@pytest.fixture(scope="module")
def evidence(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("evidence")
    for name in ("evidence-h200-bench", "evidence-h200-trace", "evidence-h200-floor"):
        shutil.copytree(PACKAGES / name, root / name)
    return root


def digest(path: Path) -> str:
    with open_package(path) as pkg:
        return pkg.digest


def write_ledger(root: Path, claims: list[dict], name: str = "claims.yaml") -> Path:
    used = sorted({s for c in claims for s in c["sources"]})
    doc = {"schema_version": 1, "title": "measurements",
           "packages": [{"id": i, "path": PACKAGE_PATHS[i], "sha256": digest(root / PACKAGE_PATHS[i])} for i in used],
           "claims": claims}
    p = root / name
    p.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return p


def claim(cid: str, value: float, unit: str, recipe: str, args: dict, tol: float = 1e-9,
          sources: list[str] | None = None) -> dict:
    srcs = sources or [v for k, v in args.items() if k in ("package", "a", "b", "run")]
    return {"id": cid, "text": cid, "value": value, "unit": unit, "status": "single-run", "sources": srcs,
            "recipe": {"name": recipe, "args": args}, "tolerance": {"absolute": tol}}


@pytest.fixture(scope="module")
def by_hand(evidence) -> dict:
    """Every measurement recipe on the committed packages, each recorded with the value computed here by hand."""
    g, e, n = window_tok_s("graphs"), window_tok_s("eager"), window_tok_s("ngram")
    reqs = timed_in_windows("graphs")
    decoding = [r for r in reqs if r["output_tokens"] >= 2 and r["token_times"][-1] > r["token_times"][0]]
    decode = sum(r["output_tokens"] - 1 for r in decoding) / math.fsum(r["token_times"][-1] - r["token_times"][0]
                                                                       for r in decoding)
    ttft = statistics.median((r["first_token_at"] - r["started_at"]) * 1000 for r in reqs if r["first_token_at"])
    anchor = json.loads((BENCH / "graphs" / "anchor.json").read_text())["output_throughput"]
    spec = [(w["server_counters_end"][k] - w["server_counters_start"].get(k, 0.0)
             for k in ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_draft_tokens_total"))
            for w in jsonl(BENCH / "ngram" / "windows.jsonl")]
    accepted, drafted = (sum(x) for x in zip(*spec))
    steps = [s for s in jsonl(TRACE / "profile-decode-tp1" / "steps.jsonl") if s["selected"]]
    floor_ms, floor_tok_s = llama_floor_by_hand()
    hand = {
        "tok_s": mean_se(g), "eager_tok_s": mean_se(e),
        "ratio": mean_se([a / b for a, b in zip(g, e)]), "ngram_ratio": mean_se([a / b for a, b in zip(n, g)]),
        "worst_best": (min(a / b for a, b in zip(g, e)), max(a / b for a, b in zip(g, e))),
        "decode": decode, "ttft": ttft, "anchor": statistics.fmean(g) / anchor, "accepted": accepted / drafted,
        "kernel_running": mean_se(counter_by_window("graphs.telemetry", "kernel_running_pct", gpm=False)),
        "sm_util": mean_se(counter_by_window("graphs.telemetry", "sm_util_pct", gpm=True)),
        "dram": mean_se(counter_by_window("graphs.telemetry", "dram_bw_util_pct", gpm=True)),
        "power": mean_se(counter_by_window("graphs.telemetry", "power_w", gpm=False)),
        "kernels": statistics.median(s["kernels"] for s in steps), "kernels_max": max(s["kernels"] for s in steps),
        "step_ms": statistics.median(s["duration_us"] for s in steps) / 1000,
        "naive": sum(s["kernels"] for s in jsonl(TRACE / "profile-decode-tp1" / "steps.jsonl")) / 34,
        "floor_ms": floor_ms, "floor_tok_s": floor_tok_s,
    }
    claims = [
        claim("T1", hand["tok_s"][0], "tok/s", "bench.tok_s", {"package": GRAPHS}),
        claim("T2", hand["eager_tok_s"][0], "tok/s", "bench.tok_s", {"package": EAGER}),
        claim("R1", hand["ratio"][0], "ratio", "bench.ratio", {"a": GRAPHS, "b": EAGER}),
        claim("R2", hand["ngram_ratio"][0], "ratio", "bench.ratio", {"a": NGRAM, "b": GRAPHS}),
        claim("R3", hand["worst_best"][0], "ratio", "bench.ratio", {"a": GRAPHS, "b": EAGER}, tol=10),
        claim("DEC", hand["decode"], "tok/s", "bench.decode_tok_s", {"package": GRAPHS}),
        claim("TTFT", hand["ttft"] / 1000, "s", "bench.ttft_median", {"package": GRAPHS}),
        claim("ANC", hand["anchor"], "ratio", "bench.anchor_ratio", {"package": GRAPHS}),
        claim("SPEC", 100 * hand["accepted"], "percent", "bench.spec", {"package": NGRAM}),
        claim("U1", hand["kernel_running"][0], "percent", "telemetry.mean",
              {"package": TEL_GRAPHS, "counter": "kernel_running_pct", "run": GRAPHS}),
        claim("U2", hand["sm_util"][0], "percent", "telemetry.mean", {"package": TEL_GRAPHS, "counter": "sm_util_pct"}),
        claim("U3", hand["dram"][0], "percent", "telemetry.mean",
              {"package": TEL_GRAPHS, "counter": "dram_bw_util_pct", "run": GRAPHS}),
        claim("P1", hand["power"][0], "W", "telemetry.mean", {"package": TEL_GRAPHS, "counter": "power_w"}),
        claim("K1", hand["kernels"], "count", "trace.kernels_per_step", {"package": PROFILE}),
        claim("K2", hand["kernels_max"], "count", "trace.kernels_per_step",
              {"package": PROFILE, "statistic": "max", "stream": "7"}),
        claim("K3", hand["naive"], "count", "trace.kernels_over_markers", {"package": PROFILE}),
        claim("S1", hand["step_ms"], "ms", "trace.step_ms", {"package": PROFILE}),
        claim("F1", hand["floor_tok_s"], "tok/s", "floor.tok_s", {"package": LLAMA}),
        claim("F2", hand["floor_ms"], "ms", "floor.ms_per_token", {"package": LLAMA}),
        claim("FR", 100 * hand["decode"] / hand["floor_tok_s"], "percent", "arithmetic", {"expr": "100 * DEC / F1"},
              sources=[]),
    ]
    claims[-1]["status"] = "arithmetic"
    return {"hand": hand, "checks": {c.claim.id: c for c in verify(write_ledger(evidence, claims)).claims}}


@pytest.mark.slow
def test_every_measurement_recipe_matches_the_hand_computed_figure(by_hand):
    checks = by_hand["checks"]
    assert {k: c.reasons for k, c in checks.items() if not c.survives} == {}
    # The figures the lab note and the READMEs quote, from the raw rows.
    v = {k: c.result.value for k, c in checks.items()}
    assert (round(v["T1"], 1), round(v["T2"], 1), round(v["R1"], 2), round(v["R2"], 2)) == (204.0, 58.2, 3.56, 2.36)
    assert (round(v["DEC"], 1), round(v["TTFT"], 4), round(v["ANC"], 3), v["SPEC"]) == (208.5, 0.0304, 1.003, 100.0)
    assert (round(v["U1"], 1), round(v["U2"], 1), round(v["U3"], 1)) == (98.1, 66.7, 64.0)
    assert (v["K1"], v["K2"], round(v["K3"], 2), round(v["S1"], 3)) == (436, 437, 410.53, 4.817)
    assert (round(v["F1"], 1), round(v["F2"], 3), round(v["FR"], 1)) == (319.0, 3.135, 65.4)


def test_intervals_are_two_standard_errors_across_windows(by_hand):
    hand, checks = by_hand["hand"], by_hand["checks"]
    for cid, key in (("T1", "tok_s"), ("T2", "eager_tok_s"), ("R1", "ratio"), ("U1", "kernel_running"),
                     ("P1", "power")):
        mean, se = hand[key]
        iv = checks[cid].result.interval
        assert (iv.low, iv.high, iv.se) == pytest.approx((mean - 2 * se, mean + 2 * se, se), rel=1e-12), cid
        assert checks[cid].result.n == 3
    assert checks["R1"].result.interval.method == "paired_windows_2se"
    assert checks["T1"].result.interval.method == "windows_2se"
    lo, hi = hand["worst_best"]
    assert f"worst to best pair {lo:.3f}–{hi:.3f}×" in checks["R1"].result.basis
    assert checks["R1"].result.basis.startswith("graphs / eager tok/s paired by window: 4.137×, 3.121×, 3.411×")


def test_units_convert_and_a_counter_takes_its_own_unit(by_hand):
    checks = by_hand["checks"]
    assert (checks["TTFT"].result.unit, checks["P1"].result.unit, checks["SPEC"].result.unit) == ("s", "W", "percent")
    assert checks["P1"].result.value == pytest.approx(446.18, abs=0.01)


def test_series_for_the_page(by_hand):
    checks = by_hand["checks"]
    ratio = checks["R1"].result.series
    assert [label for label, _ in ratio.lines] == ["graphs", "eager"]
    assert [round(y, 1) for _, y in ratio.lines[1][1]] == [49.3, 65.5, 59.7]
    counters = checks["U2"].result.series
    assert [label.split(":")[0] for label, _ in counters.lines] == ["utilization.gpu", "SM_UTIL", "DRAM_BW_UTIL"]
    assert counters.y_range == (0.0, 105.0)
    assert len(counters.lines[0][1]) == 450  # 45 s at 10 Hz
    kernels = checks["K1"].result.series
    assert [y for _, y in kernels.lines[0][1]].count(437) == 2 and len(kernels.lines[0][1]) == 31
    floor = checks["F1"].result.series
    assert floor.style == "barh" and floor.categories[:3] == ("dense_mlp", "attention", "output_head")


# --------------------------------------------------------------------------- refusals


def one(root: Path, c: dict, name: str) -> list[str]:
    """The reasons the single claim `c` does not survive."""
    (check,) = verify(write_ledger(root, [c], name)).claims
    return check.reasons


def test_a_profile_without_steps_is_refused_with_the_traces_reason(evidence):
    from audit.trace.package import open_profile

    refused = open_profile(evidence / PACKAGE_PATHS[NO_STEPS]).summary.markers.refused
    assert refused == "no event matches the step marker /^ProfilerStep#\\d+$/"
    for recipe, unit in (("trace.kernels_per_step", "count"), ("trace.step_ms", "ms")):
        reasons = one(evidence, claim("K", 410, unit, recipe, {"package": NO_STEPS}), "nosteps.yaml")
        assert reasons == [f"cannot recompute: {NO_STEPS} has no per-step figures: {refused}"]
    # The whole-trace division needs markers too: the default marker finds none.
    reasons = one(evidence, claim("K", 410, "count", "trace.kernels_over_markers", {"package": NO_STEPS}), "n.yaml")
    assert reasons == [f"cannot recompute: {NO_STEPS}: no step marker matches ^ProfilerStep#\\d+$"]


@pytest.mark.parametrize("recipe, args, unit, message", [
    ("bench.tok_s", {"package": TEL_GRAPHS}, "tok/s",
     f"package {TEL_GRAPHS} is a telemetry package; bench.tok_s reads a throughput package"),
    ("bench.ratio", {"a": GRAPHS, "b": PROFILE}, "ratio",
     f"package {PROFILE} is a profile package; bench.ratio reads a throughput package"),
    ("telemetry.mean", {"package": GRAPHS, "counter": "sm_util_pct"}, "percent",
     f"package {GRAPHS} is a throughput package; telemetry.mean reads a telemetry package"),
    ("trace.kernels_per_step", {"package": LLAMA}, "count",
     f"package {LLAMA} is a checkpoint-headers package; trace.kernels_per_step reads a profile package"),
    ("floor.tok_s", {"package": GRAPHS}, "tok/s",
     f"package {GRAPHS} is a throughput package; floor.tok_s reads a checkpoint-headers package"),
    ("bench.spec", {"package": GRAPHS}, "percent", f"{GRAPHS}: the server reported no speculative decoding"),
    ("bench.anchor_ratio", {"package": EAGER}, "ratio",
     f"{EAGER} holds no anchor result (the run measured no `vllm bench serve`)"),
    ("telemetry.mean", {"package": TEL_EAGER, "counter": "sm_util_pct", "run": GRAPHS}, "percent", None),
])
def test_each_recipe_validates_what_it_reads(evidence, recipe, args, unit, message):
    reasons = one(evidence, claim("X", 1.0, unit, recipe, args), "kind.yaml")
    if message is None:  # telemetry of another run
        assert reasons[0].startswith("cannot recompute: ") and f"belongs to throughput package {EAGER}" in reasons[0]
        assert f"not {GRAPHS}" in reasons[0]
    else:
        assert reasons == [f"cannot recompute: {message}"]


def test_a_counter_in_the_wrong_unit_is_refused_when_the_ledger_is_read(evidence, cli):
    write_ledger(evidence, [claim("P", 446.0, "percent", "telemetry.mean",
                                  {"package": TEL_GRAPHS, "counter": "power_w"})], "unit.yaml")
    r = cli("verify", evidence / "unit.yaml")
    assert r.code == 2
    assert r.err.endswith("claim P: field unit: telemetry.mean(counter=power_w) gives W, which does not convert to "
                          "the claim's unit 'percent'\n")


def test_a_recipe_that_gives_another_unit_than_registered_fails_plainly(evidence):
    @registry.recipe("test.wrong_unit", unit="tok/s")
    def wrong_unit(args: ArmArgs, ctx: registry.Context) -> registry.Result:
        return registry.Result(value=1.0, unit="ms")

    try:
        reasons = one(evidence, claim("W", 1.0, "tok/s", "test.wrong_unit", {"package": GRAPHS}), "w.yaml")
    finally:
        del registry.REGISTRY["test.wrong_unit"]
    assert reasons == ["cannot recompute: test.wrong_unit gave a value in ms, registered as tok/s"]


# --------------------------------------------------------------------------- attacks on the shipped ledger


def failing(out: str) -> list[str]:
    lines = out.split("\nclaims:\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return sorted(line.split()[0] for line in lines if line.split()[-1] == "NO")


GRAPHS_CLAIMS = ["M1", "M10", "M11", "M12", "M17", "M3", "M4", "M6", "M7", "M8", "M9"]
"""Every claim that reads the graphs throughput package (M9–M12 name it as their run; M17 is arithmetic over M8)."""


def repin(ledger: Path, pkg: Path, old_digest: str) -> str:
    new = digest(pkg)
    edit(ledger, old_digest, new)
    return new


def rehash(pkg: Path, rel: str) -> None:
    """Update the manifest's sha256 and size of `rel` after it was edited: a forger's package that validates."""
    m = json.loads((pkg / "manifest.json").read_text(encoding="utf-8"))
    for f in m["files"]:
        if f["path"] == rel:
            f["sha256"], f["bytes"] = sha256_file(pkg / rel)
    (pkg / "manifest.json").write_text(json.dumps(m, indent=2) + "\n", encoding="utf-8")


@pytest.mark.slow
def test_an_edited_throughput_summary_fails_validation_and_names_its_claims(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(tmp_path / "evidence-h200-bench" / "graphs" / "summary.json", '"mean": 203.95555555555555',
         '"mean": 240.0')
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert (r.code, r.err) == (1, "")
    assert failing(r.out) == GRAPHS_CLAIMS
    assert f"  {GRAPHS}: fails validation: evidence-h200-bench/graphs/summary.json: field sha256: sha256 is " in r.out
    m1 = r.out.split("\nM1 does not survive: ", 1)[1].split("\n\n")[0]
    assert m1.splitlines()[2].startswith(f"  input {GRAPHS} failed its checks: fails validation: ")
    assert r.out.endswith("\n43 of 54 claims survive.\n")


@pytest.mark.slow
def test_a_throughput_file_swapped_after_verify_validated_it_is_never_read(cli, tmp_path, monkeypatch):
    # The recipes read the package verify validated (no second opening): a row file replaced after that one
    # validation is refused by the pinned read, named by its path in the ledger.
    import audit.packages.read as pkg_read

    ledger = copy_shipped(tmp_path)
    pkg = tmp_path / "evidence-h200-bench" / "graphs"
    original = pkg_read.validate_tree

    def validate_then_swap(root, *a, **k):
        out = original(root, *a, **k)
        if Path(root) == pkg:
            text = (pkg / "windows.jsonl").read_text(encoding="utf-8")
            assert '"window":1,' in text
            (pkg / "windows.jsonl").write_text(text.replace('"window":1,', '"window":7,', 1), encoding="utf-8")
        return out

    monkeypatch.setattr(pkg_read, "validate_tree", validate_then_swap)
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert f"  package  {GRAPHS}     evidence-h200-bench/graphs" in r.out and "FAILED" not in r.out
    assert failing(r.out) == GRAPHS_CLAIMS
    lines = r.out.split("\nM1 does not survive: ", 1)[1].split("\n\n")[0].splitlines()
    assert lines[2].startswith("  cannot recompute: evidence-h200-bench/graphs/windows.jsonl: changed while being "
                               "read: sha256 is "), lines


@pytest.mark.slow
def test_an_edited_summary_that_was_rehashed_and_repinned_is_caught_by_the_recomputation(cli, tmp_path, monkeypatch):
    # The forger fixes the manifest and the ledger's digest: the package validates and its digest matches, but the
    # bench store recomputes the summary from the rows and refuses the edited one.
    ledger = copy_shipped(tmp_path)
    pkg = tmp_path / "evidence-h200-bench" / "graphs"
    edit(pkg / "summary.json", '"mean": 203.95555555555555', '"mean": 240.0')
    rehash(pkg, "summary.json")
    new = repin(ledger, pkg, "c9eadc71178670eac9cafdbbc53f3cd9ba9b3a71d7c9277ef861dba570abd4ec")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert f"  package  {GRAPHS}     evidence-h200-bench/graphs" in r.out and "FAILED" not in r.out
    # M9–M12 read the graphs run too (to check the telemetry's link and its valid windows): they fail the same way.
    assert failing(r.out) == GRAPHS_CLAIMS
    for cid in ("M1", "M9"):
        lines = r.out.split(f"\n{cid} does not survive: ", 1)[1].split("\n\n")[0].splitlines()
        assert lines[2] == ("  cannot recompute: evidence-h200-bench/graphs/summary.json: differs from the figures "
                            "recomputed from the rows: tok_s.mean: stored 240.0, recomputed 203.95555555555555")
    assert new != "c9eadc71178670eac9cafdbbc53f3cd9ba9b3a71d7c9277ef861dba570abd4ec"


@pytest.mark.slow
def test_a_floor_bundle_swapped_for_another_shape(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    floors = tmp_path / "evidence-h200-floor"
    shutil.copyfile(floors / "floor-qwen3-30b-a3b.tar.gz", floors / "floor-llama-3.1-8b.tar.gz")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert "  floor-llama-3.1-8b: its manifest names package 'floor-qwen3-30b-a3b', the ledger " \
           "'floor-llama-3.1-8b'\n" in r.out
    assert failing(r.out) == ["M16", "M17"]
    assert "  cannot recompute: claim M16 was not recomputed\n" in r.out


def _rebundle_with(tmp_path: Path, target: str, donor: str, files: tuple[str, ...]) -> Path:
    """Unpack floor bundle `target`, put `donor`'s files in it, fix the manifest, bundle it again in place."""
    floors = tmp_path / "evidence-h200-floor"
    work = tmp_path / "work"
    with open_package(floors / f"{target}.tar.gz") as pkg:
        shutil.copytree(pkg.root, work / target)
    with open_package(floors / f"{donor}.tar.gz") as pkg:
        for rel in files:
            shutil.copyfile(pkg.root / rel, work / target / rel)
    for rel in files:
        rehash(work / target, rel)
    (floors / f"{target}.tar.gz").unlink()
    bundle(work / target, floors / f"{target}.tar.gz")
    return floors / f"{target}.tar.gz"


@pytest.mark.slow
def test_a_floor_bundle_whose_floor_is_another_shapes_is_caught_by_floor_check(cli, tmp_path, monkeypatch):
    # Llama's header-only checkpoint with Qwen3-30B-A3B's floor.json and floor.txt, re-bundled and re-pinned:
    # it validates and matches the ledger, but the floor recomputed from its headers is Llama's.
    ledger = copy_shipped(tmp_path)
    bundled = _rebundle_with(tmp_path, LLAMA, "floor-qwen3-30b-a3b", ("floor.json", "floor.txt"))
    repin(ledger, bundled, "cd363cbbab1bb65bc3e3eb211fe46e7ea4c1ad302f6981c1f26db80c71a4e7ce")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["M16", "M17"]
    m16 = r.out.split("\nM16 does not survive: ", 1)[1].split("\n\n")[0].splitlines()
    assert m16[2].startswith(f"  cannot recompute: {PACKAGE_PATHS[LLAMA]}: the floor recomputed from its checkpoint "
                             "headers differs "
                             "from floor.json: ")


@pytest.mark.slow
def test_an_edited_profile_summary_is_caught_by_recomputing_its_trace(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    pkg = tmp_path / "evidence-h200-trace" / "profile-decode-tp1"
    summary = pkg / "summary.json"
    text = summary.read_text(encoding="utf-8")
    assert text.count('"median": 436.0') == 2
    summary.write_text(text.replace('"median": 436.0', '"median": 1529.0'), encoding="utf-8")
    rehash(pkg, "summary.json")
    repin(ledger, pkg, "ac692edccd250b01e81e79401753a7b670ec39ae4e2ad7b11d8acc2130caf73d")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["M13", "M14", "M15"]
    m13 = r.out.split("\nM13 does not survive: ", 1)[1].split("\n\n")[0].splitlines()
    assert m13[2] == (f"  cannot recompute: {PACKAGE_PATHS[PROFILE]}: summary.json differs from the figures "
                      "recomputed from its trace "
                      "trace/rank0.1796125371400164994.pt.trace.json.gz: steps.kernels_per_step.median: stored 1529.0, "
                      "recomputed 436.0 (and 1 more)")


@pytest.mark.slow
def test_planted_wrong_measurements_are_named(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(ledger, "    value: 436\n", "    value: 1529\n")  # M13: the lab note's kernels per step
    edit(ledger, "    value: 2.36\n", "    value: 2.04\n")  # M4: a ratio from another run
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert (r.code, r.err) == (1, "")
    assert failing(r.out) == ["M13", "M4"]
    assert "  recomputed 436, recorded 1,529 (tolerance exact)\n" in r.out
    assert "  recomputed 2.362×, recorded 2.040× (tolerance ±0.005 ratio)\n" in r.out
    assert r.out.endswith("\n52 of 54 claims survive.\n")


@pytest.mark.slow
def test_an_unfounded_measurement_retraction(cli, tmp_path, monkeypatch):
    # M14 retracting a value that holds (436 published) is refused, as is a published_recipe that does not give it.
    ledger = copy_shipped(tmp_path)
    edit(ledger, "    value: 410\n", "    value: 436\n")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert failing(r.out) == ["M14"]
    m14 = r.out.split("\nM14 does not survive: ", 1)[1].split("\n\n")[0].splitlines()
    assert m14[2:] == ["  the published value 436 recomputes: the retraction is unfounded",
                       "  published_recipe gives 410.53, not the published 436"]


def test_the_memo_never_outlives_the_content(tmp_path):
    # verify remembers a floor check per content digest within a process: a package whose headers changed (here its
    # config.json, Qwen3's in Llama's bundle) has another digest and is checked again.
    shutil.copytree(FLOOR, tmp_path / "evidence-h200-floor")
    ledger = write_ledger(tmp_path, [claim("F", 319.0, "tok/s", "floor.tok_s", {"package": LLAMA}, tol=0.05)])
    assert verify(ledger).all_survive
    assert verify(ledger).all_survive  # from the memo
    bundled = _rebundle_with(tmp_path, LLAMA, "floor-qwen3-30b-a3b", ("checkpoint/config.json",))
    write_ledger(tmp_path, [claim("F", 319.0, "tok/s", "floor.tok_s", {"package": LLAMA}, tol=0.05)])
    (check,) = verify(ledger).claims
    assert digest(bundled) != "cd363cbbab1bb65bc3e3eb211fe46e7ea4c1ad302f6981c1f26db80c71a4e7ce"
    assert check.reasons[0].startswith(f"cannot recompute: {PACKAGE_PATHS[LLAMA]}: ")
