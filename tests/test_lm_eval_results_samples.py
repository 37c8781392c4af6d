"""Issue 31 items 2 and 4 on real results files written by a `simple_evaluate(..., log_samples=True)` wrapper
(mattdepaolis/llm-evaluation, tests/data/lm_eval/README.md): samples inside the results file, an integer `target`,
names `results_<model>_<harness>_<task>_<date>.json`, and leaderboard tasks that log `acc_norm` only.

Before: the arc_easy file was refused row by row ("expected the logged target text, got 0"), a folder of them held
"no lm-eval samples", the file alone was "aggregate scores only", and the bbh task (logged acc_norm 0.6) graded
50.00% (the options `acc` chose).
"""

from __future__ import annotations

import json
import shutil

from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "lm_eval" / "mattdepaolis_llm-evaluation"
ARC = DATA / "results_Mistral-7B-v0.1_hf_arc_easy_20250530_123425.json"
BBH = DATA / "results_Mistral-7B-v0.1_hf_leaderboard_bbh_causal_judgement_20250530_141638.json"


def _accuracy(path):
    fig = next(f for f in json.loads(path.read_text(encoding="utf-8"))["summary"]["figures"] if f["name"] == "accuracy")
    return fig["correct"], fig["total"]


def test_a_results_file_holding_its_samples_imports_alone_with_integer_targets(cli, tmp_path):
    r = cli("import", "lm-eval", ARC, "-o", tmp_path / "out")
    assert (r.code, r.err) == (0, ""), r.err
    assert r.out.splitlines()[1] == (f"  checked against {ARC.name}: n-samples 10 = 10 documents in the samples; "
                                     f"acc,none 0.9 = the mean of 10 samples; acc_norm,none 0.7 = the mean of 10 "
                                     f"samples")
    items = [json.loads(x) for x in (tmp_path / "out" / "arc_easy" / "items.jsonl").read_text().splitlines()]
    # target 0, 1, 3, 3, ...: option indices, the doc's own answerKey letter each time
    assert [i["reference"] for i in items] == ["A", "B", "D", "D", "B", "C", "A", "C", "C", "A"]
    assert cli("grade", tmp_path / "out" / "arc_easy", "--benchmark", "selected_choice", "-o",
               tmp_path / "arc.json", "-q").code == 0
    assert _accuracy(tmp_path / "arc.json") == (9, 10)  # acc,none 0.9


def test_the_file_is_detected_as_holding_its_samples():
    from audit.importers.detect import sniff

    assert sniff(ARC).key == "lm-eval-results-samples"


def test_a_folder_of_such_files_is_found_and_acc_norm_only_tasks_are_chosen_by_acc_norm(cli, tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    for f in (ARC, BBH):
        shutil.copy(f, d / f.name)
    r = cli("import", "lm-eval", d, "-o", tmp_path / "out")
    assert (r.code, r.err) == (0, ""), r.err
    assert "  multiple-choice samples chosen by acc_norm (the results file logs acc_norm, not acc)" in r.out.splitlines()
    for task, want in (("arc_easy", (9, 10)), ("leaderboard_bbh_causal_judgement", (6, 10))):
        out = tmp_path / f"{task}.json"
        assert cli("grade", tmp_path / "out" / task, "--benchmark", "selected_choice", "-o", out, "-q").code == 0
        assert _accuracy(out) == want  # bbh: acc_norm,none 0.6 as logged (was 5/10, acc's choices)
    # A per-task override: acc for bbh gives acc's choice, as the harness's acc would.
    r = cli("import", "lm-eval", d, "-o", tmp_path / "acc", "--choice-by", "leaderboard_bbh_causal_judgement=acc")
    assert r.code == 0, r.err
    assert ("  multiple-choice samples chosen by acc (--choice-by leaderboard_bbh_causal_judgement=acc)"
            in r.out.splitlines())
    out = tmp_path / "bbh_acc.json"
    assert cli("grade", tmp_path / "acc" / "leaderboard_bbh_causal_judgement", "--benchmark", "selected_choice",
               "-o", out, "-q").code == 0
    assert _accuracy(out) == (5, 10)


def test_task_choice_needs_a_folder(cli, tmp_path):
    r = cli("import", "lm-eval", tmp_path / "samples_x_2025-01-01T00-00-00.jsonl", "--benchmark", "mmlu_pro",
            "--choice-by", "x=acc_norm", "-o", tmp_path / "o")
    assert (r.code, r.err) == (2, "audit: error: --choice-by TASK=RULE takes a folder or a results file (a samples "
                                  "file is one task: give RULE)\n")


def test_folder_mode_records_a_bad_file_and_imports_the_rest(cli, tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(ARC, d / ARC.name)
    cut = d / BBH.name
    cut.write_bytes(BBH.read_bytes()[:20_000])  # cut mid-write
    lfs = d / "samples_gsm8k_2025-05-30T12-00-00.jsonl"
    lfs.write_text("version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 52168\n")
    r = cli("import", "lm-eval", d, "-o", tmp_path / "refused")
    assert r.code == 2 and r.err.startswith(f"audit: error: {cut}: ")  # refuse (the default): the first stops all
    assert not (tmp_path / "refused").exists()
    r = cli("import", "lm-eval", d, "-o", tmp_path / "out", "--on-bad-row", "record")
    assert (r.code, r.err) == (0, ""), r.err
    lines = r.out.splitlines()
    assert lines[0].startswith(f"wrote {tmp_path / 'out' / 'arc_easy'}: responses package ")
    assert [x for x in lines if x.startswith("  not imported")] == [
        f"  not imported (bad_input): {cut}: " + r.out.split(f"{cut}: ", 1)[1].splitlines()[0],
        f"  not imported (bad_input): {lfs} (task gsm8k): a Git LFS pointer, not the samples (fetch them with "
        f"`git lfs pull`)"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["arc_easy"]
