"""The real upstream MMLU-Pro zips (../shared/data/mmlu_pro/upstream_zips): import, then grade, with nothing else.

Issue 20: an import kept the gold answers only with --items-out, so `audit grade PKG` failed; one record of the
gemini-1.5-flash-002 zip whose `answer` and `answer_index` disagree refused all 12,012 rows."""

from __future__ import annotations

import json

import pytest
from tests.conftest import shared_path

LLAMA = "mmlu_pro/upstream_zips/model_outputs_Meta-Llama-3-70B_5shots.zip"
GEMINI = "mmlu_pro/upstream_zips/model_outputs_gemini-1.5-flash-002_5shots.zip"
pytestmark = pytest.mark.slow  # each test imports a whole upstream zip (12,000 rows)


NOTE = ("note: 1 row with status bad_input (the source record disagrees with itself): counted as not graded in "
        "accuracy_all, left out of accuracy")


def test_import_then_grade_gives_the_upstream_readme_figure(cli, here):
    z = shared_path(LLAMA)
    r = cli("import", "mmlu-pro", z, "-o", "llama")
    pid = json.loads((here / "llama" / "manifest.json").read_text())["package_id"]
    assert (r.code, r.out, r.err) == (0, f"wrote llama: responses package {pid}, 12032 rows and 12032 items\n", "")
    r = cli("grade", "llama", "--benchmark", "mmlu_pro", "--policy", "no_answer=random-guess", "-o", "r.json")
    assert r.code == 0, r.err
    # 52.78%, the figure TIGER-AI-Lab/MMLU-Pro's README gives for Llama-3-70B, but by audit's own draws (issue 31:
    # upstream's is 6,350/12,032 from its stored preds; see test_upstream_guess.py).
    assert r.out.splitlines()[2] == ("accuracy[sample=0]            52.78%  (6351/12032)  binomial_2se [51.87, 53.69]; "
                                     "wilson [51.89, 53.68]; clopper_pearson [51.89, 53.68]")


def test_one_inconsistent_record_is_refused_or_recorded_as_bad_input(cli, here):
    z = shared_path(GEMINI)
    label = f"{z}:model_outputs_gemini-1.5-flash-002_5shots.json"
    r = cli("import", "mmlu-pro", z, "-o", "gem")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {label}: row 4319: field answer_index: answer 'C' does "
                                             f"not match answer_index 1 (--on-bad-row record imports it ungraded)\n")
    assert not (here / "gem").exists()

    r = cli("import", "mmlu-pro", z, "-o", "gem", "--on-bad-row", "record", "--recorded", "recorded.json")
    assert r.code == 0, r.err
    pid = json.loads((here / "gem" / "manifest.json").read_text())["package_id"]
    assert r.out.splitlines() == [
        f"wrote gem: responses package {pid}, 12012 rows and 12012 items",
        "  recorded ungraded (bad_input): model_outputs_gemini-1.5-flash-002_5shots.zip:"
        "model_outputs_gemini-1.5-flash-002_5shots.json: row 4319: item 3983: answer 'C' does not match answer_index 1",
        "wrote recorded.json: mmlu_pro, 12012 items x 1 samples, recorded accuracy 64.09% (7699/12012); "
        "71 without a pred counted wrong",
    ]
    prov = json.loads((here / "gem" / "manifest.json").read_text())["provenance"]
    assert prov["extra"]["import"]["bad_input"] == [
        {"item_id": "3983", "file": "model_outputs_gemini-1.5-flash-002_5shots.zip:"
                                    "model_outputs_gemini-1.5-flash-002_5shots.json",
         "row": 4319, "reason": "answer 'C' does not match answer_index 1"}]
    assert prov["notes"].startswith("1 record(s) imported as ungraded (status bad_input)")

    r = cli("grade", "gem", "--benchmark", "mmlu_pro", "-o", "g.json")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[3:8] == [
        "accuracy                      64.10%  (7699/12011)  binomial_2se [63.22, 64.97]; wilson [63.24, 64.95]; "
        "clopper_pearson [63.23, 64.96]",
        "accuracy_all[sample=0]        64.09%  (7699/12012)  binomial_2se [63.22, 64.97]; wilson [63.23, 64.95]; "
        "clopper_pearson [63.23, 64.95]",
        "accuracy_all                  64.09%  (7699/12012)  binomial_2se [63.22, 64.97]; wilson [63.23, 64.95]; "
        "clopper_pearson [63.23, 64.95]",
        NOTE,
        "statuses: bad_input=1, correct=7699, incorrect=4241, no_answer=71",
    ]
    # Every figure's reader is told: `audit show` of either verdict file, and `audit diff` of the two.
    for vf in ("g.json", "recorded.json"):
        r = cli("show", vf)
        assert r.code == 0, r.err
        lines = r.out.splitlines()
        at = lines.index(NOTE)
        assert lines[at - 1].startswith("  accuracy_all ") and lines[at + 1].startswith("statuses   ")
    r = cli("diff", "recorded.json", "g.json")
    assert r.code == 0, r.err  # the regrade agrees with upstream's pred on every row
    assert [x for x in r.out.splitlines() if "bad_input" in x and x.startswith(("OLD", "NEW"))] == [
        f"OLD {NOTE}", f"NEW {NOTE}"]
    r = cli("diff", "recorded.json", "g.json", "--format", "json")
    report = json.loads(r.out)
    assert (report["old"]["bad_input"], report["new"]["bad_input"]) == (1, 1)
    rows = {(x["item_id"]): x for x in json.loads((here / "g.json").read_text())["items"]}
    assert (rows["3983"]["verdict"], rows["3983"]["status"]) == ("ungraded", "bad_input")
    assert rows["3983"]["reason"] == ("the item's source record is inconsistent: answer 'C' does not match "
                                      "answer_index 1 (model_outputs_gemini-1.5-flash-002_5shots.zip:"
                                      "model_outputs_gemini-1.5-flash-002_5shots.json row 4319)")
    recorded = {x["item_id"]: x for x in json.loads((here / "recorded.json").read_text())["items"]}
    assert (recorded["3983"]["verdict"], recorded["3983"]["status"]) == ("ungraded", "bad_input")


def _readme_import_flow() -> list[str]:
    """The README's import → grade block, line by line (comments dropped)."""
    from tests.test_readme import _fenced_blocks

    (block,) = [b for info, b in _fenced_blocks() if info == "bash" and "audit import mmlu-pro" in b]
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def test_the_readme_import_then_grade_flow_runs_exactly_as_written(cli, here):
    import shlex
    import shutil

    from tests.conftest import REPO

    (here / "model_outputs_Meta-Llama-3-70B_5shots.zip").symlink_to(shared_path(LLAMA))
    shutil.copytree(REPO / "tests" / "data" / "lm_eval" / "sshleifer__tiny-gpt2",
                    here / "lm_eval_output" / "sshleifer__tiny-gpt2")
    lines = _readme_import_flow()
    assert [line.split()[1:3] for line in lines] == [["import", "mmlu-pro"], ["grade", "llama3-70b"],
                                                     ["import", "lm-eval"], ["grade", "lm-eval-pkgs/sshleifer__tiny-gpt2/copa"]]
    outs = []
    for line in lines:
        argv = shlex.split(line)
        assert argv[0] == "audit"
        r = cli(*argv[1:])
        assert (r.code, r.err) == (0, ""), line
        outs.append(r.out)
    assert "accuracy_all                  52.83%  (6356/12032)" in outs[1]  # the figure the README's comment gives
    assert "acc,none 0.6 = the mean of 20 samples" in outs[2]
    assert "accuracy_all                  60.00%  (12/20)" in outs[3]
