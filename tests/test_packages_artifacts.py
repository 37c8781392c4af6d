"""Package artifacts: a killed `pack` leaves nothing that validates; bundles validate and are
byte-reproducible; the committed JSON Schema files validate real manifests and rows with the
`jsonschema` library alone (what a user without Python does) and are in sync with the models.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.attacks import attack

REPO = Path(__file__).resolve().parent.parent
SCHEMAS = REPO / "schemas"


def _write_big_input(path: Path, rows: int) -> Path:
    line = '{"item_id":"q%07d","sample":0,"response":"%s","finish_reason":"stop"}\n'
    filler = "The answer is (B). " * 8
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(line % (i, filler) for i in range(rows))
    return path


@attack("writes.killed-partial-left")
def test_killed_pack_leaves_nothing_that_validates(cli, tmp_path):
    src = _write_big_input(tmp_path / "big.jsonl", 300_000)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from audit.cli import main; "
                             "sys.exit(main(sys.argv[1:]))", "pack", str(out), "--responses", str(src)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Kill it mid-write: once its partial data file has grown past 1 MB.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            partial = [p for p in tmp_path.iterdir() if p.name.startswith(".out.partial-")]
            if partial and (partial[0] / "responses.jsonl").exists() \
                    and (partial[0] / "responses.jsonl").stat().st_size > 1_000_000:
                break
            assert proc.poll() is None, "pack finished before it could be killed; use a larger input"
            time.sleep(0.01)
        else:
            pytest.fail("pack never started writing")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    (leftover,) = [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    assert not (leftover / "manifest.json").exists()
    r = cli("validate", leftover)
    assert (r.code, r.out) == (1, f"{leftover}/manifest.json: missing: not an audit package (no manifest.json)\n")
    # A second pack to the same place is not blocked by the leftover.
    small = tmp_path / "small.jsonl"
    small.write_text('{"item_id":"a","response":"x"}\n')
    assert cli("pack", out, "--responses", small).code == 0
    assert cli("validate", out).code == 0
    # ... and removes it: a writer killed before it published leaves nothing behind for long (issue 28 class 9).
    assert not leftover.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")] == []


def _build(cli, tmp_path: Path, name: str) -> Path:
    src = tmp_path / "rows.jsonl"
    src.write_text("".join(json.dumps({"item_id": f"q{i}", "sample": i % 3, "response": f"The answer is ({c})."})
                           + "\n" for i, c in enumerate("ABCDEFGHIJ")), encoding="utf-8")
    prov = tmp_path / "prov.json"
    prov.write_text(json.dumps({"model": "m", "engine": "vllm", "sampling": {"temperature": 0}}))
    out = tmp_path / name
    r = cli("pack", out, "--responses", src, "--benchmark", "mmlu_pro", "--provenance", prov, "--gzip")
    assert r.code == 0, r.err
    return out


def test_bundles_validate_and_are_byte_reproducible(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1714521600")
    a, b = _build(cli, tmp_path, "a"), _build(cli, tmp_path, "b")
    os.utime(b / "manifest.json", (0, 0))  # file times and order on disk do not leak into the bundle
    ta, tb, ta2 = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz", tmp_path / "a2.tar.gz"
    for pkg, tgz in ((a, ta), (b, tb), (a, ta2)):
        r = cli("bundle", pkg, "-o", tgz)
        assert (r.code, r.out) == (0, f"wrote {tgz}\n")
    assert ta.read_bytes() == tb.read_bytes() == ta2.read_bytes()
    r = cli("validate", ta)
    assert r.code == 0 and r.out.startswith("valid: responses package responses-mmlu_pro-")
    assert r.out.split("digest ")[1] == cli("validate", a).out.split("digest ")[1]
    s = cli("show", ta)
    assert s.code == 0 and "responses  10 rows: 10 items x 3 samples" in s.out
    # A bundle is made only from a valid package.
    (a / "responses.jsonl.gz").write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    r = cli("bundle", a, "-o", tmp_path / "bad.tar.gz")
    assert r.code == 1 and not (tmp_path / "bad.tar.gz").exists()


# --------------------------------------------------------------------------- JSON Schema, without audit


def _validator(name: str):
    import jsonschema

    schema = json.loads((SCHEMAS / f"{name}.json").read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


@pytest.mark.shared_data
def test_json_schemas_validate_real_manifests_and_rows(cli, shared, tmp_path):
    import gzip

    resp, items = tmp_path / "r", tmp_path / "i"
    r = cli("import", "table", shared("mmlu_pro/mmlu_pro_responses_sample.jsonl"), "-o", resp,
            "--kind", "responses", "--where", "run_id=gpt4o_2024-05", "--map", "item_id=question_id",
            "--map", "extra.pred=source_pred", "--gzip")
    assert r.code == 0, r.err
    # One category keeps it quick: jsonschema is pure Python.
    r = cli("import", "table", shared("mmlu_pro/mmlu_pro_test_questions.jsonl"), "-o", items, "--kind", "items",
            "--where", "category=history", "--map", "item_id=question_id", "--map", "reference=answer",
            "--map", "choices=options", "--map", "subject=category", "--map", "extra.src=src")
    assert r.code == 0, r.err

    manifest_v = _validator("manifest.v3")
    rows_v = {"response_row.v1": _validator("response_row.v1"), "item_row.v1": _validator("item_row.v1")}
    checked = 0
    for pkg in (resp, items):
        manifest = json.loads((pkg / "manifest.json").read_text(encoding="utf-8"))
        assert list(manifest)[0] == "schema_version"
        manifest_v.validate(manifest)
        for entry in manifest["files"]:
            opener = gzip.open if entry["path"].endswith(".gz") else open
            with opener(pkg / entry["path"], "rt", encoding="utf-8") as f:
                for line in f:
                    rows_v[entry["schema"]].validate(json.loads(line))
                    checked += 1
    assert checked == 1000 + 381  # gpt-4o's sample rows, and MMLU-Pro's history questions

    # The schema alone rejects what the models reject.
    row = {"item_id": "84", "sample": 0, "response": "The answer is (F)."}
    bad_rows = [{**row, "sample": "0"}, {k: v for k, v in row.items() if k != "response"}, {**row, "item_id": ""},
                {**row, "sample": -1}, {**row, "pred": "F"}]
    assert [rows_v["response_row.v1"].is_valid(x) for x in [row, *bad_rows]] == [True] + [False] * len(bad_rows)
    manifest = json.loads((resp / "manifest.json").read_text(encoding="utf-8"))
    bad_manifests = [{**manifest, "kind": "../weights"}, {**manifest, "package_id": "has space"},
                     {**manifest, "files": [{**manifest["files"][0], "sha256": "XYZ"}]},
                     {**manifest, "schema_version": "1"}]
    assert [manifest_v.is_valid(m) for m in bad_manifests] == [False] * len(bad_manifests)
    # A kind the schema cannot know (it lists none) is valid by the schema; `audit validate` asks the registry.
    assert manifest_v.is_valid({**manifest, "kind": "task-runs"})
    # The frozen v1 file, as published, still validates a manifest of its day.
    assert _validator("manifest.v1").is_valid(manifest)


def test_schema_files_are_in_sync():
    from audit.schemas import FROZEN, check, expected_files

    assert check() == []
    assert sorted(p.name for p in SCHEMAS.glob("*.json")) == sorted([*expected_files(), *FROZEN])


PUBLISHED_MANIFEST_SCHEMA = {"manifest.v3.json": "6eb3dbdede22498894013c61e4b19a1733e44810e6f91eb30bd75b50f0d2a138"}
"""sha256 of each manifest schema file as published. A change to the manifest model that changes the file is a
new manifest version: bump MANIFEST_SCHEMA_VERSION (a new file, manifest.vN.json), move the old file's digest to
audit.schemas.FROZEN and add the new one here."""


def test_the_published_manifest_schema_never_changes_in_place(tmp_path):
    from audit.models import MANIFEST_SCHEMA_VERSION
    from audit.schemas import FROZEN, MANIFEST_SCHEMA_ID, check, expected_files, write

    files = expected_files()
    assert MANIFEST_SCHEMA_ID == f"manifest.v{MANIFEST_SCHEMA_VERSION}"
    assert json.loads(files[f"{MANIFEST_SCHEMA_ID}.json"])["$id"].endswith(f"/{MANIFEST_SCHEMA_ID}.json")
    published = {name: hashlib.sha256(text.encode()).hexdigest() for name, text in files.items()
                 if name.startswith("manifest.")}
    assert published == PUBLISHED_MANIFEST_SCHEMA, "the manifest schema changed in place: bump its version"
    assert not set(FROZEN) & set(files)
    # `audit schemas --write` keeps a frozen file; `--check` names one that was edited or removed.
    shutil.copytree(SCHEMAS, tmp_path / "s")
    write(tmp_path / "s")
    assert check(tmp_path / "s") == [] and (tmp_path / "s" / "manifest.v1.json").is_file()
    (tmp_path / "s" / "manifest.v1.json").write_text("{}")
    (tmp_path / "s" / "manifest.v9.json").write_text("{}")
    assert check(tmp_path / "s") == ["manifest.v1.json", "manifest.v9.json"]
    (tmp_path / "s" / "manifest.v1.json").unlink()
    assert check(tmp_path / "s") == ["manifest.v1.json", "manifest.v9.json"]


@pytest.mark.parametrize("path", ["responses.jsonl", "data/part-0.parquet", ".hidden", "a/..b", "sub/manifest.json",
                                  "", "/abs.jsonl", "C:/x.jsonl", "c:x", "manifest.json", "a\\b", "a\x00b", "..",
                                  "../x", "a/../b", "a/..", ".", "./x", "a/./b", "a//b", "a/"])
def test_schema_path_pattern_agrees_with_the_model(path):
    # Non-Python users get the same path safety rule from the schema's pattern alone.
    from audit.models import unsafe_path_reason

    entry = json.loads((SCHEMAS / "manifest.v3.json").read_text())["$defs"]["FileEntry"]["properties"]["path"]
    import re

    assert (re.search(entry["pattern"], path) is not None) == (unsafe_path_reason(path) is None)


def test_a_live_writers_stage_is_left_alone_and_only_dead_ones_go(tmp_path):
    import subprocess

    from audit.outputs import clean_stale_stages, staging_dir

    out = tmp_path / "rel"
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".rel.partial-{dead.pid}-0123abcd"
    live = tmp_path / f".rel.partial-{os.getpid()}-4567abcd"
    other = tmp_path / ".rel.partial-notapid"
    for d in (stale, live, other):
        d.mkdir()
    assert clean_stale_stages(out, "partial") == [stale.name]
    new = staging_dir(out, "partial")
    assert new.name.startswith(f".rel.partial-{os.getpid()}-") and live.exists() and other.exists()
