"""Item ids in the order people read them: `q2` before `q10` (natural order).

Files keep their rows in code-point order of `item_id` (what readers check and what
reproduces byte for byte); every list printed for people, and the row lists of a diff
report, use this order instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_DIGITS = re.compile(r"(\d+)")


def natural_key(item_id: str) -> tuple[tuple[str | int, ...], str]:
    """Sort key: runs of digits compare as numbers (`q2` < `q10`), ties by the id itself (`q7` < `q07`).

    The split alternates text and digits, text first, so keys compare part by part without mixing types.
    """
    parts = _DIGITS.split(item_id)
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), item_id


def natural_sorted(item_ids: Iterable[str]) -> list[str]:
    """The ids in natural order."""
    return sorted(item_ids, key=natural_key)


def natural_order(item_ids: Sequence[str], samples: Sequence[int] | None = None) -> list[int]:
    """Indices that put (item_id, sample) pairs in natural order of the id, then by sample.

    Each distinct id is keyed once; the rows are then ordered by integer rank (numpy), so
    80,000 changed rows of a million-row diff cost a sort of their distinct ids, not 80,000 tuple keys.
    """
    import numpy as np

    distinct = list(dict.fromkeys(item_ids))
    if all(i.isdigit() and (i == "0" or not i.startswith("0")) for i in distinct):
        ranked = sorted(distinct, key=int)  # plain numbers (MMLU-Pro question ids): no text parts to compare
    else:
        ranked = sorted(distinct, key=natural_key)
    rank_of = {item_id: r for r, item_id in enumerate(ranked)}
    ranks = np.fromiter((rank_of[i] for i in item_ids), dtype=np.int64, count=len(item_ids))
    if samples is None:
        order: list[int] = np.argsort(ranks, kind="stable").tolist()
        return order
    by_sample: list[int] = np.lexsort((np.asarray(samples, dtype=np.int64), ranks)).tolist()
    return by_sample
