"""The text a release publishes beside its rows: release.json, README.md, and the dataset card of `--format hf`."""

from __future__ import annotations

import json
from typing import Any

from audit.fileio import dumps_pretty
from audit.release.models import DATA_FILE, ReleaseInfo
from audit.summary import pct
from audit.verdicts import ComponentRef, PackageRef


def info_json(info: ReleaseInfo) -> str:
    """release.json's text (`salt_check` only in releases that had one, `id_context` only with salted ids)."""
    absent = {k for k in ("salt_check", "id_context") if getattr(info, k) is None}
    return dumps_pretty(info.model_dump(mode="json", exclude=absent or None))


def _component(c: ComponentRef | None) -> str:
    return "not recorded (imported)" if c is None else f"`{c.name}@{c.version}` (fingerprint {c.fingerprint[:12]})"


def _package(p: PackageRef | None) -> str:
    return "not recorded" if p is None else f"`{p.package_id}` (digest {p.digest[:12]})"


def render_readme(info: ReleaseInfo) -> str:
    """README.md of a release: provenance and the figures with their intervals (deterministic)."""
    pol = info.policies
    policies = (f"truncation={pol.truncation}, resampling={pol.resampling}, no_answer={pol.no_answer}"
                + (f" (seed {pol.guess_seed})" if pol.no_answer != "wrong" else "")
                + (f", {len(pol.exclude)} ids excluded" if pol.exclude else ""))
    ids = {"dataset": "dataset ids",
           "hmac-sha256": "salted: HMAC-SHA256(salt, id), 32 hex digits; the salt is shared privately",
           "hmac-sha256/release": "salted: HMAC-SHA256(K, id), 32 hex digits, K = HMAC-SHA256(salt, release.json's "
                                  "id_context); the salt is shared privately"}[info.id_scheme]
    lines = [
        f"# Release: {info.benchmark} verdicts", "",
        "Per-item verdicts of one grading. Items marked protected are published with verdict and status only.",
        "Check the files with `audit validate DIR`; with your own copy of the items, run",
        "`audit verify-release DIR --items ITEMS` (see `audit verify-release --help`).", "",
        "| | |", "| --- | --- |",
        f"| benchmark | {info.benchmark} |",
        f"| verdict file | sha256 {info.verdict_file_sha256[:16]} |",
        f"| responses | {_package(info.responses_package)} |",
        f"| items | {_package(info.items_package)} |",
        f"| extractor | {_component(info.extractor)} |",
        f"| grader | {_component(info.grader)} |",
        f"| policies | {policies} |",
        f"| rows | {info.rows:,} ({info.items:,} items, {info.samples:,} samples) |",
        f"| protected items | {info.protected_items:,} |",
        f"| item ids | {ids} |",
        "", "## Figures", "",
        "| figure | value | correct / total | intervals |", "| --- | ---: | ---: | --- |",
    ]
    for f in info.figures:
        ivs = "; ".join(f"{iv.method} [{pct(iv.low)}, {pct(iv.high)}]" for iv in f.intervals) or "none"
        lines.append(f"| {f.name} | {pct(f.value)} | {f.correct:,} / {f.total:,} | {ivs} |")
    lines += ["", "Interval formulas are named in release.json (`figures[].intervals[].formula`).", ""]
    return "\n".join(lines)


def render_card(info: dict[str, Any], readme: str) -> str:
    """README.md of a `--format hf` dataset folder: YAML front matter over the release's own README, byte for byte."""
    # Only fixed text and values of release.json go above the release's own README.
    lines = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train",
             f"    path: {DATA_FILE}", "tags:", "- audit-release", f"- {json.dumps(str(info['benchmark']))}",
             "---", ""]
    return "\n".join(lines) + readme
