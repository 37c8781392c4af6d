"""Every verdict file the project ships still reproduces at HEAD, and `reproduce` accepts a recorded
fingerprint only when the version's lock accepts it."""

from __future__ import annotations

import json
import shutil

import pytest

from audit import extractors
from audit import lock
from tests.conftest import REPO

COMMITTED = sorted((REPO / "packages" / "evidence-h200-vllm" / "graded").glob("*.json"))


def test_the_project_ships_verdict_files():
    assert len(COMMITTED) == 3


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_committed_verdict_file_reproduces_identically(cli, path):
    r = cli("reproduce", path)
    assert (r.code, r.out.splitlines()[0]) == (0, f"identical: {path}")
    # What reproduce took as recorded, said plainly: the grader's producer, and the packages' old-scheme
    # digests (written before the identity covered the manifest).
    rest = r.out.splitlines()[1:]
    assert rest[0].startswith("not re-derived: producer audit ") and rest[0].endswith(
        ": who graded, as the file records it (this run's own producer is not compared)")
    assert all(line.startswith("not re-derived: responses package ") and line.endswith(
        "its digest is of the old scheme (manifest schema_version 1): it covers file paths and hashes only, not "
        "the manifest's provenance, producer, kind or row counts") for line in rest[1:]) and len(rest) == 2


def _copy_evidence(tmp_path, name: str):
    """A copy of a committed verdict file beside copies of its packages (same relative paths)."""
    src = REPO / "packages" / "evidence-h200-vllm"
    dst = tmp_path / "evidence"
    shutil.copytree(src, dst)
    return dst / "graded" / name


def _set_fingerprint(path, field: str, fingerprint: str) -> None:
    text = path.read_text(encoding="utf-8")
    old = json.loads(text.split('\n  "items": ')[0].rstrip(",") + "}")[field]["fingerprint"]
    path.write_text(text.replace(f'"fingerprint": "{old}"', f'"fingerprint": "{fingerprint}"', 1), encoding="utf-8")


def test_a_fingerprint_the_lock_does_not_accept_is_not_the_same_version(cli, tmp_path):
    path = _copy_evidence(tmp_path, "mmlu_pro-tiny-llama.json")
    key = "mmlu_pro.official@f418b11"
    assert not lock.accepted("extractor", key, "e" * 64)
    _set_fingerprint(path, "extractor", "e" * 64)
    r = cli("reproduce", path)
    assert r.code == 1
    assert r.out.splitlines()[:2] == [f"note: extractor {key}: code fingerprint differs from the recorded one",
                                      f"differs: {path} (1 differences)"]


def test_every_fingerprint_the_lock_accepts_is_the_same_version(cli, tmp_path):
    path = _copy_evidence(tmp_path, "mmlu_pro-tiny-llama.json")
    key = "mmlu_pro.official@f418b11"
    accepted = lock.read_lock(extractors.LOCK_FILE).entries[key].fingerprints
    assert extractors.get(key).fingerprint in accepted
    for fp in accepted:
        _set_fingerprint(path, "extractor", fp)
        r = cli("reproduce", path)
        assert (r.code, r.out.splitlines()[0]) == (0, f"identical: {path}"), fp


def test_a_grading_made_before_a_migration_diffs_clean_against_one_made_now(cli, tmp_path):
    # The shipped file names the fingerprints its code had when it was graded; a regrade now names the
    # current ones. Both are the same versions (their locks accept both): no note, no change.
    old = _copy_evidence(tmp_path, "mmlu_pro-tiny-llama.json")
    new = tmp_path / "now.json"
    recorded = json.loads(old.read_text(encoding="utf-8").split('\n  "items": ')[0].rstrip(",") + "}")
    assert recorded["policies"]["resampling"] == "longer-only"
    r = cli("grade", old.parent.parent / "mmlu_pro-tiny-llama", "--benchmark", "mmlu_pro", "-o", new, "-q",
            "--policy", "resampling=longer-only")
    assert r.code == 0, r.err
    now = json.loads(new.read_text(encoding="utf-8").split('\n  "items": ')[0].rstrip(",") + "}")
    assert recorded["extractor"]["fingerprint"] != now["extractor"]["fingerprint"]
    r = cli("diff", old, new)
    assert r.code == 0, r.out
    assert [line for line in r.out.splitlines() if line.startswith("- note:")] == []
    assert "No figure and no verdict changed." in r.out


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_a_version_1_file_is_written_back_byte_for_byte(path):
    # Version 2 added summary.subjects; a version-1 file loads with it null and is serialised without it.
    from audit.verdicts import VERDICT_FILE_SCHEMA_VERSION, dump_verdict_file, load_verdict_file

    vf = load_verdict_file(path)
    assert (vf.schema_version, vf.summary.subjects, vf.summary.sample_figures, VERDICT_FILE_SCHEMA_VERSION) == (
        1, None, None, 4)
    assert dump_verdict_file(vf) == path.read_text(encoding="utf-8")
    assert '"subjects"' not in path.read_text(encoding="utf-8")


def test_version_1_files_still_validate_against_their_own_schema():
    import jsonschema

    schema = json.loads((REPO / "schemas" / "verdict_file.v1.json").read_text(encoding="utf-8"))
    for path in COMMITTED:
        jsonschema.validate(json.loads(path.read_text(encoding="utf-8")), schema)
