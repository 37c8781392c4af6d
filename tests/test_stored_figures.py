"""Issue 31 item 9: every figure `audit grade` prints is stored in the verdict file (schema version 3), claimable,
and compared by `audit reproduce`.

Before, pass@1, pass@K, maj@K and the Wilson and Clopper–Pearson intervals were computed when printed and the file
kept only `binomial_2se`: no ledger claim could pin them and a reproduction never compared them.
"""

from __future__ import annotations

import json

from tests.builders import make_package
from tests.test_claims_recipes import claim, ledger, results

ITEMS = [{"item_id": f"q{i}", "reference": "ABCD"[i % 4], "num_choices": 4} for i in range(6)]
# Three samples of six items: q0 right 3/3, q1 2/3, q2 1/3 (its answers tie 1-1-1), q3 0/3, q4 3/3, q5 2/3.
SAID = {"q0": "AAA", "q1": "BBC", "q2": "CAB", "q3": "AAA", "q4": "AAA", "q5": "BBB"}
RIGHT = {"q0": "A", "q1": "B", "q2": "C", "q3": "D", "q4": "A", "q5": "B"}


def _graded(tmp_path, cli):
    items = [{**it, "reference": RIGHT[it["item_id"]]} for it in ITEMS]
    responses = [{"item_id": i, "sample": s, "response": f"The answer is ({said[s]})."}
                 for i, said in SAID.items() for s in range(3)]
    responses[-1]["response"] = "The answer is (C)."  # q5: B, B, C
    pkg = make_package(tmp_path / "pkg", responses=responses, items=items, benchmark="mmlu_pro")
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "-o", tmp_path / "g.json")
    assert r.code == 0, r.err
    return r, tmp_path / "g.json"


def test_pass_at_k_maj_at_k_and_every_interval_are_stored(tmp_path, cli):
    r, path = _graded(tmp_path, cli)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema_version"] == 3
    stored = {f["name"]: f for f in doc["summary"]["sample_figures"]}
    assert list(stored) == ["pass@1", "pass@3", "maj@3"]
    assert (stored["pass@3"]["value"], stored["pass@3"]["items"]) == (5 / 6, 6)
    assert stored["maj@3"]["interval"]["method"] == "wilson"
    run = next(f for f in doc["summary"]["figures"] if f["name"] == "accuracy[sample=0]")
    assert [iv["method"] for iv in run["intervals"]] == ["binomial_2se", "wilson", "clopper_pearson"]
    assert "over 6 items with 3 samples each (stored in the summary):" in r.out.splitlines()
    printed = [x for x in r.out.splitlines() if x.startswith("  pass@3 ")]
    assert printed == [f"  pass@3      83.33%  clustered_t [{100 * stored['pass@3']['interval']['low']:.2f}, "
                       f"{100 * stored['pass@3']['interval']['high']:.2f}]"]
    assert cli("show", path).out.count("(stored in the summary)") == 1


def test_reproduce_compares_the_stored_figures(tmp_path, cli):
    _, path = _graded(tmp_path, cli)
    assert cli("reproduce", path).code == 0
    doc = path.read_text(encoding="utf-8")
    stored = json.loads(doc)["summary"]["sample_figures"][1]
    assert stored["name"] == "pass@3"
    path.write_text(doc.replace(json.dumps(stored["value"]), "0.9", 1), encoding="utf-8")
    r = cli("reproduce", path)
    assert r.code == 1 and "the header or summary differs" in r.out


def test_they_are_claimable(tmp_path, cli):
    _, path = _graded(tmp_path, cli)
    (tmp_path / "v.json").write_bytes(path.read_bytes())
    lp = ledger(tmp_path, [claim("P", 5 / 6, "verdicts.sample_figure", {"verdicts": "v", "figure": "pass@3"}),
                           claim("M", 4 / 6, "verdicts.sample_figure", {"verdicts": "v", "figure": "maj@3"}),
                           claim("W", 11 / 18, "verdicts.accuracy", {"verdicts": "v", "interval": "wilson"}),
                           claim("X", 0.5, "verdicts.sample_figure", {"verdicts": "v", "figure": "pass@8"})],
                files=[("v", "v.json", {"format": "verdicts"})])
    got = results(lp)
    assert got["P"].survives and got["P"].result.interval.method == "clustered_t"
    assert got["M"].survives and got["M"].result.interval.method == "wilson"
    assert got["W"].survives and got["W"].result.interval.method == "wilson"
    assert got["X"].reasons == ["cannot recompute: no figure pass@8: the grading has [3] sample(s) per item "
                                "(pass@1, pass@K and maj@K need K >= 2 samples of every item)"]
