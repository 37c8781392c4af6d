"""The fast paths behind `audit grade` give exactly what the plain paths give.

- rows validated through pydantic-core's JSON parser, falling back to the strict reader
  (whose messages are the ones reported) for anything it would refuse;
- objects read through pydantic-core's parser from validated files;
- verdict rows serialised column by column (`encode_rows`) instead of `dumps` per row;
- the Parquet sidecar written from column lists instead of a DataFrame;
- each distinct (answer, reference, options) graded once.
"""

from __future__ import annotations

import gc
import json
import random
from typing import Any

import pandas as pd
import pytest

from audit.fileio import dumps, parse_object
from audit.grade import _grade_all, grade_package
from audit.models import ItemRow, ResponseRow
from audit.packages import validate_package
from audit.packages.fastrow import fast_object, fast_row
from audit.specs import GradeConfig
from audit.verdicts import VERDICT_ROW_FIELDS, encode_rows, write_rows_parquet
from tests.builders import make_package

STRICT_REFUSES = [
    b'{"item_id":"a","response":"x","extra":{"v":NaN}}',
    b'{"item_id":"a","response":"x","extra":{"v":[1,{"w":Infinity}]}}',
    b'{"item_id":"a","response":"x","extra":{"v":-Infinity}}',
    b'{"item_id":"a","response":"x","extra":{"v":1e400}}',
    b'{"item_id":"a","response":"x","started_at":1e400}',
    b'{"item_id":"a","response":"x","first_token_s":' + b"9" * 400 + b".0}",
    b'{"item_id":"a","response":"\\udc00 lone surrogate"}',
    b'{"item_id":"a","item_id":"b","response":"x"}',  # readers disagree on which one counts
    b'{"item_id":"a","response":"x","extra":{"k":1,"k":2}}',
    b'{"item_id":"a","response":"x","respons\\u0065":"y"}',  # the same key, escaped
    b'{"item_id":"a","item_id" \t:"b","response":"x"}',  # the same key, whitespace before its colon
]
STRICT_ACCEPTS_FAST_REFUSES = [
    b'{"item_id":"a","response":"x","extra":{"d":' + b"[" * 300 + b"]" * 300 + b"}}",
]
BOTH_ACCEPT = [
    b'{"item_id":"a","response":"x"}\n',
    b'{"item_id":"a","response":"x"}\r\n',
    b'{"item_id":"\xc3\xa9","response":"\\u00e9\\n\\t\\"q\\"","sample":3,"attempt":1}',
    b'{"item_id":"a","response":null,"excluded":"too long","started_at":5,"finished_at":1.5e300}',
    b'{"item_id":"a","response":"x","seed":1234567890123456789,"extra":{"f":-0.0,"g":[1e-320]}}',
    b'{"item_id" : "a", "response" : "x"}',
]
# The fast row path cannot rule out a repeated key in these (a space before a colon, `\":` inside a
# string): it steps aside for the strict reader, which accepts them.
FAST_ROW_STEPS_ASIDE = [
    b'{"item_id":"a","response":"say \\":\\" here","extra":{"a":{"b":[{"c":1}]}}}',
]


@pytest.mark.parametrize("line", STRICT_REFUSES)
def test_fast_row_never_accepts_what_the_strict_reader_refuses(line):
    obj, err = parse_object(line)
    assert obj is None and (err.startswith("malformed JSON") or "lone surrogate" in err or "duplicate key" in err)
    assert fast_row(ResponseRow, line) is None


@pytest.mark.parametrize("line", STRICT_ACCEPTS_FAST_REFUSES + BOTH_ACCEPT + FAST_ROW_STEPS_ASIDE)
def test_fast_row_and_object_equal_the_strict_reading_or_step_aside(line):
    obj, err = parse_object(line)
    assert err is None
    strict = ResponseRow.model_validate(obj)
    fast = fast_row(ResponseRow, line)
    fast_obj = fast_object(line)
    if line in STRICT_ACCEPTS_FAST_REFUSES:
        assert fast is None and fast_obj is None
    elif line in FAST_ROW_STEPS_ASIDE:
        assert fast is None and fast_obj == obj
    else:
        assert fast == strict and fast_obj == obj
        assert json.dumps(fast_obj) == json.dumps(obj)  # same key order, same floats


def test_bad_rows_report_the_strict_messages(tmp_path):
    pkg = make_package(tmp_path / "p", responses=[{"item_id": "a", "response": "x"}])
    lines = [b'{"item_id":"a","response":"x"}', STRICT_REFUSES[0], STRICT_REFUSES[4],
             b'{"item_id":"b","response":"x","sample":1.0}', b'{"item_id":"a","response":"x"}']
    (pkg / "responses.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    problems = [str(p) for p in validate_package(pkg) if p.row]
    assert problems == [
        "responses.jsonl: row 2: malformed JSON: NaN is not valid JSON",
        "responses.jsonl: row 3: malformed JSON: number 1e400 is out of range",
        "responses.jsonl: row 4: field sample: Input should be a valid integer (got 1.0)",
        "responses.jsonl: row 5: field item_id: duplicate (item_id='a', sample=0, attempt=0); first seen in row 1",
    ]


def test_item_rows_fast_path():
    line = b'{"item_id":"q1","reference":"B","choices":["x","y"],"extra":{"w":0.5}}'
    assert fast_row(ItemRow, line) == ItemRow.model_validate(json.loads(line))
    assert fast_row(ItemRow, b'{"item_id":"q1","reference":"B","extra":{"w":NaN}}') is None


def _random_text(rng: random.Random, surrogates: bool = True) -> str | None:
    if rng.random() < 0.1:
        return None
    alphabet = "abcXYZ 09\"\\/\n\t\r\x00\x1f\x7f é中𝔘\u2028\u2029" + ("\ud800" if surrogates else "")
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))


def _random_columns(n: int, seed: int, surrogates: bool = True) -> dict[str, list]:
    rng = random.Random(seed)

    def text() -> str | None:
        return _random_text(rng, surrogates)

    cols: dict[str, list[Any]] = {k: [] for k in VERDICT_ROW_FIELDS}
    for i in range(n):
        cols["item_id"].append(text() or f"q{i}")
        cols["sample"].append(rng.randrange(0, 300))
        cols["attempt"].append(rng.choice([None, 0, 1, 7, 10**20]))
        cols["response_sha256"].append(rng.choice([None, "%064x" % rng.getrandbits(256)]))
        for k in ("answer", "rule", "verdict", "status", "reason", "reference"):
            cols[k].append(rng.choice([text(), "correct", "A", None]))
        cols["span"].append(rng.choice([None, (3, 9), [0, 12], (), (1, 2, 3), (rng.randrange(10**6), 10**7)]))
        cols["detail"].append(rng.choice([None, {}, {"attempts": [0, 1]},
                                          {"guess": "C", "draw": 2, "seed": 12345, "options": 10},
                                          {"note": text() or "é"}]))
    return cols


def _as_dumped_rows(cols: dict[str, list]) -> list[str]:
    out = []
    for values in zip(*(cols[k] for k in VERDICT_ROW_FIELDS)):
        row = dict(zip(VERDICT_ROW_FIELDS, values))
        row["span"] = None if row["span"] is None else list(row["span"])
        row["detail"] = row["detail"] or {}
        out.append(dumps(row))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_encode_rows_writes_the_bytes_dumps_writes(seed, monkeypatch):
    import audit.verdicts.write as v

    monkeypatch.setattr(v, "_ENCODE_CHUNK", 97)  # many chunks, some with odd columns
    cols = _random_columns(2000, seed)
    assert list(encode_rows(cols)) == _as_dumped_rows(cols)


def test_encode_rows_falls_back_for_unusual_values():
    cols = {k: [None, None] for k in VERDICT_ROW_FIELDS}
    cols.update(item_id=["q1", "q2"], sample=[0, True], attempt=[1.5, 0], answer=[3, "B"], span=[(1.0, 2), None],
                detail=[{"k": float("1e300")}, None], verdict=["correct", "incorrect"], status=["correct", "x"],
                reason=["r", "r"])
    assert list(encode_rows(cols)) == _as_dumped_rows(cols)


def test_sidecar_from_column_lists_equals_the_dataframe_path(tmp_path):
    cols = _random_columns(500, 9, surrogates=False)  # Arrow strings cannot hold lone surrogates
    cols["span"] = [None if s is None or len(s) != 2 else s for s in cols["span"]]
    cols["detail"] = ["{}" if not d else dumps(d) for d in cols["detail"]]
    cols["item_id"] = [f"q{i:04d}" for i in range(500)]  # unique and sorted, as grading writes them
    cols["attempt"] = [a if a is None or a < 2**63 else 3 for a in cols["attempt"]]  # int64 columns
    for k in ("verdict", "status", "reason"):  # required
        cols[k] = [("correct", "incorrect", "ungraded")[i % 3] if k == "verdict" else v or "x"
                   for i, v in enumerate(cols[k])]
    frame = pd.DataFrame({**cols, "span": [None if s is None else list(s) for s in cols["span"]]})
    a = write_rows_parquet(cols, tmp_path / "a.parquet")
    b = write_rows_parquet(frame, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert a.sha256 == b.sha256 and a.rows == 500


class CountingGrader:
    name, version, fingerprint = "count", "1", "c" * 64

    def __init__(self):
        self.calls = []

    def grade(self, answer, reference, *, num_choices=None):
        from audit.graders import Judgment

        self.calls.append((answer, reference, num_choices))
        ok = answer == reference
        return Judgment(ok, "correct" if ok else "incorrect", f"{answer} vs {reference}")


def test_each_distinct_task_is_graded_once_and_results_keep_input_order():
    g = CountingGrader()
    tasks = [("A", "A", 4), ("B", "A", 4), ("A", "A", 4), ("A", "A", 10), ("B", "A", 4)]
    verdicts = _grade_all(g, tasks)
    assert g.calls == [("A", "A", 4), ("B", "A", 4), ("A", "A", 10)]
    assert [v.reason for v in verdicts] == ["A vs A", "B vs A", "A vs A", "A vs A", "B vs A"]


@pytest.mark.parametrize("enabled", [True, False])
def test_grading_leaves_the_garbage_collector_as_it_found_it(tmp_path, enabled):
    pkg = make_package(tmp_path / "p", items=[{"item_id": "q1", "reference": "B", "num_choices": 4}],
                       responses=[{"item_id": "q1", "response": "The answer is (B)."}])
    config = GradeConfig(benchmark="mmlu_pro", extractor="mmlu_pro.official@f418b11", grader="choice@1")
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        grading = grade_package(pkg, config)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert [r["verdict"] for r in grading.iter_rows()] == ["correct"]


def test_duplicate_attempt_across_files_is_refused(tmp_path):
    from audit.errors import AuditError
    from audit.pack import Table, build_package
    from tests.builders import rows_source

    row = {"item_id": "q1", "response": "The answer is (B)."}
    build_package(tmp_path / "p", kind="responses", benchmark="t", tables=[
        Table("a.jsonl", "response_row.v1", rows_source([row])),
        Table("b.jsonl", "response_row.v1", rows_source([row])),
        Table("items.jsonl", "item_row.v1", rows_source([{"item_id": "q1", "reference": "B"}]))])
    config = GradeConfig(benchmark="mmlu_pro", extractor="mmlu_pro.official@f418b11", grader="choice@1")
    with pytest.raises(AuditError) as e:
        grade_package(tmp_path / "p", config)
    assert str(e.value) == (f"{tmp_path / 'p'}/b.jsonl: row 1: field attempt: duplicate (item_id='q1', sample=0, "
                            f"attempt=0): the package holds this response twice")
