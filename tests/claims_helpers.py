"""Copies of the shipped ledger and its packages, for tests that tamper with them."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = REPO / "packages"
LEDGER = PACKAGES / "claims.yaml"
PAGE = PACKAGES / "claims"
SHIPPED_FOLDERS = ("demo-lab-note", "evidence-h200-vllm", "evidence-h200-bench", "evidence-h200-trace",
                   "evidence-h200-floor", "evidence-h200-moe")
"""The folders of packages/ that the shipped ledger reads."""


def copy_shipped(dest: Path) -> Path:
    """Copy packages/claims.yaml and the packages it reads into `dest`; return the copied ledger's path."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in SHIPPED_FOLDERS:
        shutil.copytree(PACKAGES / name, dest / name)
    shutil.copyfile(LEDGER, dest / "claims.yaml")
    return dest / "claims.yaml"


def edit(path: Path, old: str, new: str, count: int = 1) -> None:
    """Replace `old` by `new` in a text file, insisting that `old` occurs exactly `count` times."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == count, (old, text.count(old))
    path.write_text(text.replace(old, new), encoding="utf-8")


MINI = """\
schema_version: 1
title: A small ledger
packages:
  - id: demo-lab-note-gpqa_diamond
    path: demo-lab-note/gpqa_diamond
    sha256: 83d7a2cf406f427206964e8011166b63d113eca09a835927d7e553f4a209e5c4
claims:
  - id: G1
    text: GPQA Diamond accuracy
    value: 50.00
    unit: percent
    status: single-run
    sources: [demo-lab-note-gpqa_diamond]
    recipe:
      name: grade.accuracy
      args: {package: demo-lab-note-gpqa_diamond, benchmark: gpqa_diamond, figure: accuracy_all}
    tolerance: {absolute: 0.005}
"""
"""A one-claim ledger over the demo's GPQA package (written beside a copy of packages/)."""
