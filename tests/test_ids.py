"""Natural order of item ids: how every list of ids is printed (files keep code-point order)."""

from __future__ import annotations

import random

import pytest

from audit.ids import natural_key, natural_order, natural_sorted


@pytest.mark.parametrize("ids,expected", [
    (["q10", "q2", "q1"], ["q1", "q2", "q10"]),
    (["10070", "88", "894", "1053"], ["88", "894", "1053", "10070"]),          # MMLU-Pro question ids
    (["gpqa-010-v2", "gpqa-010-v1", "gpqa-009-v4"], ["gpqa-009-v4", "gpqa-010-v1", "gpqa-010-v2"]),
    (["7", "007", "a", "", "q2"], ["", "007", "7", "a", "q2"]),                  # ties: by the id itself
    (["demo-hle-10", "demo-hle-9", "demo-math-01"], ["demo-hle-9", "demo-hle-10", "demo-math-01"]),
])
def test_natural_sorted(ids, expected):
    assert natural_sorted(ids) == expected


def test_natural_order_sorts_rows_by_id_then_sample_on_both_paths():
    rng = random.Random(7)
    for make in (lambda n: str(n), lambda n: f"q{n}", lambda n: f"{n:05d}"):  # digits, text, leading zeros
        ids = [make(rng.randrange(500)) for _ in range(2000)]
        samples = [rng.randrange(4) for _ in range(2000)]
        assert natural_order(ids, samples) == sorted(range(2000), key=lambda i: (natural_key(ids[i]), samples[i]))
        assert [ids[i] for i in natural_order(ids)] == natural_sorted(ids)
