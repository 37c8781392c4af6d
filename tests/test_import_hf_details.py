"""Per-sample details as Hugging Face datasets (Parquet), the Open LLM Leaderboard's layout, read through `datasets`.

The leaderboard publishes each model's lm-eval `--log_samples` records as a dataset of Parquet files, one per
task. The tests build those datasets with `datasets` itself, offline, from the real samples files in
tests/data/lm_eval, and check the import gives the rows the JSONL import gives."""

from __future__ import annotations

import json
import shutil

import pytest

from audit.packages import open_package
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "lm_eval"
STAMP = "2026-10-01T23-15-32.942677"
COPA = DATA / "sshleifer__tiny-gpt2" / f"samples_copa_{STAMP}.jsonl"
ARC = DATA / "samples_arc_easy_2026-09-24T03-05-32.831346.jsonl"
GSM8K = DATA / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"


def _to_parquet(src, dest):
    import datasets

    records = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines()]
    datasets.Dataset.from_list(records).to_parquet(str(dest))
    return dest


def _rows(path):
    with open_package(path) as pkg:
        return ([r.model_dump() for r in pkg.iter_rows("response_row.v1")],
                [r.model_dump() for r in pkg.iter_rows("item_row.v1")])


@pytest.mark.parametrize("src,bench", [(COPA, "selected_choice"), (ARC, "selected_choice"), (GSM8K, "gsm8k")])
def test_a_parquet_details_table_imports_as_its_jsonl_does(cli, here, src, bench):
    parquet = _to_parquet(src, here / (src.stem + ".parquet"))
    for path, out in ((src, "from-jsonl"), (parquet, "from-parquet")):
        r = cli("import", "lm-eval", path, "--benchmark", bench, "-o", out)
        assert r.code == 0, r.err
    assert _rows(here / "from-parquet") == _rows(here / "from-jsonl")
    with open_package(here / "from-parquet") as pkg:
        assert pkg.manifest.provenance.extra["import"]["hashes_verified"] == ["prompt_hash", "target_hash"]


def test_an_output_folder_of_parquet_details_is_cross_checked(cli, here):
    model = here / "details" / "sshleifer__tiny-gpt2"
    model.mkdir(parents=True)
    _to_parquet(COPA, model / f"samples_copa_{STAMP}.parquet")
    shutil.copy(COPA.parent / f"results_{STAMP}.json", model)
    r = cli("import", "lm-eval", "details", "-o", "pkgs")
    assert (r.code, r.err) == (0, "")
    assert r.out.splitlines()[1] == (f"  checked against results_{STAMP}.json: n-samples 20 = 20 documents in the "
                                     "samples; acc,none 0.6 = the mean of 20 samples")
    r = cli("grade", "pkgs/sshleifer__tiny-gpt2/copa", "--benchmark", "selected_choice", "-o", "g.json")
    assert r.code == 0 and "accuracy_all                  60.00%  (12/20)" in r.out


def test_an_edited_prompt_in_a_parquet_table_is_still_caught(cli, here):
    import datasets

    records = [json.loads(line) for line in COPA.read_text(encoding="utf-8").splitlines()]
    records[3]["arguments"]["gen_args_0"]["arg_0"] += " (edited)"
    datasets.Dataset.from_list(records).to_parquet(str(here / "copa.parquet"))
    r = cli("import", "lm-eval", "copa.parquet", "--benchmark", "selected_choice", "-o", "pkg")
    assert (r.code, r.err) == (2, "audit: error: copa.parquet: row 4: field prompt_hash: prompt_hash does not match "
                                  "the logged prompt (altered after the run?)\n")
