"""The task_runs.* claims recipes on the demo's agentic packages: `audit verify` recomputes the agentic headlines,
and refuses the +40% tasks-per-hour claim, whose wall clock is one task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from audit.claims.verify import verify
from audit.packages import open_package

AGENTIC = Path(__file__).resolve().parent.parent / "packages" / "demo-lab-note" / "agentic"
IDS = {"baseline": "demo-deepswe-baseline", "mtp": "demo-deepswe-mtp-k3", "k6": "demo-deepswe-k6"}
PATHS = {"demo-deepswe-baseline": "deepswe-baseline", "demo-deepswe-mtp-k3": "deepswe-mtp-k3",
         "demo-deepswe-k6": "deepswe-k6"}


def _digest(path: Path) -> str:
    with open_package(path) as pkg:
        return pkg.digest


def _ledger(root: Path, claims: list[dict]) -> Path:
    used = sorted({s for c in claims for s in c["sources"]})
    doc = {"schema_version": 1, "title": "agentic", "claims": claims,
           "packages": [{"id": i, "path": PATHS[i], "sha256": _digest(root / PATHS[i])} for i in used]}
    p = root / "claims.yaml"
    p.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    return p


def _claim(cid: str, value: float, unit: str, recipe: str, args: dict, tol: float = 0.005) -> dict:
    srcs = [v for k, v in args.items() if k in ("package", "a", "b")]
    return {"id": cid, "text": cid, "value": value, "unit": unit, "status": "single-run", "sources": srcs,
            "recipe": {"name": recipe, "args": args}, "tolerance": {"absolute": tol}}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in PATHS.values():
        shutil.copytree(AGENTIC / name, tmp_path / name)
    return tmp_path


def test_agentic_headlines_survive_and_the_plus_40_does_not(root):
    b, m, k6 = IDS["baseline"], IDS["mtp"], IDS["k6"]
    claims = [
        _claim("R1", 1.52, "ratio", "task_runs.paired_ratio", {"a": b, "b": m}),
        _claim("R2", 1.35, "ratio", "task_runs.paired_ratio", {"a": b, "b": m, "part": "low"}),
        _claim("R3", 1.64, "ratio", "task_runs.paired_ratio", {"a": b, "b": m, "by": "turns"}),
        _claim("K1", 64.62, "percent", "task_runs.mean", {"package": k6, "policy": "left_out"}),
        _claim("K2", 63.36, "percent", "task_runs.mean", {"package": k6}),
        _claim("K3", 2.21, "points", "task_runs.mean", {"package": k6, "part": "half_width"}),
        _claim("P1", 62.58, "percent", "task_runs.pass_k", {"package": k6, "k": 4, "estimator": "pass_hat_k"}),
        _claim("S1", 62.50, "percent", "task_runs.resolved_rate", {"package": b}),
        _claim("T1", 13.2, "tasks/hour", "task_runs.tasks_per_hour", {"package": b}, tol=0.05),
    ]
    report = verify(_ledger(root, claims))
    got = {c.claim.id: c for c in report.claims}
    survived = {cid for cid, c in got.items() if c.survives}
    assert survived == {"R1", "R2", "R3", "K1", "K2", "K3", "P1", "S1"}
    reason = " ".join(got["T1"].reasons)
    assert "8 workers for 8 tasks, so its wall clock (2182 s) is its slowest task (2180 s)" in reason
    assert "measures one task, not a rate" in reason


def test_a_recipe_given_another_kind_of_package_fails_naming_it(root, tmp_path):
    shutil.copytree(Path(__file__).resolve().parent.parent / "packages" / "demo-lab-note" / "math500",
                    root / "math500")
    PATHS["demo-lab-note-math500"] = "math500"
    try:
        c = _claim("X", 1.0, "percent", "task_runs.mean", {"package": "demo-lab-note-math500"})
        (check,) = verify(_ledger(root, [c])).claims
    finally:
        del PATHS["demo-lab-note-math500"]
    assert not check.survives
    assert "is a responses package; task_runs.mean reads a task-runs package" in " ".join(check.reasons)


@pytest.mark.parametrize(("recipe", "unit"), [("task_runs.resolved_rate", "fraction"),
                                              ("task_runs.tasks_per_hour", "tasks/hour")])
def test_a_run_recipe_names_the_run_it_needs(root, recipe, unit):
    # Both recipes read one run through one helper: six repetitions and no run named, or a run that is not there,
    # is refused with the package's runs listed; a run that is there is read.
    k6 = IDS["k6"]
    claims = [_claim("N", 0.5, unit, recipe, {"package": k6}),
              _claim("W", 0.5, unit, recipe, {"package": k6, "run": "rep-7"}),
              _claim("Y", 0.5, unit, recipe, {"package": k6, "run": "rep-2"})]
    got = {c.claim.id: " ".join(c.reasons) for c in verify(_ledger(root, claims)).claims}
    assert f"{k6} holds 6 runs; name one (run: ...)" in got["N"]
    assert f"{k6} has no run 'rep-7' (runs: rep-1, rep-2, rep-3, rep-4, rep-5, rep-6)" in got["W"]
    assert got["Y"].startswith("recomputed ")  # read (and here recorded wrong on purpose, to show its figure)
