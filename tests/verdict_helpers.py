"""Build verdict files in tests from plain row dicts (until `audit grade` writes them).

    vf = make_verdict_file([{"item_id": "q1", "sample": 0, "verdict": "correct", "answer": "B"}, ...],
                           extractor=component("mmlu_pro.lmeval", "1"))
    write_verdict_file(tmp_path / "old.json", vf)

Rows need `item_id`, `sample` and `verdict`; `status` defaults to the verdict
(`excluded` for ungraded rows), `reason` to a short text, `attempt` to 0. The
summary is computed from the rows with `audit.summary.summarize`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from audit.models import Producer
from audit.summary import summarize
from audit.verdicts import ComponentRef, PackageRef, Policies, VerdictFile, VerdictRow, dump_verdict_file, \
    items_section_sha256, write_rows_parquet
from audit.fileio import dumps

DIGEST_A = "a" * 64
DIGEST_B = "b" * 64


def component(name: str, version: str, fingerprint: str | None = None) -> ComponentRef:
    """A ComponentRef with a fingerprint derived from name and version unless given."""
    import hashlib

    fp = fingerprint or hashlib.sha256(f"{name}@{version}".encode()).hexdigest()
    return ComponentRef(name=name, version=version, fingerprint=fp)


def package(digest: str = DIGEST_A, package_id: str = "responses-test", path: str | None = None) -> PackageRef:
    return PackageRef(package_id=package_id, digest=digest, path=path)


def make_row(d: dict[str, Any]) -> VerdictRow:
    verdict = d["verdict"]
    status = d.get("status", verdict if verdict != "ungraded" else "excluded")
    row = {"attempt": 0, "answer": None, "rule": None, "status": status, "reason": f"test row: {status}", **d}
    return VerdictRow.model_validate(row)


def rows_frame(rows: list[VerdictRow]) -> pd.DataFrame:
    return pd.DataFrame([r.model_dump(mode="json") for r in rows],
                        columns=list(VerdictRow.model_fields))


def make_verdict_file(rows: list[dict[str, Any]], **header: Any) -> VerdictFile:
    """A valid VerdictFile from row dicts; header fields (benchmark, extractor, ...) may be overridden."""
    models = sorted((make_row(d) for d in rows), key=lambda r: (r.item_id, r.sample))
    df = rows_frame(models)
    fields: dict[str, Any] = {
        "benchmark": "test",
        "responses_package": package(),
        "extractor": component("test.extractor", "1"),
        "grader": component("test.grader", "1"),
        "producer": Producer(version="0.0.0+test"),
        "policies": Policies(),
        "summary": summarize(df),
    }
    fields.update(header)
    return VerdictFile(items=models, **fields)


def write_verdict_file(path: str | Path, vf: VerdictFile, *, parquet: bool = False) -> Path:
    """Write `vf` as `dump_verdict_file` does; with `parquet`, also the sidecar named in `rows_file`."""
    p = Path(path)
    if parquet:
        ref = write_rows_parquet(rows_frame(vf.items), p.with_suffix(".rows.parquet"))
        pin = items_section_sha256(dumps(r.model_dump(mode="json")) for r in vf.items)
        vf = vf.model_copy(update={"rows_file": ref.model_copy(update={"json_rows_sha256": pin})})
    p.write_text(dump_verdict_file(vf), encoding="utf-8")
    return p
