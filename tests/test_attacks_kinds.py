"""Attacks on the package kinds main added after issue 11's hardening began (bench, telemetry, profile,
checkpoint-headers) and on `audit verify`, which reads packages, verdict files and tables.

Each attack is one of issue 11's applied to a new reader: a duplicate key in a document, a file
swapped for a FIFO or for another package's after validation, a tar bomb in a floor bundle (in the
committed bundles' order, manifest last), an out-of-range integer. The packages are copies of the
evidence packages the project ships. See tests/attacks.py for the registry.
"""

from __future__ import annotations

import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from tests.attack_tools import MIB, audit_jailed, repin, sha256, swap_for_fifo, tar_gz
from tests.attacks import attack
from tests.claims_helpers import PACKAGES

import audit.packages.read as pkg_read

BENCH = PACKAGES / "evidence-h200-bench"
TRACE = PACKAGES / "evidence-h200-trace"
FLOOR = PACKAGES / "evidence-h200-floor"


def _copy(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest)
    return dest


def _unbundle(tgz: Path, dest: Path) -> Path:
    """A committed floor bundle unpacked to a package directory (its members are plain files)."""
    with tarfile.open(tgz) as tf:
        tf.extractall(dest, filter="data")
    return dest


def _members(tgz: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(tgz) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers() if m.isfile()]


def _dup_key(text: str, key: str, forged: str) -> str:
    """`text` with `"key": forged` inserted before the first `"key": ...`: two values for one key."""
    marker = f'"{key}": '
    i = text.index(marker)
    return text[:i] + f"{marker}{forged}, " + text[i:]


# --------------------------------------------------------------------------- duplicate keys in documents


@attack("kinds.dup-key-trace-summary")
def test_duplicate_key_in_a_trace_summary_is_refused(tmp_path, cli):
    pkg = _copy(TRACE / "profile-default-marker", tmp_path / "profile")
    text = (pkg / "summary.json").read_text()
    repin(pkg, "summary.json", _dup_key(text, "schema_version", "1").encode())
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out == f"{pkg}/summary.json: field schema_version: duplicate key in a JSON object\n"
    r = cli("trace", "diff", pkg, pkg)
    assert r.code == 1 and "summary.json: field schema_version: duplicate key in a JSON object" in r.err
    assert "Traceback" not in r.err


@attack("kinds.dup-key-bench")
@pytest.mark.parametrize("name", ["summary.json", "anchor.json"])
def test_duplicate_key_in_a_throughput_document_is_refused(tmp_path, cli, name):
    pkg = _copy(BENCH / "graphs", tmp_path / "graphs")
    text = (pkg / name).read_text()
    key = next(iter(json.loads(text)))  # the first key: a forged value first, the real one last (json.loads keeps it)
    repin(pkg, name, _dup_key(text, key, json.dumps("forged")).encode())
    r = cli("bench", "report", pkg, "--no-png")
    assert r.code == 2, r.out
    assert f"{pkg}/{name}: field {key}: " in r.err and "duplicate key in a JSON object" in r.err
    assert "Traceback" not in r.err


# --------------------------------------------------------------------------- files swapped after validation


@attack("kinds.fifo-swap")
def test_a_telemetry_parquet_swapped_for_a_fifo_is_refused_not_waited_on(tmp_path):
    run = _copy(BENCH / "eager", tmp_path / "eager")
    tel = _copy(BENCH / "eager.telemetry", tmp_path / "eager.telemetry")
    setup = swap_for_fifo("gpu_samples.parquet", "eager.telemetry")
    r = audit_jailed("bench", "report", run, "--telemetry", tel, "--no-png", setup=setup,
                     timeout=60)  # a reader that opened the FIFO would wait for a writer forever
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{tel}/gpu_samples.parquet: changed while being read: unreadable: not a regular file" in r.stderr


@attack("kinds.fifo-swap")
def test_a_floor_shard_swapped_for_a_fifo_is_refused_not_waited_on(tmp_path):
    pkg = _unbundle(FLOOR / "floor-llama-3.1-8b.tar.gz", tmp_path / "floor")
    shard = "checkpoint/model-00001-of-00004.safetensors"
    r = audit_jailed("floor-check", pkg, setup=swap_for_fifo(shard, "floor"), timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.startswith(f"audit: error: {pkg}/checkpoint/"), r.stderr  # refused, whichever reader saw it
    assert "model-00001-of-00004.safetensors" in r.stderr and "Traceback" not in r.stderr


@attack("kinds.toctou-floor")
def test_floor_check_refuses_another_floor_package_swapped_in_after_validation(tmp_path, monkeypatch, cli):
    pkg = _unbundle(FLOOR / "floor-llama-3.1-8b.tar.gz", tmp_path / "floor")
    other = _unbundle(FLOOR / "floor-qwen3-30b-a3b.tar.gz", tmp_path / "other")
    original = pkg_read.validate_tree

    def validate_then_swap(root, *a, **k):
        out = original(root, *a, **k)
        if Path(root) == pkg:  # the whole package replaced by another valid, self-consistent one
            os.rename(pkg, tmp_path / "floor.orig")
            os.rename(other, pkg)
        return out

    monkeypatch.setattr(pkg_read, "validate_tree", validate_then_swap)
    r = cli("floor-check", pkg)
    # Recomputed identically from the other model's headers, it would report "identical" for the
    # package validated (Llama's digest) while reading Qwen's files.
    assert r.code == 2, r.out
    assert r.err.startswith(f"audit: error: {pkg}/floor.json: changed while being read: sha256 is ")


@attack("kinds.toctou-documents")
def test_a_trace_summary_swapped_after_validation_is_never_read(tmp_path, monkeypatch):
    from audit.errors import AuditError
    from audit.trace.package import open_profile

    pkg = _copy(TRACE / "profile-default-marker", tmp_path / "profile")
    real = json.loads((pkg / "summary.json").read_text())
    forged = dict(real, trace={**real["trace"], "kernels": real["trace"]["kernels"] * 2})
    original = pkg_read.validate_tree

    def validate_then_swap(root, *a, **k):
        out = original(root, *a, **k)
        if Path(root) == pkg:
            (pkg / "new").write_text(json.dumps(forged, indent=2))
            os.replace(pkg / "new", pkg / "summary.json")
        return out

    monkeypatch.setattr(pkg_read, "validate_tree", validate_then_swap)
    try:
        loaded = open_profile(pkg)
    except AuditError as e:
        assert "summary.json: changed while being read: sha256 is" in str(e)
    else:  # read: then what was validated, never the swapped document
        assert loaded.summary.trace.kernels == real["trace"]["kernels"]


# --------------------------------------------------------------------------- bombs in floor bundles


def _floor_bomb(tmp_path: Path, manifest_first: bool) -> tuple[Path, str, int]:
    """The committed Llama floor bundle with one shard's header-only copy replaced by 64 MiB of zeros."""
    members = _members(FLOOR / "floor-llama-3.1-8b.tar.gz")
    assert members[-1][0] == "manifest.json"  # committed before harden: the manifest last
    shard = "checkpoint/model-00001-of-00004.safetensors"
    size = next(len(d) for n, d in members if n == shard)
    bombed: list[tuple[str, bytes | int]] = [(n, 64 * MIB if n == shard else d) for n, d in members]
    if manifest_first:
        bombed = [bombed[-1]] + bombed[:-1]
    tgz = tmp_path / "floor-bomb.tar.gz"
    tgz.write_bytes(tar_gz(bombed))
    assert tgz.stat().st_size < MIB
    return tgz, shard, size


@attack("kinds.tar-bomb-floor")
@pytest.mark.parametrize("manifest_first", [False, True], ids=["manifest-last", "manifest-first"])
def test_a_tar_bomb_in_a_floor_bundle_is_refused_before_extraction(tmp_path, manifest_first):
    tgz, shard, size = _floor_bomb(tmp_path, manifest_first)
    setup = "import audit.packages.validate as v; v.MAX_BYTES_BEFORE_MANIFEST = 2 << 20"
    r = audit_jailed("floor-check", tgz, max_file_bytes=4 * MIB, setup=setup, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "File too large" not in r.stdout + r.stderr  # nothing was extracted past 4 MiB
    assert "Traceback" not in r.stderr
    if manifest_first:
        assert f"{tgz}:{shard}: tar member is 67,108,864 bytes, manifest.json says {size:,}" in r.stderr
    else:
        assert (f"{tgz}:{shard}: members before manifest.json pass the 2,097,152-byte limit for members read "
                f"before it (write manifest.json first: `audit bundle` does)") in r.stderr


def test_the_committed_floor_bundles_still_validate_with_the_manifest_last(cli):
    """Written before `audit bundle` put manifest.json first: each is far under the cap before the manifest."""
    for tgz in sorted(FLOOR.glob("*.tar.gz")):
        names = [n for n, _ in _members(tgz)]
        assert names[-1] == "manifest.json"
        r = cli("validate", tgz)
        assert r.code == 0 and r.out.startswith("valid: checkpoint-headers package "), (tgz, r.out)


# --------------------------------------------------------------------------- integers out of range


@attack("kinds.huge-int")
@pytest.mark.parametrize("src, name, field", [
    (BENCH / "eager", "requests.jsonl", "request"),
    (TRACE / "profile-default-marker", "kernels.jsonl", "count"),
    (TRACE / "profile-decode-tp1", "steps.jsonl", "kernels"),
], ids=["bench-request", "profile-kernel", "profile-step"])
def test_integers_past_2_53_in_the_new_rows_are_refused_by_the_schema(tmp_path, cli, src, name, field):
    pkg = _copy(src, tmp_path / "pkg")
    lines = (pkg / name).read_bytes().split(b"\n")
    row = json.loads(lines[0])
    row[field] = 10**30
    lines[0] = json.dumps(row).encode()
    repin(pkg, name, b"\n".join(lines))
    r = cli("validate", pkg)
    assert r.code == 1
    assert r.out.startswith(f"{pkg}/{name}: row 1: field {field}: Input should be less than or equal to "
                            f"9007199254740991 (got 1000000000000000000000000000000)\n"), r.out


# --------------------------------------------------------------------------- audit verify


def _mini_ledger(root: Path, files: list[dict], claims: list[dict], packages: list[dict] = ()) -> Path:
    p = root / "claims.yaml"
    p.write_text(json.dumps({"schema_version": 1, "title": "attack", "packages": list(packages), "files": files,
                             "claims": claims}, indent=1), encoding="utf-8")
    return p


@attack("kinds.toctou-claims")
def test_verify_recomputes_from_the_verdict_file_whose_sha256_it_checked(tmp_path, monkeypatch, cli):
    import audit.claims.verify as verify_mod

    src = PACKAGES / "evidence-h200-vllm" / "graded" / "math500-completion-resumed.json"
    vf = tmp_path / "verdicts.json"
    shutil.copyfile(src, vf)
    text = vf.read_text()
    forged = text.replace('"verdict":"incorrect","status":"no_answer"', '"verdict":"correct","status":"correct"') \
        .replace('"verdict":"incorrect","status":"truncated"', '"verdict":"correct","status":"correct"')
    assert forged != text
    ledger = _mini_ledger(tmp_path, [{"id": "v", "path": "verdicts.json", "sha256": sha256(vf.read_bytes()),
                                      "format": "verdicts"}],
                          [{"id": "A", "text": "accuracy", "value": 0.0, "unit": "percent", "status": "measured",
                            "sources": ["v"], "recipe": {"name": "verdicts.accuracy", "args": {"verdicts": "v"}},
                            "tolerance": {"absolute": 0.005}}])
    original = verify_mod._check_file

    def check_then_swap(*a, **k):
        out = original(*a, **k)
        (tmp_path / "new.json").write_text(forged)  # every verdict flipped to correct, after the sha256 check
        os.replace(tmp_path / "new.json", vf)
        return out

    monkeypatch.setattr(verify_mod, "_check_file", check_then_swap)
    r = cli("verify", ledger)
    assert vf.read_text() == forged
    assert r.code == 0, r.out  # 0.00% recomputed from the checked bytes; the swapped file would give 100%
    assert "All 1 claims survive." in r.out


@attack("kinds.toctou-claims")
def test_verify_reads_a_package_table_as_the_manifest_pins_it(tmp_path, monkeypatch, cli):
    from audit.packages import PackageWriter, package_digest

    rows = [("a", 10, 5), ("b", 12, 6), ("c", 9, 4.5)]
    with PackageWriter(tmp_path / "bench", kind="throughput", package_id="bench-agentic") as w:
        w.add_text("durations.csv", "task,baseline_s,mtp_s\n" + "".join(f"{t},{a},{b}\n" for t, a, b in rows))
    digest = package_digest(w.manifest)
    ledger = _mini_ledger(tmp_path, [], [
        {"id": "S", "text": "speed-up", "value": 2.0, "unit": "ratio", "status": "measured",
         "sources": ["bench-agentic"], "recipe": {"name": "stats.paired_log_ratio", "args": {
             "package": "bench-agentic", "file": "durations.csv", "numerator": "baseline_s",
             "denominator": "mtp_s"}}, "tolerance": {"absolute": 1e-9}}],
        packages=[{"id": "bench-agentic", "path": "bench", "sha256": digest}])
    original = pkg_read.validate_tree

    def validate_then_swap(root, *a, **k):
        out = original(root, *a, **k)
        if Path(root) == tmp_path / "bench":  # a 4x speed-up swapped in after the digest was checked
            (tmp_path / "bench" / "durations.csv").write_text("task,baseline_s,mtp_s\na,20,5\nb,24,6\nc,18,4.5\n")
        return out

    monkeypatch.setattr(pkg_read, "validate_tree", validate_then_swap)
    r = cli("verify", ledger)
    assert r.code == 1, r.out  # never 4.00, recomputed from bytes the ledger's digest does not pin
    assert "bench/durations.csv: changed while being read: sha256 is" in r.out


@attack("kinds.dup-key-claims-table")
def test_a_duplicate_key_in_a_table_read_by_verify_is_refused(tmp_path, cli):
    from audit.packages import PackageWriter, package_digest

    text = ('{"task": "a", "baseline_s": 10, "mtp_s": 5}\n'
            '{"task": "b", "baseline_s": 1, "baseline_s": 12, "mtp_s": 6}\n')  # one reader sees 1, another 12
    with PackageWriter(tmp_path / "bench", kind="throughput", package_id="bench-agentic") as w:
        w.add_text("durations.jsonl", text)
    ledger = _mini_ledger(tmp_path, [], [
        {"id": "S", "text": "speed-up", "value": 2.0, "unit": "ratio", "status": "measured",
         "sources": ["bench-agentic"], "recipe": {"name": "stats.paired_log_ratio", "args": {
             "package": "bench-agentic", "file": "durations.jsonl", "numerator": "baseline_s",
             "denominator": "mtp_s"}}, "tolerance": {"absolute": 1e-9}}],
        packages=[{"id": "bench-agentic", "path": "bench", "sha256": package_digest(w.manifest)}])
    r = cli("verify", ledger)
    assert r.code == 1, r.out
    assert ("cannot recompute: bench-agentic/durations.jsonl: row 2: field baseline_s: duplicate key in a JSON "
            "object") in r.out, r.out


# --------------------------------------------------------------------------- audit bundle


@pytest.mark.parametrize("src", [BENCH / "graphs", BENCH / "graphs.telemetry", TRACE / "profile-decode-tp1",
                                 PACKAGES / "evidence-h200-vllm" / "math500-tiny-llama", "floor"],
                         ids=["throughput", "telemetry", "profile", "responses", "checkpoint-headers"])
def test_bundle_writes_the_manifest_first_for_every_kind(tmp_path, cli, src):
    if src == "floor":  # a committed floor bundle (manifest last), unpacked and bundled again
        src = _unbundle(FLOOR / "floor-llama-3.1-8b.tar.gz", tmp_path / "floor")
    out = tmp_path / "bundle.tar.gz"
    assert cli("bundle", src, "-o", out).code == 0
    names = [n for n, _ in _members(out)]
    assert names[0] == "manifest.json" and names[1:] == sorted(names[1:])
    before, after = cli("validate", src), cli("validate", out)
    assert after.code == 0 and after.out.split("digest ")[1] == before.out.split("digest ")[1]


@attack("pkg.toctou-bundle")
def test_bundle_refuses_a_file_rewritten_after_validation(tmp_path, monkeypatch, cli):
    import audit.packages.validate as val

    pkg = _copy(TRACE / "profile-default-marker", tmp_path / "profile")
    kernels = (pkg / "kernels.jsonl").read_bytes()
    forged = kernels.replace(b'"count":', b'"count": ', 1)[:len(kernels)]  # same size, other bytes
    assert len(forged) == len(kernels) and forged != kernels
    original = val.validate_tree

    def validate_then_rewrite(root, *a, **k):
        got = original(root, *a, **k)
        if Path(root) == pkg:
            with open(pkg / "kernels.jsonl", "r+b") as f:
                f.write(forged)
        return got

    monkeypatch.setattr(val, "validate_tree", validate_then_rewrite)
    out = tmp_path / "bundle.tar.gz"
    r = cli("bundle", pkg, "-o", out)
    assert r.code == 2 and not out.exists()
    assert r.err.startswith(f"audit: error: {pkg}/kernels.jsonl: changed while being bundled: sha256 is ")
    assert not list(tmp_path.glob(".bundle.tar.gz.tmp-*"))  # nothing half-written left


# --------------------------------------------------------------------------- round 4 (issue 28), class 6


@attack("kinds.responses-relabelled-items")
def test_a_responses_package_relabelled_kind_items_does_not_validate(cli, tmp_path):
    from tests.builders import make_package

    pkg = make_package(tmp_path / "p", responses=[{"item_id": "q1", "response": "A"}],
                       items=[{"item_id": "q1", "reference": "A"}])
    mpath = pkg / "manifest.json"
    mpath.write_text(mpath.read_text().replace('"kind": "responses"', '"kind": "items"'))
    assert '"kind": "items"' in mpath.read_text()
    r = cli("validate", pkg)
    assert r.code != 0
    assert "responses.jsonl: field schema: schema response_row.v1 is not one a package of kind 'items' holds" in r.out
    # The honest label still validates; a responses package may hold its items.
    mpath.write_text(mpath.read_text().replace('"kind": "items"', '"kind": "responses"'))
    assert cli("validate", pkg).code == 0


def _edit_manifest(pkg: Path, edit) -> dict:
    mpath = pkg / "manifest.json"
    m = json.loads(mpath.read_text(encoding="utf-8"))
    edit(m)
    mpath.write_text(json.dumps(m, indent=2), encoding="utf-8")
    return m


def _downgraded(m: dict, version: int = 1) -> None:
    m["schema_version"] = version
    m["provenance"]["model"] = "frontier-model"  # what the old scheme's digest would no longer pin


@attack("id.manifest-downgrade")
@pytest.mark.parametrize("version", [1, 2])
def test_a_manifest_edited_to_an_older_schema_than_its_audit_writes_is_refused(cli, tmp_path, version):
    from audit import __version__
    from tests.builders import make_package

    pkg = make_package(tmp_path / "p", responses=[{"item_id": "q1", "response": "A"}])
    m = json.loads((pkg / "manifest.json").read_text(encoding="utf-8"))
    assert (m["schema_version"], m["producer"]["version"]) == (3, __version__)
    _edit_manifest(pkg, lambda m: _downgraded(m, version))
    r = cli("validate", pkg)
    assert (r.code, r.out) == (1, f"{pkg}/manifest.json: field schema_version: schema_version {version} cannot be "
                                  f"genuine: audit {__version__} writes schema_version 3 (the manifest was edited to "
                                  f"an older scheme)\n")
    r = cli("show", pkg)
    assert r.code == 1 and "cannot be genuine" in r.err + r.out


@attack("id.manifest-downgrade")
def test_a_schema_1_manifest_from_a_commit_that_writes_schema_2_is_refused(cli, tmp_path):
    # audit 0.1.0 wrote every scheme, so its version tells nothing: the commit does. The committed agentic
    # packages were written at 8c1ca51, a descendant of 13314b6 (which began writing schema 2).
    pkg = _copy(PACKAGES / "demo-lab-note" / "agentic" / "deepswe-baseline", tmp_path / "p")
    m = _edit_manifest(pkg, _downgraded)
    commit = m["producer"]["git_commit"]
    assert (m["producer"]["version"], commit[:7]) == ("0.1.0", "8c1ca51")
    r = cli("validate", pkg)
    from audit.producer import _descends

    if _descends("13314b6d9e49", commit) is None:  # a shallow clone holds neither commit and cannot tell:
        # the kind still can (schema 1 had no task-runs kind)
        assert r.code == 1 and "field schema_version: schema_version 1 cannot be genuine: " in r.out
        assert "task-runs" in r.out
        return
    assert (r.code, r.out) == (1, f"{pkg}/manifest.json: field schema_version: schema_version 1 cannot be genuine: "
                                  f"its producer, audit 0.1.0 at commit {commit[:12]}, descends from commit "
                                  f"13314b6d9e49, which began writing schema_version 2 (the manifest was edited to "
                                  f"an older scheme)\n")


@attack("id.legacy-provenance-read")
def test_a_schema_1_manifests_provenance_is_never_read_as_the_packages(cli, tmp_path):
    # Where the producer cannot tell (this trace was written at fa5ac1b, before schema 2), the package validates
    # under its files-only digest, but nothing reads its provenance: the profile reader needs its trace record.
    from audit.models import Provenance
    from audit.packages import open_package

    pkg = _copy(TRACE / "profile-decode-tp1", tmp_path / "p")
    _edit_manifest(pkg, _downgraded)
    assert cli("validate", pkg).code == 0
    with open_package(pkg) as p:
        assert p.manifest.provenance == Provenance()
        assert p.manifest.unpinned_provenance is not None and p.manifest.unpinned_provenance.model == "frontier-model"
    r = cli("show", pkg)
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {pkg}: manifest.json: schema_version 1: its provenance is not covered by the "
                     f"package's digest, so it is not read (a profile package is read through its "
                     f"provenance.extra); write the package again with audit 0.2.0 or later\n")


@attack("id.legacy-provenance-read")
def test_a_schema_1_items_package_lends_no_dataset_to_what_reads_it(tmp_path):
    # `audit generate` copies the items package's dataset into the responses package it writes, where the new
    # digest would pin it: from a schema 1 manifest that would launder a claim no digest ever covered.
    from audit.packages import open_package
    from tests.attack_tools import write_package

    dataset = {"name": "TIGER-Lab/MMLU-Pro", "split": "test", "revision": None, "sha256": "0" * 64}
    pkg = write_package(tmp_path / "items", {"items.jsonl": b'{"item_id":"q1","reference":"A"}\n'},
                        kind="items", provenance={"dataset": dataset},
                        producer={"tool": "audit", "version": "0.1.0"})
    m = json.loads((pkg / "manifest.json").read_text())
    m["files"][0]["schema"] = "item_row.v1"
    (pkg / "manifest.json").write_text(json.dumps(m))
    with open_package(pkg) as p:
        assert p.manifest.schema_version == 1 and p.manifest.provenance.dataset is None
        assert p.manifest.unpinned_provenance is not None
        assert p.manifest.unpinned_provenance.dataset.model_dump() == dataset


@attack("id.legacy-provenance-read")
def test_committed_schema_1_packages_still_read_and_show_their_provenance_as_unverified(cli):
    committed = sorted(p.parent for p in PACKAGES.rglob("manifest.json")
                       if json.loads(p.read_text(encoding="utf-8"))["schema_version"] == 1)
    assert len(committed) == 7  # demo-lab-note's four, evidence-h200-vllm's three
    for pkg in committed:
        assert cli("validate", pkg).code == 0, pkg
    r = cli("show", PACKAGES / "demo-lab-note" / "math500")
    assert r.code == 0
    lines = r.out.splitlines()
    at = lines.index("provenance unverified: the digest of a schema_version 1 manifest does not cover it")
    assert lines[at + 1] == "model      demo-model (fictional)"


@attack("id.manifest-downgrade")
def test_a_schema_1_manifest_of_a_kind_that_came_after_it_is_refused(cli, tmp_path):
    # The producer left out too (a schema 1 digest does not cover it): the kind still tells.
    pkg = _copy(PACKAGES / "demo-lab-note" / "agentic" / "deepswe-baseline", tmp_path / "p")
    m = _edit_manifest(pkg, lambda m: (_downgraded(m), m.update(producer={"tool": "audit", "version": "0.1.0"})))
    assert m["kind"] == "task-runs"
    r = cli("validate", pkg)
    assert (r.code, r.out) == (1, f"{pkg}/manifest.json: field schema_version: schema_version 1 cannot be genuine: "
                                  f"kind 'task-runs' came after it (schema 1 was written for checkpoint-headers, "
                                  f"items, profile, release, responses, telemetry, throughput, verdicts) (the "
                                  f"manifest was edited to an older scheme)\n")


def test_the_kinds_of_schema_1_are_the_published_schemas():
    from tests.conftest import REPO

    from audit.producer import SCHEMA_1_KINDS

    published = json.loads((REPO / "schemas" / "manifest.v1.json").read_text(encoding="utf-8"))
    assert set(published["properties"]["kind"]["enum"]) == SCHEMA_1_KINDS


def test_the_version_table_names_the_schema_this_audit_writes():
    # A scheme change without a version bump and a row in WRITES_SINCE_VERSION would leave the producer silent
    # again (as 0.1.0 was over three schemes): the table's row for this version must be what it writes.
    from audit import __version__
    from audit.models import MANIFEST_SCHEMA_VERSION
    from audit.producer import WRITES_SINCE_VERSION, _release

    release = _release(__version__)
    assert release is not None, __version__
    since, writes = max(row for row in WRITES_SINCE_VERSION if row[0] <= release)
    assert writes == MANIFEST_SCHEMA_VERSION, f"audit {__version__} writes {MANIFEST_SCHEMA_VERSION}: add a row"
    assert [w for _, w in sorted(WRITES_SINCE_VERSION)] == sorted(w for _, w in WRITES_SINCE_VERSION)


@attack("id.legacy-provenance-read")
def test_a_schema_1_telemetry_package_is_refused_before_its_link_is_read(cli, tmp_path):
    # Its link to its throughput run (provenance.extra.throughput) is not covered by a schema 1 digest.
    pkg = _copy(BENCH / "eager.telemetry", tmp_path / "t")
    _edit_manifest(pkg, lambda m: m.update(schema_version=1))
    assert cli("validate", pkg).code == 0
    r = cli("show", pkg)
    assert (r.code, r.out) == (2, "")
    assert r.err == (f"audit: error: {pkg}: manifest.json: schema_version 1: its provenance is not covered by the "
                     f"package's digest, so it is not read (a telemetry package is read through its "
                     f"provenance.extra); write the package again with audit 0.2.0 or later\n")
