#!/usr/bin/env python3
"""Build a small `items` package from the real benchmark files in ../shared/data.

    python scripts/make_items.py math500  ../shared/data/math500/test.jsonl OUT [--first N] [--ids ID,...]
    python scripts/make_items.py mmlu_pro ../shared/data/mmlu_pro/mmlu_pro_test_questions.jsonl OUT --ids 70,883

Item rows: MATH-500 `unique_id` -> item_id, `answer` -> reference, `problem` -> question, `subject`;
MMLU-Pro `question_id` -> item_id, `answer` (letter) -> reference, `options` -> choices,
`category` -> subject, `question`. The dataset file's sha256 is recorded in the manifest.
Items come out in the order the ids are given (or file order for --first).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audit.fileio import sha256_file  # noqa: E402
from audit.models import DatasetRef, Provenance  # noqa: E402
from audit.pack import SourceRow, Table, build_package  # noqa: E402

DATASETS = {
    "math500": ("HuggingFaceH4/MATH-500 (= openai/prm800k prm800k/math_splits/test.jsonl)", "test"),
    "mmlu_pro": ("TIGER-Lab/MMLU-Pro (shared/data 2026-02 snapshot)", "test"),
}


def to_item(benchmark: str, r: dict) -> dict:
    if benchmark == "math500":
        return {"item_id": r["unique_id"], "reference": r["answer"], "question": r["problem"],
                "subject": r["subject"], "extra": {"level": r["level"]}}
    return {"item_id": str(r["question_id"]), "reference": r["answer"], "choices": r["options"],
            "subject": r["category"], "question": r["question"], "extra": {"src": r["src"]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmark", choices=sorted(DATASETS))
    ap.add_argument("source", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--first", type=int)
    ap.add_argument("--ids")
    ap.add_argument("--force", action="store_true")
    args = ap.parse_args()
    rows = [json.loads(line) for line in args.source.read_text(encoding="utf-8").split("\n") if line.strip()]
    items = [to_item(args.benchmark, r) for r in rows]
    if args.ids:
        by_id = {it["item_id"]: it for it in items}
        wanted = args.ids.split(",")
        missing = [i for i in wanted if i not in by_id]
        if missing:
            print(f"make_items: no item {missing[0]!r} in {args.source}", file=sys.stderr)
            return 2
        items = [by_id[i] for i in wanted]
    if args.first:
        items = items[: args.first]
    name, split = DATASETS[args.benchmark]
    prov = Provenance(dataset=DatasetRef(name=name, split=split, sha256=sha256_file(args.source)[0]),
                      source=f"{args.source.name}, selected by scripts/make_items.py")
    src = [SourceRow(str(args.source), i + 1, it) for i, it in enumerate(items)]
    m = build_package(args.out, kind="items", benchmark=args.benchmark, provenance=prov, overwrite=args.force,
                      tables=[Table("items.jsonl", "item_row.v1", src)])
    print(f"wrote {args.out}: {len(items)} {args.benchmark} items ({m.package_id})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
