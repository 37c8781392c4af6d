#!/usr/bin/env python3
"""Rewrite the committed evidence packages in the current digest scheme with what each measured (issue 32).

    python scripts/rewrite_evidence.py            # rewrite in place (idempotent), then update packages/claims.yaml
    python scripts/rewrite_evidence.py --check    # exit 1 if any package is not rewritten

Each package written before manifest schema_version 2 kept the old digest scheme (its files' paths and hashes only)
and named no subject; the packages written at 2 with a subject (the H200 ones rewritten so, the H100 ones as the
device wrote them) are at a version whose frozen schema (schemas/manifest.v2.json) does not describe the subject.
This sets the current schema_version (`MANIFEST_SCHEMA_VERSION`, 3: from 2 the digest covers the whole manifest,
and 3's schema has the subject) and `provenance.subject`: the model by its public name, the sha256 of the config
that was served or read, the engine and version, the hardware, whether the weights were random, and the run, from
the records of each run (its README, logs and the configs kept beside it; `SUBJECTS` below says where each came
from), or for the H100 packages (`RECORDED`, `RECORDED_FLOORS`) the subject the run itself recorded, kept as it is.
The data files are not touched, so every figure stays what it was: only manifest.json changes, and a telemetry
package's link to its throughput package (summary.json and extra.throughput name the throughput package's digest,
which the new scheme changes). Floor bundles (.tar.gz) are unpacked, rewritten and bundled again. The three
responses packages of evidence-h200-vllm are left as they are (`KEPT`): their model (the tiny random Llama of
../shared/device/make-tiny-llama.py) has no public name, their manifests already pin its files, and the verdict
files beside them (graded/) pin them by their old digest: `audit reproduce` of those verdict files, made before a
grader migration and kept to test it, would refuse a rewritten package.
The claims ledger's pins (`sha256:` of each package) are updated to the new digests.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import re
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit.fileio import dumps_pretty, sha256_bytes, sha256_file, write_atomic  # noqa: E402
from audit.models import MANIFEST_SCHEMA_VERSION, FileEntry, Manifest, Subject  # noqa: E402
from audit.packages import bundle, package_digest, validate_package  # noqa: E402
from audit.packages.write import manifest_json  # noqa: E402

PACKAGES = REPO / "packages"
H200 = "1x NVIDIA H200"
VLLM = ("vllm", "0.26.0")
LLAMA_SHAPE = "c71777653c7799305c5880a7a8325faae10bf0eaaeb98ff13f84d57ec58096b3"
"""config.json of .dev/llama-3.1-8b-shape (scripts/h200_bench_prepare.sh), as h200_bench.log printed it."""
QWEN3_NEXT = "6e477e852d1587fd7f112b9990227bbed407590bb36fe03c6edbad4dcfb0f4a7"
"""evidence-h200-moe/qwen3-next-80b-a3b-fp8.config.json, served by both arms (h200_moe.log printed it): without
the `mtp_num_hidden_layers` and `mtp_use_dedicated_embeddings` of scripts/shapes/qwen3-next-80b-a3b-fp8.config.json."""


def _subject(model: str, config: str | None, run: str, weights: str = "random", hardware: str = H200,
             unknown: str | None = None) -> Subject:
    return Subject(model=model, model_config_sha256=config, model_config_unknown=unknown, engine=VLLM[0],
                   engine_version=VLLM[1], hardware=hardware, weights=weights, run=run)  # type: ignore[arg-type]


_BENCH = _subject("meta-llama/Llama-3.1-8B", LLAMA_SHAPE, "h200-bench-20261201")
_MOE = _subject("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8", QWEN3_NEXT, "h200-moe-20261201")
_TRACE = _subject(
    "meta-llama/Llama-3.1-8B", None, "h200-trace-20261201",
    unknown="scripts/h200_trace.sh built it on the host from the tiny model's config.json (vocabulary 4,096) "
            "with Llama-3.1-8B's published dimensions and kept no copy; the trace holds none")

SUBJECTS: dict[str, Subject] = {
    "evidence-h200-bench/graphs": _BENCH, "evidence-h200-bench/graphs.telemetry": _BENCH,
    "evidence-h200-bench/eager": _BENCH, "evidence-h200-bench/eager.telemetry": _BENCH,
    "evidence-h200-bench/ngram": _BENCH, "evidence-h200-bench/ngram.telemetry": _BENCH,
    "evidence-h200-moe/base": _MOE, "evidence-h200-moe/base.telemetry": _MOE,
    "evidence-h200-moe/mtp": _MOE, "evidence-h200-moe/mtp.telemetry": _MOE,
    # call 5 served the same model folder as the arms (logs/5-server-trace.log: /tmp/audit-moe/models/...)
    "evidence-h200-moe/profile-decode-tp1": _MOE.model_copy(update={"run": "h200-moe-20261201"}),
    "evidence-h200-trace/profile-decode-tp1": _TRACE, "evidence-h200-trace/profile-default-marker": _TRACE,
    # `audit generate` takes no subject flags: its H100 package is named here like the H200 ones
    "evidence-h100-moe/math500-qwen3-30b-a3b-fp8": Subject(
        model="Qwen/Qwen3-30B-A3B-FP8",
        model_config_sha256="70149ee80277f77aeb88e8f52feb432e1b902d879bc7e21bd91aae5600188c81",
        engine="vllm", engine_version="0.26.0", hardware="1x NVIDIA H100 80GB HBM3", weights="random",
        run="h100-20261207-issue32"),
}
"""Every directory package under packages/evidence-* but `KEPT` and `RECORDED`: its subject."""

RECORDED = ("evidence-h100-moe/moe", "evidence-h100-moe/moe.telemetry", "evidence-h100-moe/profile-decode",
            "evidence-h100-moe/profile-all-steps", "evidence-h100-mtp/base", "evidence-h100-mtp/base.telemetry",
            "evidence-h100-mtp/mtp", "evidence-h100-mtp/mtp.telemetry")
"""Directory packages that `audit bench`, `audit telemetry` and `audit trace` wrote on the H100 with the subject
flags (scripts/h100_run.sh): their subject is kept as recorded. (evidence-h100-judge, written at the current
version, is not this script's.)"""

RECORDED_FLOORS = ("evidence-h100-floor/floor-qwen3-30b-a3b-fp8.tar.gz", "evidence-h100-floor/floor-mimo-7b.tar.gz",
                   "evidence-h100-floor/floor-mimo-7b-with-mtp.tar.gz")
"""Floor bundles that `audit floor` wrote on the H100 with the subject flags: their subject is kept as recorded."""

KEPT = ("evidence-h200-vllm/math500-tiny-llama", "evidence-h200-vllm/mmlu_pro-tiny-llama",
        "evidence-h200-vllm/math500-completion-resumed")
"""Left in the old scheme: pinned by the committed verdict files of evidence-h200-vllm/graded (see above)."""

FLOORS: dict[str, tuple[str, str]] = {
    "evidence-h200-floor/floor-llama-3.1-8b.tar.gz": ("meta-llama/Llama-3.1-8B", "h200-floor-20261201"),
    "evidence-h200-floor/floor-qwen3-30b-a3b.tar.gz": ("Qwen/Qwen3-30B-A3B", "h200-floor-20261201"),
    # the published BF16 model with FP8 block experts: its config says so (quantization_config), its sha256 pins it
    "evidence-h200-floor/floor-qwen3-30b-a3b-fp8-experts.tar.gz": ("Qwen/Qwen3-30B-A3B", "h200-floor-20261201"),
    "evidence-h200-floor/floor-deepseek-v3.tar.gz": ("deepseek-ai/DeepSeek-V3", "h200-floor-20261201"),
    "evidence-h200-floor/floor-deepseek-v3-bf16-attention.tar.gz": ("deepseek-ai/DeepSeek-V3", "h200-floor-20261201"),
    "evidence-h200-moe/floor-qwen3-next-80b-a3b-fp8.tar.gz": ("Qwen/Qwen3-Next-80B-A3B-Instruct-FP8",
                                                              "h200-moe-20261201"),
}
"""Every floor bundle: model and run; the config is the bundle's own checkpoint/config.json, the weights
headers-only, the hardware the one whose bandwidth the floor used."""

_MOE_FLOOR_HARDWARE = ("1x NVIDIA H200 (the bandwidth NVML reads there, 4.814 TB/s, given with --hbm-tbps on a CPU: "
                       "the device time was spent)")


def _valid(d: Path, rel: str) -> None:
    problems = validate_package(d)
    if problems:
        raise SystemExit(f"{rel}: {problems[0]}")


def _read_manifest(d: Path) -> Manifest:
    return Manifest.model_validate_json((d / "manifest.json").read_bytes())


def _write_manifest(d: Path, m: Manifest) -> None:
    write_atomic(d / "manifest.json", dumps_pretty(manifest_json(m)))


def _rewritten(m: Manifest, subject: Subject) -> Manifest:
    # A schema 1 manifest's provenance, which its digest does not cover, is set aside by the model and read by
    # nothing; here the maintainer vouches for it, so it is carried into the scheme whose digest covers it.
    base = m.unpinned_provenance or m.provenance
    prov = base.model_copy(update={"model": subject.model, "subject": subject})
    return m.model_copy(update={"schema_version": MANIFEST_SCHEMA_VERSION, "provenance": prov})


def _relink(d: Path, m: Manifest, digest: str) -> Manifest:
    """A telemetry package's link to its (rewritten) throughput package: summary.json and extra.throughput."""
    summary_path = d / "summary.json"
    summary = json.loads(summary_path.read_bytes())
    summary["throughput_digest"] = digest
    data = dumps_pretty(summary).encode()
    summary_path.write_bytes(data)
    files = [f.model_copy(update={"sha256": sha256_bytes(data), "bytes": len(data)}) if f.path == "summary.json"
             else f for f in m.files]
    extra = dict(m.provenance.extra)
    extra["throughput"] = {**extra["throughput"], "digest": digest}
    return m.model_copy(update={"files": [FileEntry.model_validate(f.model_dump(by_alias=True)) for f in files],
                                "provenance": m.provenance.model_copy(update={"extra": extra})})


def _recorded(m: Manifest, rel: str) -> Subject:
    if m.provenance.subject is None:
        raise SystemExit(f"{rel}: manifest.json: provenance.subject: missing (a package the run named)")
    return m.provenance.subject


def rewrite_dirs() -> dict[str, tuple[str, str]]:
    """Rewrite every directory package; returns {relative path: (old digest, new digest)}."""
    changes: dict[str, tuple[str, str]] = {}
    order = sorted([*SUBJECTS, *RECORDED], key=lambda p: p.endswith(".telemetry"))  # throughput before telemetry
    for rel in order:
        d = PACKAGES / rel
        m = _read_manifest(d)
        old = package_digest(m)
        new_m = _rewritten(m, SUBJECTS[rel] if rel in SUBJECTS else _recorded(m, rel))
        if m.kind == "telemetry":
            link = PACKAGES / rel.removesuffix(".telemetry")
            new_m = _relink(d, new_m, package_digest(_read_manifest(link)))
        _write_manifest(d, new_m)
        _valid(d, rel)
        changes[rel] = (old, package_digest(new_m))
    return changes


def _rebundle(pkg: Path, order: list[str], out: Path) -> None:
    """Bundle `pkg` as `audit bundle` does (PAX, mode 0644, zeroed owners and times, gzip mtime 0) but in the
    bundle's own member order: the H200 floor bundles keep manifest.json last, as they were written before
    `audit bundle` put it first (tests/test_attacks_kinds.py reads that layout through them)."""
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for name in order:
            data = (pkg / name).read_bytes()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tf.addfile(info, io.BytesIO(data))
    tmp.replace(out)
    with tempfile.TemporaryDirectory() as check:
        bundle(pkg, Path(check) / "b.tar.gz")  # refuses a package that does not validate


def _floor_subject(rel: str, pkg: Path, m: Manifest) -> Subject:
    if rel not in FLOORS:
        return _recorded(m, rel)
    model, run = FLOORS[rel]
    hardware = _MOE_FLOOR_HARDWARE if "evidence-h200-moe" in rel else (m.provenance.hardware or H200)
    return _subject(model, sha256_file(pkg / "checkpoint" / "config.json")[0], run, weights="headers-only",
                    hardware=hardware)


def _rewrite_bundle(rel: str) -> tuple[str, str]:
    """Unpack a floor bundle, rewrite its manifest, bundle it again in its own member order."""
    tgz = PACKAGES / rel
    with tempfile.TemporaryDirectory() as tmp:
        pkg = Path(tmp) / "pkg"
        with tarfile.open(tgz) as tf:
            tf.extractall(pkg, filter="data")
            order = [t.name for t in tf.getmembers()]
        m = _read_manifest(pkg)
        new_m = _rewritten(m, _floor_subject(rel, pkg, m))
        _write_manifest(pkg, new_m)
        _valid(pkg, rel)
        _rebundle(pkg, order, tgz)
    return package_digest(m), package_digest(new_m)


def rewrite_floors() -> dict[str, tuple[str, str]]:
    return {rel: _rewrite_bundle(rel) for rel in (*FLOORS, *RECORDED_FLOORS)}


def update_ledger(changes: dict[str, tuple[str, str]]) -> int:
    """Replace each rewritten package's old digest by its new one in packages/claims.yaml."""
    path = PACKAGES / "claims.yaml"
    text = path.read_text()
    n = 0
    for rel, (old, new) in changes.items():
        pattern = re.compile(rf"(path: {re.escape(rel)}\n\s+sha256: ){old}")
        text, k = pattern.subn(rf"\g<1>{new}", text)
        n += k
    path.write_text(text)
    return n


def _bundle_manifest(rel: str) -> Manifest:
    with tarfile.open(PACKAGES / rel) as tf:
        member = tf.extractfile("manifest.json")
        assert member is not None
        return Manifest.model_validate_json(member.read())


def check() -> list[str]:
    """Every package this script rewrites that is not at the current version with its subject."""
    current: list[tuple[str, Manifest, Subject | None]] = [
        *((rel, _read_manifest(PACKAGES / rel), SUBJECTS[rel]) for rel in SUBJECTS),
        *((rel, _read_manifest(PACKAGES / rel), None) for rel in RECORDED),
        *((rel, _bundle_manifest(rel), None) for rel in (*FLOORS, *RECORDED_FLOORS))]
    return [rel for rel, m, subject in current
            if m.schema_version != MANIFEST_SCHEMA_VERSION or m.provenance.subject is None
            or (subject is not None and m.provenance.subject != subject)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    if a.check:
        left = check()
        print("\n".join(left) if left else "every evidence package is rewritten")
        return 1 if left else 0
    changes: dict[str, Any] = {**rewrite_dirs(), **rewrite_floors()}
    for rel, (old, new) in changes.items():
        print(f"{rel}: {old[:12]} -> {new[:12]}")
    print(f"claims.yaml: {update_ledger(changes)} pins updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
