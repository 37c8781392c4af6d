"""`audit verify`: the shipped ledger survives; planted values, tampered and swapped packages, edited digests fail,
each naming the claim; exact output and exit codes."""

from __future__ import annotations

import json
import shutil

import jsonschema
import pytest
import yaml
from tests.claims_helpers import LEDGER, REPO, copy_shipped, edit

from audit.packages import PackageWriter, bundle
from audit.schemas import SCHEMA_DIR

GOLDEN = REPO / "tests" / "golden" / "claims" / "verify_shipped.txt"


def claims_table(out: str) -> dict[str, str]:
    """Claim id → its `survives` cell, from the claims table of the text output."""
    lines = out.split("\nclaims:\n", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return {line.split()[0]: line.split()[-1] for line in lines}


def failing(out: str) -> list[str]:
    return sorted(k for k, v in claims_table(out).items() if v == "NO")


# --------------------------------------------------------------------------- the shipped ledger


@pytest.mark.slow
def test_the_shipped_ledger_survives_with_exact_output(cli, monkeypatch):
    # The CI proof: every number of the shipped packages recomputes from them.
    monkeypatch.chdir(REPO)
    r = cli("verify", "packages/claims.yaml")
    assert (r.code, r.err) == (0, "")
    assert r.out == GOLDEN.read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_output_does_not_depend_on_the_run(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path / "packages")
    monkeypatch.chdir(tmp_path)
    first = cli("verify", "packages/claims.yaml")
    second = cli("verify", "packages/claims.yaml")
    assert first.code == second.code == 0
    assert first.out == second.out == GOLDEN.read_text(encoding="utf-8")
    assert ledger.is_file()


def test_the_shipped_ledger_follows_its_json_schema():
    schema = json.loads((SCHEMA_DIR / "claims.v1.json").read_text(encoding="utf-8"))
    doc = yaml.safe_load(LEDGER.read_text(encoding="utf-8"))
    jsonschema.validate(doc, schema)
    assert list(doc)[0] == "schema_version"
    bad = {**doc, "claims": [{**doc["claims"][0], "tolerance": {"absolute": "tiny"}}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


@pytest.mark.slow
def test_json_report(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)
    out = tmp_path / "report.json"
    out.write_text("audit verify packages/claims.yaml: an earlier text report\n", encoding="utf-8")
    r = cli("verify", "packages/claims.yaml", "--format", "json", "-o", out, "--force")  # replaces audit's report
    assert (r.code, r.out, r.err) == (0, "", "")
    report = json.loads(out.read_text(encoding="utf-8"))
    jsonschema.validate(report, json.loads((SCHEMA_DIR / "verify_report.v1.json").read_text(encoding="utf-8")))
    assert report["survivors"] == len(report["claims"]) == 54
    d1 = report["claims"][0]
    assert (d1["id"], d1["recorded"], d1["corrected"], d1["recomputed"]) == ("D1", 62.5, 87.5, 87.5)
    assert d1["published_recomputed"] == 62.5
    assert d1["interval"]["method"] == "binomial_2se"
    assert d1["inputs"] == ["demo-lab-note-math500"]
    # The retraction's items: the two answers the lab's normalizer rejected.
    assert d1["diff"][0] == "audit diff lab-math500 (recorded) → recomputed grading: 2 verdicts changed (grader 2)"
    assert [line.split(":")[0] for line in d1["diff"][3:]] == ["demo-math-01 sample 0", "demo-math-02 sample 0"]
    assert all(i["ok"] and i["actual_sha256"] == i["sha256"] for i in report["inputs"])


# --------------------------------------------------------------------------- planted values


def test_an_existing_output_is_refused_before_any_work(cli, tmp_path, monkeypatch):
    """Without --force `-o FILE` refuses a FILE that exists, and with it refuses a user's file: before
    any claim is recomputed (so at once, and FILE is left as it was)."""
    monkeypatch.chdir(REPO)
    out = tmp_path / "report.txt"
    out.write_text("my notes\n", encoding="utf-8")
    r = cli("verify", "packages/claims.yaml", "-o", out)
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: {out}: already exists (use --force to replace it)\n")
    r = cli("verify", "packages/claims.yaml", "-o", out, "--force")
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {out}: --force replaces only what audit wrote (a report of `audit diff` or "
                     f"`audit verify`); not this one: it does not begin as one of their reports\n")
    assert out.read_text(encoding="utf-8") == "my notes\n"


@pytest.mark.slow
def test_the_lab_note_as_published_does_not_survive(cli, tmp_path, monkeypatch):
    # Un-retract D2: the lab's 62.50% as a plain claim. verify names it and lists the two items its
    # extractor got wrong, as `audit diff` finds them.
    ledger = copy_shipped(tmp_path)
    text = ledger.read_text(encoding="utf-8")
    start = text.index("  - id: D2\n")
    end = text.index("  - id: D3\n")
    text = text[:start] + """\
  - id: D2
    text: MMLU-Pro accuracy
    value: 62.50
    unit: percent
    status: single-run
    sources: [demo-lab-note-mmlu_pro, lab-mmlu_pro]
    recipe: {name: grade.accuracy, args: {package: demo-lab-note-mmlu_pro, benchmark: mmlu_pro, figure: accuracy_all}}
    recorded_verdicts: lab-mmlu_pro
    tolerance: {absolute: 0.005}
""" + text[end:]
    ledger.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", "claims.yaml")
    assert (r.code, r.err) == (1, "")
    assert failing(r.out) == ["D2"]
    explanation = r.out.split("\n\nD2 does not survive: ", 1)[1]
    assert explanation == """\
MMLU-Pro accuracy
  recipe: grade.accuracy(package=demo-lab-note-mmlu_pro, benchmark=mmlu_pro, figure=accuracy_all)
  recomputed 87.50%, recorded 62.50% (tolerance ±0.005%)
  audit diff lab-mmlu_pro (recorded) → recomputed grading: 2 verdicts changed (extractor 2)
    note: extractor: none (imported) -> mmlu_pro.official@f418b11
    note: grader: none (imported) -> choice@1
    demo-mmlu-01 sample 0: answer — → G; incorrect → correct (extractor): letter G
    demo-mmlu-02 sample 0: answer E → C; incorrect → correct (extractor): letter C

53 of 54 claims survive.
"""


@pytest.mark.slow
def test_a_wrong_recorded_value_is_named(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(ledger, "    value: 19\n", "    value: 18\n")  # E3: rows still cut at the ceiling
    edit(ledger, "    value: 23.39\n", "    value: 20.00\n")  # D10: the 2-SE error bar
    monkeypatch.chdir(tmp_path)
    r = cli("verify", "claims.yaml")
    assert r.code == 1
    assert failing(r.out) == ["D10", "E3"]
    assert "\nD10 does not survive: MATH-500 error bar, 2 standard errors (p ± 2·√(p(1−p)/n), n = 8)\n" in r.out
    assert "  recomputed 23.39 pts, recorded 20.00 pts (tolerance ±0.005 pts)\n" in r.out
    assert "  recomputed 19, recorded 18 (tolerance exact)\n" in r.out
    assert r.out.endswith("\n52 of 54 claims survive.\n")


def test_a_wrong_correction_and_an_unfounded_retraction(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(ledger, "    corrected: 50.00\n", "    corrected: 66.67\n")  # D3's correction is wrong
    edit(ledger, "  - id: D4\n    text: Humanity's Last Exam accuracy\n    value: 83.33\n",
         "  - id: D4\n    text: Humanity's Last Exam accuracy\n    value: 62.50\n")  # D4 retracts a value that holds
    monkeypatch.chdir(tmp_path)
    r = cli("verify", "claims.yaml")
    assert r.code == 1
    assert failing(r.out) == ["D3", "D4"]
    assert "  recomputed 50.00%, the correction says 66.67% (tolerance ±0.005%)\n" in r.out
    d4 = r.out.split("\nD4 does not survive: ", 1)[1]
    assert d4.splitlines()[2:4] == [
        "  the published value 62.50% recomputes: the retraction is unfounded",
        "  published_recipe gives 83.33%, not the published 62.50%",
    ]


# --------------------------------------------------------------------------- tampered inputs


def test_a_tampered_package_fails_validation_and_names_its_claims(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(tmp_path / "demo-lab-note" / "math500" / "responses.jsonl", "$\\\\boxed{7}$", "$\\\\boxed{8}$")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert (r.code, r.err) == (1, "")
    assert "  package  demo-lab-note-math500              demo-lab-note/math500" \
           "                                        FAILED\n" in r.out
    assert ("  demo-lab-note-math500: fails validation: demo-lab-note/math500/responses.jsonl: field sha256: "
            "sha256 is ") in r.out
    assert failing(r.out) == ["D1", "D10", "D11"]
    d1 = r.out.split("\nD1 does not survive: ", 1)[1].split("\n\n")[0]
    assert d1.splitlines()[2].startswith("  input demo-lab-note-math500 failed its checks: fails validation: ")


def _forge_math500(dest, package_id="demo-lab-note-math500"):
    """A valid package with the demo's items whose one wrong answer is made right: 8/8 instead of 7/8."""
    from audit.models import ItemRow, ResponseRow

    src = dest.parent / "math500-original"
    shutil.move(dest, src)
    items = [json.loads(x) for x in (src / "items.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = [json.loads(x) for x in (src / "responses.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if row["item_id"] == "demo-math-06":
            row["response"] = row["response"].replace("2^{99}", "2^{98}")
    with PackageWriter(dest, kind="responses", benchmark="math500", package_id=package_id) as w:
        with w.rows("items.jsonl", "item_row.v1") as sink:
            for it in items:
                sink.write(ItemRow.model_validate(it))
        with w.rows("responses.jsonl", "response_row.v1") as sink:
            for row in rows:
                sink.write(ResponseRow.model_validate(row))
    shutil.rmtree(src)
    from audit.packages import open_package

    with open_package(dest) as pkg:
        return pkg.digest


@pytest.mark.slow
def test_a_package_swapped_for_another_with_the_same_id(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    digest = _forge_math500(tmp_path / "demo-lab-note" / "math500")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert (f"  demo-lab-note-math500: content digest is {digest}, the ledger says "
            f"a283bfdd373c76fa6fbed12fd3ed60533aa3e83c58a3d3afa3cb71328681c7d8 (the package was changed or "
            f"replaced)\n") in r.out
    assert failing(r.out) == ["D1", "D10", "D11"]


@pytest.mark.slow
def test_a_forger_who_also_edits_the_digest_is_caught_by_the_recomputation(cli, tmp_path, monkeypatch):
    # The ledger pins the package it was written against; someone who swaps the package and re-pins the
    # digest still has to match every recorded value, and 8/8 is not the recorded 7/8.
    ledger = copy_shipped(tmp_path)
    digest = _forge_math500(tmp_path / "demo-lab-note" / "math500")
    edit(ledger, "a283bfdd373c76fa6fbed12fd3ed60533aa3e83c58a3d3afa3cb71328681c7d8", digest)
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["D1", "D10", "D11"]
    assert "  recomputed 100.00%, the correction says 87.50% (tolerance ±0.005%)\n" in r.out
    # The lab's table pins no response texts, so `audit diff` can only see that the answer read changed.
    assert ("    demo-math-06 sample 0: answer \\frac{1}{2^{99}} → \\frac{1}{2^{98}}; incorrect → correct (extractor): "
            "identical strings\n") in r.out


def test_a_digest_edited_in_the_ledger(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(ledger, "sha256: 842655c7639233061c2fe63789c8df6fed315d4d3a5bd8eff60bd7cd46f62a32",
         "sha256: 842655c7639233061c2fe63789c8df6fed315d4d3a5bd8eff60bd7cd46f62a33")
    edit(ledger, "sha256: aa1d06533363390ce16bbeec04c81fc9e3e9b75ab9629d6ab3f3f8e67e649cb5",
         "sha256: 0a1d06533363390ce16bbeec04c81fc9e3e9b75ab9629d6ab3f3f8e67e649cb5")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["D2", "E1"]
    assert ("  graded-math500-tiny-llama: sha256 is aa1d06533363390ce16bbeec04c81fc9e3e9b75ab9629d6ab3f3f8e67e649cb5, "
            "the ledger says 0a1d06533363390ce16bbeec04c81fc9e3e9b75ab9629d6ab3f3f8e67e649cb5 (the file was changed "
            "or replaced)\n") in r.out
    assert "\nE1 does not survive: " in r.out and "  input graded-math500-tiny-llama failed its checks: sha256 is" in r.out


@pytest.mark.slow
def test_a_tampered_recorded_file(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    edit(tmp_path / "demo-lab-note" / "lab-recorded" / "hle.jsonl", '"answer": "0.0071", "correct": false',
         '"answer": "0.0071", "correct": true')
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    # D9 is arithmetic over D8, which read the file: it cannot be recomputed either.
    assert failing(r.out) == ["D4", "D8", "D9"]
    assert "  cannot recompute: claim D8 was not recomputed\n" in r.out


def test_another_package_at_the_path(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    shutil.rmtree(tmp_path / "demo-lab-note" / "math500")
    shutil.copytree(tmp_path / "demo-lab-note" / "mmlu_pro", tmp_path / "demo-lab-note" / "math500")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert "  demo-lab-note-math500: its manifest names package 'demo-lab-note-mmlu_pro', the ledger " \
           "'demo-lab-note-math500'\n" in r.out
    assert failing(r.out) == ["D1", "D10", "D11"]


def test_a_missing_package(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    shutil.rmtree(tmp_path / "evidence-h200-vllm" / "mmlu_pro-tiny-llama")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["E4"]
    assert "  responses-mmlu_pro-c4dfa0c7639d: evidence-h200-vllm/mmlu_pro-tiny-llama: no such file or directory\n" \
        in r.out


def test_a_bundled_package_verifies_like_its_directory(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path)
    bundle(tmp_path / "demo-lab-note" / "hle", tmp_path / "hle.tar.gz")
    shutil.rmtree(tmp_path / "demo-lab-note" / "hle")
    edit(ledger, "path: demo-lab-note/hle\n", "path: hle.tar.gz\n")
    monkeypatch.chdir(tmp_path)
    r = cli("verify", ledger.name)
    assert r.code == 0, r.out
    assert "  package  demo-lab-note-hle                  hle.tar.gz" in r.out


def test_a_verdict_file_whose_rows_file_points_outside(cli, tmp_path, monkeypatch):
    ledger = copy_shipped(tmp_path / "ledger")
    vf = tmp_path / "ledger" / "evidence-h200-vllm" / "graded" / "math500-completion-resumed.json"
    text = vf.read_text(encoding="utf-8")
    side = '"rows_file": {\n    "path": "../../../x.parquet",\n    "sha256": "' + "0" * 64 + '",\n    "rows": 30\n  }'
    assert text.count('"rows_file": null') == 1  # replaced, not added: a second key is refused as a duplicate
    vf.write_text(text.replace('"rows_file": null', side), encoding="utf-8")
    from audit.fileio import sha256_file

    edit(ledger, "21f81e86e0c23cd69683aaf55380a5edc139fa01beae93b392da94b4faf5b518", sha256_file(vf)[0])
    monkeypatch.chdir(tmp_path / "ledger")
    r = cli("verify", ledger.name)
    assert r.code == 1
    assert failing(r.out) == ["E6"]
    # The verdict file's own model refuses a sidecar path that is not a plain file name beside it.
    assert ("  graded-math500-completion-resumed: evidence-h200-vllm/graded/math500-completion-resumed.json: field "
            "rows_file.path: must be a file name in the verdict file's directory\n") in r.out
    assert "../../../x.parquet" not in r.out  # a verdict file's error line quotes no value (issue 19)
