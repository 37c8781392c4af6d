"""`audit import lm-eval DIR`: a whole lm-evaluation-harness output folder, one package per task, cross-checked.

The folder is laid out as the harness writes it (`<model_name_sanitized>/results_<date>.json` beside one
`samples_<task>_<date>.jsonl` per task), from the real files in tests/data/lm_eval (see its README): COPA with
its own results file (antonsoo/errorbars), and the containers/olot GSM8K samples (3 documents) beside a
results file written to match a real one, reporting the full test set (n-samples 1,319 here: the issue's
"3 documents whose results file reports 1,400")."""

from __future__ import annotations

import json
import shutil

from audit.packages import open_package
from tests.attacks import attack
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "lm_eval"
COPA_DIR = DATA / "sshleifer__tiny-gpt2"
STAMP = "2026-10-01T23-15-32.942677"
GSM8K = DATA / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"


def _gsm8k_results(effective: int) -> dict:
    # The shape of lm-eval 0.4.8's results file (results, n-samples, configs' metric_list), figures as that run's.
    return {"results": {"gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.0,
                                  "exact_match_stderr,strict-match": 0.0, "exact_match,flexible-extract": 0.0,
                                  "exact_match_stderr,flexible-extract": 0.0}},
            "configs": {"gsm8k": {"task": "gsm8k", "metric_list": [{"metric": "exact_match", "aggregation": "mean",
                                                                   "higher_is_better": True}]}},
            "n-samples": {"gsm8k": {"original": 1319, "effective": effective}},
            "config": {"model": "local-completions", "model_args": "model=tinyllama"},
            "model_name": "tinyllama", "lm_eval_version": "0.4.8", "date": 1746037481.0}


def _layout(root, gsm8k_effective: int = 3):
    copa = root / "sshleifer__tiny-gpt2"
    shutil.copytree(COPA_DIR, copa)
    tiny = root / "tinyllama"
    tiny.mkdir()
    shutil.copy(GSM8K, tiny / GSM8K.name)
    (tiny / "results_2025-04-30T18-24-41.082644.json").write_text(json.dumps(_gsm8k_results(gsm8k_effective),
                                                                             indent=2))
    return root


def _pid(path) -> str:
    return json.loads((path / "manifest.json").read_text())["package_id"]


def test_a_whole_output_folder_gives_one_checked_package_per_task(cli, here):
    _layout(here / "out")
    r = cli("import", "lm-eval", "out", "-o", "pkgs")
    assert (r.code, r.err) == (0, "")
    copa, gsm = here / "pkgs" / "sshleifer__tiny-gpt2" / "copa", here / "pkgs" / "tinyllama" / "gsm8k"
    assert r.out.splitlines() == [
        f"wrote {copa.relative_to(here)}: responses package {_pid(copa)}, 20 rows and 20 items",
        f"  checked against results_{STAMP}.json: n-samples 20 = 20 documents in the samples; "
        "acc,none 0.6 = the mean of 20 samples",
        f"wrote {gsm.relative_to(here)}: responses package {_pid(gsm)}, 3 rows and 3 items",
        "  checked against results_2025-04-30T18-24-41.082644.json: n-samples 3 = 3 documents in the samples; "
        "exact_match,flexible-extract: not checked (no sample of filter 'flexible-extract' logs exact_match); "
        "exact_match,strict-match 0 = the mean of 3 samples",
    ]
    with open_package(copa) as pkg:
        prov = pkg.manifest.provenance
        # copa is a task, not a benchmark spec: the task is recorded, the benchmark left out.
        assert pkg.manifest.benchmark is None and prov.extra["import"]["task"] == "copa"
        assert prov.model == "sshleifer/tiny-gpt2"
        check = prov.extra["import"]["cross_check"]
        assert check["results_file"] == f"results_{STAMP}.json"
        assert [c["ok"] for c in check["checks"]] == [True, True]
        assert [f["name"] for f in prov.extra["source_files"]] == [f"samples_copa_{STAMP}.jsonl",
                                                                    f"results_{STAMP}.json"]
    with open_package(gsm) as pkg:  # a task named as a spec records it as the benchmark
        assert pkg.manifest.benchmark == "gsm8k" and pkg.manifest.provenance.extra["import"]["task"] == "gsm8k"
    # Each package holds its items: it grades with nothing else, to the harness's own figure.
    r = cli("grade", str(copa), "--benchmark", "selected_choice", "-o", "copa.json")
    assert r.code == 0, r.err
    assert r.out.splitlines()[3].startswith("accuracy                      60.00%  (12/20)")


def test_three_documents_against_a_results_file_of_the_full_test_set_are_flagged(cli, here):
    _layout(here / "out", gsm8k_effective=1319)
    r = cli("import", "lm-eval", "out", "-o", "pkgs")
    assert r.code == 1
    lines = r.out.splitlines()
    assert lines[3] == ("  checked against results_2025-04-30T18-24-41.082644.json: MISMATCH n-samples: the results "
                        "file reports 1,319 documents, the samples hold 3; exact_match,flexible-extract: not checked "
                        "(no sample of filter 'flexible-extract' logs exact_match); exact_match,strict-match 0 = "
                        "the mean of 3 samples")
    assert r.err == ("1 check(s) failed: the results file's figures do not come from these samples "
                     "(see MISMATCH above)\n")
    with open_package(here / "pkgs" / "tinyllama" / "gsm8k") as pkg:
        first = pkg.manifest.provenance.extra["import"]["cross_check"]["checks"][0]
    assert first == {"what": "n-samples", "logged": 1319, "recomputed": 3, "ok": False}


def test_a_figure_the_samples_do_not_give_is_flagged(cli, here):
    root = _layout(here / "out")
    results = root / "sshleifer__tiny-gpt2" / f"results_{STAMP}.json"
    doc = json.loads(results.read_text())
    doc["results"]["copa"]["acc,none"] = 0.65
    results.write_text(json.dumps(doc))
    r = cli("import", "lm-eval", "out", "-o", "pkgs")
    assert r.code == 1
    assert r.out.splitlines()[1] == (f"  checked against results_{STAMP}.json: n-samples 20 = 20 documents in the "
                                     "samples; MISMATCH acc,none: the results file reports 0.65, the mean of 20 "
                                     "samples is 0.6")


def test_samples_embedded_in_the_results_file(cli, here):
    records = [json.loads(line) for line in (COPA_DIR / f"samples_copa_{STAMP}.jsonl").read_text().splitlines()]
    doc = json.loads((COPA_DIR / f"results_{STAMP}.json").read_text())
    doc["samples"] = {"copa": records}
    (here / "run").mkdir()
    (here / "run" / f"results_{STAMP}.json").write_text(json.dumps(doc))
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines()[1] == (f"  checked against results_{STAMP}.json: n-samples 20 = 20 documents in the "
                                     "samples; acc,none 0.6 = the mean of 20 samples")
    assert cli("import", "lm-eval", str(COPA_DIR / f"samples_copa_{STAMP}.jsonl"), "--benchmark", "selected_choice",
               "-o", "from-file").code == 0
    rows = {}
    for name in ("pkgs/copa", "from-file"):
        with open_package(here / name) as pkg:
            rows[name] = ([r.model_dump(exclude={"extra"}) for r in pkg.iter_rows("response_row.v1")],
                          [r.model_dump() for r in pkg.iter_rows("item_row.v1")])
    assert len(rows["from-file"][0]) == 20 and rows["pkgs/copa"] == rows["from-file"]


def test_recorded_for_a_folder_writes_a_verdict_file_per_task_that_names_a_benchmark(cli, here):
    # issue 31 item 8: --recorded was refused for a folder. Real folders: a tiny-gpt2 copa run, two
    # simple_evaluate results files holding their samples (mattdepaolis/llm-evaluation), and gsm8k samples.
    r = cli("import", "lm-eval", DATA, "-o", "pkgs", "--recorded", "rec")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    no_spec = ("  recorded verdicts not written: the task {!r} is not a benchmark spec and a verdict file names one; "
               "give --benchmark NAME (selected_choice for multiple choice), or import its samples file alone with "
               "--benchmark and --recorded")
    assert no_spec.format("copa") in lines and no_spec.format("arc_easy") in lines
    assert "  wrote rec/gsm8k.json: gsm8k, 3 items x 1 samples, recorded accuracy 0.00% (0/3) (exact_match)" in lines
    assert sorted(p.relative_to(here / "rec").as_posix() for p in (here / "rec").rglob("*.json")) == ["gsm8k.json"]
    r = cli("import", "lm-eval", DATA, "-o", "pkgs", "--recorded", "rec")
    assert (r.code, r.err) == (2, "audit: error: pkgs: already exists (use --force to replace it)\n")
    # With a benchmark every task has one: each verdict file is the run's own figure, pinned to its package.
    r = cli("import", "lm-eval", DATA, "-o", "mc", "--recorded", "mc-rec", "--benchmark", "selected_choice")
    assert r.code == 0, r.err
    recorded = [line for line in r.out.splitlines() if line.startswith("  wrote ")]
    assert recorded == [
        "  wrote mc-rec/arc_easy.json: selected_choice, 5 items x 1 samples, recorded accuracy 20.00% (1/5) (acc)",
        "  wrote mc-rec/gsm8k.json: selected_choice, 3 items x 1 samples, recorded accuracy 0.00% (0/3) (exact_match)",
        "  wrote mc-rec/mattdepaolis_llm-evaluation/arc_easy.json: selected_choice, 10 items x 1 samples, recorded "
        "accuracy 90.00% (9/10) (acc)",  # the results file logs acc 0.9
        "  wrote mc-rec/mattdepaolis_llm-evaluation/leaderboard_bbh_causal_judgement.json: selected_choice, 10 items x "
        "1 samples, recorded accuracy 60.00% (6/10) (acc_norm)",  # logs acc_norm 0.6 only
        "  wrote mc-rec/sshleifer__tiny-gpt2/copa.json: selected_choice, 20 items x 1 samples, recorded accuracy "
        "60.00% (12/20) (acc)"]  # logs acc 0.6
    assert cli("grade", "mc/sshleifer__tiny-gpt2/copa", "--benchmark", "selected_choice", "-o", "copa.json",
               "-q").code == 0
    r = cli("diff", "mc-rec/sshleifer__tiny-gpt2/copa.json", "copa.json")
    assert r.code == 0 and "- rows: 20 compared, 0 verdicts changed, 0 only in OLD, 0 only in NEW" in r.out, r.out
    r = cli("import", "lm-eval", DATA / "samples_arc_easy_2026-09-24T03-05-32.831346.jsonl", "--benchmark",
            "selected_choice", "-o", "one", "--recorded", "mc-rec")
    assert (r.code, r.err) == (2, "audit: error: --recorded mc-rec: a samples file gets one verdict file "
                                  "(RECORDED.json), and this is a folder\n")
    (here / "a-file").write_text("x")
    r = cli("import", "lm-eval", DATA, "-o", "other", "--recorded", "a-file", "--force")
    assert (r.code, r.err) == (2, "audit: error: a-file: --recorded: for a folder or a results file this is a folder "
                                  "of verdict files (one per task), and a file is here\n")
    assert not (here / "other").exists()


def test_folder_refusals(cli, here):
    (here / "empty").mkdir()
    r = cli("import", "lm-eval", "empty", "-o", "pkgs")
    assert (r.code, r.err) == (2, "audit: error: empty: no lm-eval samples under this folder "
                                  "(samples_<task>_<date>.jsonl files, or a results_<date>.json holding `samples`; "
                                  "run lm-eval with --log_samples)\n")
    # A clone without git-lfs holds pointers, not the samples: said so, nothing written.
    lfs = here / "lfs" / "m"
    lfs.mkdir(parents=True)
    (lfs / f"samples_copa_{STAMP}.jsonl").write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 19174\n")
    r = cli("import", "lm-eval", "lfs", "-o", "pkgs")
    assert (r.code, r.err) == (2, f"audit: error: lfs/m/samples_copa_{STAMP}.jsonl: a Git LFS pointer, not "
                                  f"the samples (fetch them with `git lfs pull`)\n")
    assert not (here / "pkgs").exists()
    r = cli("import", "lm-eval", "lfs", "-o", "pkgs", "--items-out", "items")
    assert r.code == 2 and "--items-out takes a samples file, not a folder" in r.err
    r = cli("import", "lm-eval", "lfs", "-o", "pkgs", "--metric", "acc")
    assert (r.code, r.err) == (2, "audit: error: --metric needs --recorded\n")
    r = cli("import", "lm-eval", str(GSM8K), "-o", "pkgs")
    assert r.code == 2 and "--benchmark is required for a samples file" in r.err


@attack("import.results-swap")
def test_a_results_file_replaced_after_the_checks_read_it_is_pinned_as_it_was_checked(cli, here, monkeypatch):
    """The results file is read once: the cross-check, the model name and the digest in the provenance all come
    from those bytes. Replaced afterwards (other figures, another model), nothing of the new file is recorded."""
    import hashlib

    import audit.importers.lm_eval_dir as mod
    from tests.attack_tools import replace_file

    run = here / "out" / "m"
    shutil.copytree(COPA_DIR, run)
    results = run / f"results_{STAMP}.json"
    checked = results.read_bytes()
    doc = json.loads(checked)
    doc["results"]["copa"]["acc,none"] = 0.9
    doc["model_name"] = "someone/else"
    real = mod.cross_check

    def checked_then_swapped(task_run, imp):
        checks = real(task_run, imp)
        replace_file(results, json.dumps(doc).encode())
        return checks

    monkeypatch.setattr(mod, "cross_check", checked_then_swapped)
    r = cli("import", "lm-eval", "out", "-o", "pkgs")
    assert (r.code, r.err) == (0, "")
    with open_package(here / "pkgs" / "m" / "copa") as pkg:
        prov = pkg.manifest.provenance
        (rf,) = [f for f in prov.extra["source_files"] if f["name"] == results.name]
        assert (rf["sha256"], rf["bytes"]) == (hashlib.sha256(checked).hexdigest(), len(checked))
        assert prov.model == "sshleifer/tiny-gpt2"
        assert [c["logged"] for c in prov.extra["import"]["cross_check"]["checks"]] == [20, 0.6]


@attack("import.results-swap")
def test_a_results_file_holding_the_samples_replaced_after_it_was_read_is_refused(cli, here, monkeypatch):
    """Samples embedded in the results file: the file the checks read (found by the walk) and the file the
    samples are read from must be one; replaced in between, the import is refused and writes nothing."""
    import audit.importers.lm_eval_dir as mod
    from tests.attack_tools import replace_file

    records = [json.loads(line) for line in (COPA_DIR / f"samples_copa_{STAMP}.jsonl").read_text().splitlines()]
    doc = json.loads((COPA_DIR / f"results_{STAMP}.json").read_text())
    doc["samples"] = {"copa": records}
    (here / "run").mkdir()
    results = here / "run" / f"results_{STAMP}.json"
    results.write_text(json.dumps(doc))
    doc["samples"] = {"copa": records[::-1]}  # as many bytes, the documents in another order
    real = mod.discover

    def found_then_swapped(root, *args):
        runs = real(root, *args)
        replace_file(results, json.dumps(doc).encode())
        return runs

    monkeypatch.setattr(mod, "discover", found_then_swapped)
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert (r.code, r.out) == (2, "")
    assert r.err == f"audit: error: {results.relative_to(here)}: the file changed since it was hashed: run again\n"
    assert not (here / "pkgs").exists()
