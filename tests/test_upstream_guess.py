"""Issue 31 item 3: upstream MMLU-Pro's guess for a null pred, registered as its own policy beside audit's.

At TIGER-AI-Lab/MMLU-Pro@964a136 (the commit of the public result zips) evaluate_from_local.py scores a null pred as
`random.seed(12345); x = random.randint(0, len(each["options"]) - 1)`, credited when x == answer_index: reseeded
before every draw, so every unanswered item of one option count gets the same index (G of ten). audit's
`random-guess` draws per (item, sample) instead, so its 52.78% on Llama-3-70B matched upstream's README by chance.
Checked on the two real upstream zips in ../shared/data/mmlu_pro/upstream_zips.
"""

from __future__ import annotations

import json
import random
import zipfile

import pytest

from tests.conftest import shared_path

LLAMA = "mmlu_pro/upstream_zips/model_outputs_Meta-Llama-3-70B_5shots.zip"
GEMINI = "mmlu_pro/upstream_zips/model_outputs_gemini-1.5-flash-002_5shots.zip"
pytestmark = pytest.mark.shared_data


def _upstream_on_stored_preds(zip_rel: str) -> tuple[int, int]:
    """Upstream's own accuracy rule over the zip's stored preds, written out from evaluate_from_local.py@964a136."""
    z = shared_path(zip_rel)
    with zipfile.ZipFile(z) as zf:
        recs = json.loads(zf.read(zf.namelist()[0]))
    corr = 0
    for e in recs:
        if not e["pred"]:
            random.seed(12345)
            corr += random.randint(0, len(e["options"]) - 1) == e["answer_index"]
        else:
            corr += e["pred"] == e["answer"]
    return corr, len(recs)


def _grade(cli, here, zip_rel: str, policy: str, *flags: str) -> list[dict]:
    pkg = here / "pkg"
    if not pkg.exists():
        assert cli("import", "mmlu-pro", shared_path(zip_rel), "-o", pkg, *flags).code == 0
    out = here / f"{policy}.json"
    r = cli("grade", pkg, "--benchmark", "mmlu_pro", "--policy", f"no_answer={policy}", "-o", out, "-q")
    assert r.code == 0, r.err
    return json.loads(out.read_text(encoding="utf-8"))["items"]


def test_upstream_s_readme_figure_is_its_stored_preds_with_its_reseeded_guess():
    assert _upstream_on_stored_preds(LLAMA) == (6350, 12032)  # 52.776%: upstream's README says 52.78


def test_the_upstream_policy_guesses_one_letter_per_option_count(cli, here):
    rows = _grade(cli, here, LLAMA, "upstream-guess@964a136")
    guessed = [r for r in rows if r["status"] == "random_guess"]
    assert len(guessed) == 469
    by_count = {}
    for r in guessed:
        by_count.setdefault(r["detail"]["options"], set()).add(r["detail"]["guess"])
    assert by_count[10] == {"G"} and all(len(v) == 1 for v in by_count.values())
    assert {r["detail"]["rule"] for r in guessed} == {"upstream-guess@964a136"}
    assert sum(r["verdict"] == "correct" for r in rows) == 6356  # 345 more texts read than the stored preds
    ours = _grade(cli, here, LLAMA, "random-guess")
    assert sum(r["verdict"] == "correct" for r in ours) == 6351
    assert sum(a["verdict"] != b["verdict"] for a, b in zip(rows, ours, strict=True)) == 89
    assert cli("reproduce", here / "upstream-guess@964a136.json").code == 0


def test_gemini_matches_upstream_s_rule_exactly(cli, here):
    rows = _grade(cli, here, GEMINI, "upstream-guess@964a136", "--on-bad-row", "record")
    assert sum(r["verdict"] == "correct" for r in rows) == _upstream_on_stored_preds(GEMINI)[0] == 7709
