"""The end of a run: its rows, items and server logs written as one responses package, atomically."""

from __future__ import annotations

import shutil
from pathlib import Path

from audit.generate.config import RunConfig
from audit.generate.journal import RowKey
from audit.generate.plan import RunItems
from audit.generate.state import RunState
from audit.generate.vllm_server import kept_log
from audit.models import Manifest, Provenance, ResponseRow
from audit.packages import PackageWriter


def ordered_rows(done: dict[RowKey, ResponseRow], items: RunItems) -> list[ResponseRow]:
    """The rows in item order, then sample, then attempt (the journal holds them as they finished)."""
    return sorted(done.values(), key=lambda r: (items.index[r.item_id], r.sample, r.attempt))


def write_package(out: Path, work: Path, cfg: RunConfig, state: RunState, prov: Provenance,
                  rows: list[ResponseRow], items: RunItems) -> Manifest:
    """Write the package (responses, the items used, each launched server's log: `KEPT_LOG_BYTES` of it at
    most), then remove the work directory; nothing is left half-written if any step fails."""
    writer = PackageWriter(out, kind="responses", benchmark=cfg.benchmark, provenance=prov,
                           package_id=cfg.package_id, overwrite=state.overwrite)
    try:
        with writer.rows("responses.jsonl", "response_row.v1") as sink:
            for r in rows:
                sink.write(r)
        with writer.rows("items.jsonl", "item_row.v1") as sink:
            for it in items.rows:
                sink.write(it)
        for s in state.sessions:
            rel = (s.launch or {}).get("log")
            if rel and (work / rel).exists():
                writer.add_bytes(rel, kept_log(work / rel))
        manifest = writer.commit()
    except BaseException:
        writer.abort()
        raise
    shutil.rmtree(work, ignore_errors=True)
    return manifest
