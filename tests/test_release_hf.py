"""`audit release --format hf`: the release as a Hugging Face dataset folder that `datasets.load_dataset` loads,
with the leak check unchanged. Built from small packages written here (public and protected items)."""

from __future__ import annotations

import json

import pytest
from tests.verdict_helpers import make_verdict_file, write_verdict_file

from audit.pack import SourceRow, Table, build_package
from audit.packages import open_package
from audit.verdicts import PackageRef

QUESTION = "Which enzyme unwinds the double helix ahead of the replication fork during DNA synthesis?"
RESPONSE = "Reasoning about the replication machinery step by step, the helicase unwinds it. The answer is (B)."


def _package(out, kind, schema, objs) -> PackageRef:
    build_package(out, kind=kind, tables=[Table(f"{kind}.jsonl", schema,
                                                (SourceRow("<test>", i + 1, o) for i, o in enumerate(objs)))],
                  benchmark="mix")
    with open_package(out) as pkg:
        return PackageRef(package_id=pkg.manifest.package_id, digest=pkg.digest, path=out.name)


@pytest.fixture
def graded(tmp_path):
    items = [{"item_id": "pub-1", "reference": "A", "num_choices": 4},
             {"item_id": "pub-2", "reference": "C", "num_choices": 4},
             {"item_id": "sec-1", "reference": "B", "num_choices": 4, "question": QUESTION, "protected": True}]
    responses = [{"item_id": "pub-1", "response": "The answer is (A)."}, {"item_id": "pub-2", "response": "(D)"},
                 {"item_id": "sec-1", "response": RESPONSE}]
    verdicts = [{"item_id": "pub-1", "sample": 0, "verdict": "correct", "answer": "A", "rule": "answer_is", "reference": "A",
                 "reason": "A vs A"},
                {"item_id": "pub-2", "sample": 0, "verdict": "incorrect", "answer": "D", "rule": "letter", "reference": "C",
                 "reason": "D vs C"},
                {"item_id": "sec-1", "sample": 0, "verdict": "correct", "answer": "B", "rule": "answer_is", "reference": "B",
                 "reason": "B vs B"}]
    header = {"benchmark": "mix", "items_package": _package(tmp_path / "items", "items", "item_row.v1", items),
              "responses_package": _package(tmp_path / "responses", "responses", "response_row.v1", responses),
              "extractor": None, "grader": None}
    write_verdict_file(tmp_path / "results.json", make_verdict_file(verdicts, **header))
    return tmp_path, verdicts, header


def test_a_release_as_a_dataset_folder_loads_with_datasets(graded, cli, monkeypatch):
    import datasets

    d, _, _ = graded
    out = d / "hf"
    r = cli("release", d / "results.json", "-o", out, "--format", "hf")
    assert r.code == 0, r.err
    assert r.out.startswith(f"wrote {out}: release package ") and "leak check passed" in r.out
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "README.md", "data/verdicts.parquet", "release/README.md", "release/manifest.json", "release/release.json",
        "release/verdicts.jsonl"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n"
                           "    path: data/verdicts.parquet\n")
    assert card.endswith((out / "release" / "README.md").read_text(encoding="utf-8"))
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    ds = datasets.load_dataset(str(out), split="train", cache_dir=str(d / "cache"))
    published = [json.loads(x) for x in (out / "release" / "verdicts.jsonl").read_text().splitlines()]
    assert ds.num_rows == 3
    assert [(x["item_id"], x["verdict"], x["status"], x["protected"]) for x in ds] == [
        (p["item_id"], p["verdict"], p["status"], p.get("protected", False)) for p in published]
    secret = next(x for x in ds if x["item_id"] == "sec-1")
    assert (secret["answer"], secret["reference"], secret["attempt"]) == (None, None, None)
    # A release holding a protected item: release_row.v2's columns, none of them free text.
    assert ds.column_names == ["item_id", "sample", "verdict", "status", "protected", "attempt", "answer", "reference"]
    assert cli("verify-release", out / "release", "--items", d / "items", "--responses", d / "responses").code == 0


def test_the_leak_check_applies_unchanged(graded, cli):
    d, verdicts, header = graded
    planted = [dict(v) for v in verdicts]
    planted[1]["reason"] = "the model wrote: " + RESPONSE[:70]
    header = {**header,
              "responses_package": header["responses_package"].model_copy(update={"path": str(d / "responses")}),
              "items_package": header["items_package"].model_copy(update={"path": str(d / "items")})}
    write_verdict_file(d / "planted.json", make_verdict_file(planted, **header))
    r = cli("release", d / "planted.json", "-o", d / "hf", "--format", "hf", "--public-text")
    assert r.code == 2 and r.out == "" and "public_text.jsonl: row 2: field reason: leak: " in r.err
    assert not (d / "hf").exists() and not [p for p in d.iterdir() if p.name.startswith(".hf")]


def test_the_dataset_card_s_own_instructions_run_as_written(graded, cli):
    # Issue 31 item 5: the card says `audit validate DIR` and `audit verify-release DIR --items ITEMS`; both failed
    # on DIR (they worked on DIR/release only), and a responses package that keeps its items was refused as ITEMS.
    d, _, _ = graded
    out = d / "hf"
    assert cli("release", d / "results.json", "-o", out, "--format", "hf").code == 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "`audit validate DIR`" in card and "`audit verify-release DIR --items ITEMS`" in card
    r = cli("validate", out)
    assert r.code == 0, r.out
    assert r.out.splitlines()[0] == (f"note: {out} is a Hugging Face dataset folder (audit release --format hf): "
                                     f"validating {out / 'release'}")
    assert r.out.splitlines()[1].startswith("valid: release package ")
    assert cli("verify-release", out, "--items", d / "items").code == 0
    keeps = d / "responses_with_items"
    build_package(keeps, kind="responses", tables=[
        Table("responses.jsonl", "response_row.v1", iter([SourceRow("<test>", 1, {"item_id": "pub-1", "response": "x"})])),
        Table("items.jsonl", "item_row.v1", (SourceRow("<test>", i + 1, o) for i, o in enumerate(
            [{"item_id": "pub-1", "reference": "A", "num_choices": 4}, {"item_id": "pub-2", "reference": "C",
                                                                      "num_choices": 4},
             {"item_id": "sec-1", "reference": "B", "num_choices": 4, "question": QUESTION, "protected": True}])))],
        benchmark="mix")
    r = cli("verify-release", out, "--items", keeps)
    assert r.code == 0, r.out + r.err
    r = cli("verify-release", out, "--items", d / "responses")  # no item rows at all: one line
    assert r.code == 2 and r.err == (f"audit: error: {d / 'responses'}: is a 'responses' package holding no item rows: "
                                     f"give the items (an items package, or an imported responses package, which "
                                     f"keeps them)\n")
