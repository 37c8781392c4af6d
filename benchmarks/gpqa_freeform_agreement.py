"""Agreement of `choice.freeform` with the third-party extractor of the real GPQA Diamond responses.

    .venv/bin/python benchmarks/gpqa_freeform_agreement.py [--extractor NAME] [--show CATEGORY [--n N]]

Reads ../shared/data/gpqa_diamond_responses/gpqa_diamond_responses.jsonl.gz (kept gzip'd).
Prints agreement and the disagreements by category: counts only. `--show` prints, for
a few rows of one category, the row reference and at most 200 characters around our
evidence (or the response's last 200 characters): never whole responses, and never
into a file.

The source's `source_extracted` is a letter A-D, `E` for "no clear option", or empty.
Our None (rules `none`, `conflict`, `truncated`) is counted as agreeing with `E`/empty.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from audit import extractors  # noqa: E402

DATA = Path(os.environ.get("AUDIT_SHARED_DATA", REPO.parent / "shared" / "data"))
GPQA = DATA / "gpqa_diamond_responses" / "gpqa_diamond_responses.jsonl.gz"


_ANY_LETTER = re.compile(r"(?<![\w\\])\(?[A-D]\)?(?![\w'’/=-])")
_HEDGE = re.compile(r"(?i)closest|nearest|none of|not among|not listed|not match|doesn't match|not exactly|"
                    r"likely|probably|best (?:answer|option|guess|match)|approximat|however|reasonable|assum")


def category(ours, row: dict) -> str | None:
    """None when ours agrees with the source; else a short category name (no text)."""
    source, gold, text = row["source_extracted"], row["gold_letter"], row["response"] or ""
    src = source if source in ("A", "B", "C", "D") else None
    if ours.answer == src:
        return None
    if ours.answer is None:
        if ours.rule == "conflict":
            return "ours conflict (alternatives offered); source picked one"
        if not _ANY_LETTER.search(text):
            return "ours none: the response names no option letter; source matched option text"
        return "ours none: letters present but no answer statement recognised"
    if src is None:
        a = ours.span[0] if ours.span else len(text)
        if _HEDGE.search(text, max(0, a - 400), a + 200):
            return f"ours {ours.rule}: hedged statement (closest/likely/none match); source: no clear option"
        return f"ours {ours.rule}: plain statement; source: no clear option"
    if src == gold:
        return f"ours {ours.rule} letter, source the gold letter (credits option text over the stated letter?)"
    return f"ours {ours.rule} letter, source another non-gold letter"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--extractor", default="choice.freeform")
    ap.add_argument("--show", metavar="CATEGORY", help="print short windows for rows of this category")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--skip", type=int, default=0)
    args = ap.parse_args(argv)
    ex = extractors.get(args.extractor)
    with gzip.open(GPQA, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    cats: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    shown = 0
    for r in rows:
        text = r["response"] or ""
        got = ex.extract(text)
        rules[got.rule] += 1
        cat = category(got, r)
        if cat is None:
            continue
        cats[cat] += 1
        if args.show and cat == args.show:
            shown += 1
            if shown <= args.skip or shown > args.skip + args.n:
                continue
            if got.span:
                a = max(0, got.span[0] - 150)
                window = text[a:a + 200]
            else:
                window = text.rstrip()[-200:]
            print(f"{r['model']} item {r['item_index']} v{r['version']}: ours={got.answer} ({got.rule}) "
                  f"source={r['source_extracted'] or '-'}\n    {window!r}")
    n = len(rows)
    agree = n - sum(cats.values())
    print(f"{ex.key}: agrees with source_extracted on {agree}/{n} = {100 * agree / n:.2f}%")
    print("rules: " + ", ".join(f"{k}={v}" for k, v in rules.most_common()))
    print("disagreements by category:")
    for k, v in cats.most_common():
        print(f"  {v:5d}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
