"""The importers' readers and expressions: streamed JSON arrays, templates, text-to-type conversion."""

from __future__ import annotations

import io
import json
import random
import shutil

import pytest

from audit.importers import sources
from audit.importers.mapping import Expr, ExprError, coerce
from tests.attacks import attack


def _array_records(data: bytes):
    return [(r.row, r.obj, r.error) for r in sources.iter_json_array(io.BufferedReader(io.BytesIO(data)), "x.json")]


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([0, -7, 12345678901234567890, 3.25, -1e-7])
    if kind == 1:
        return rng.choice([True, False, None])
    if kind in (2, 3):
        return "".join(rng.choice('ab ,]}[{"\\\n\té€😀') for _ in range(rng.randrange(12)))
    if kind == 4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": _random_value(rng, depth + 1) for i in range(rng.randrange(4))}


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 1 << 20])
def test_json_array_matches_json_loads_at_any_chunk_size(monkeypatch, chunk):
    # Elements, escapes and multi-byte characters cut at every possible read boundary.
    monkeypatch.setattr(sources, "_CHUNK", chunk)
    rng = random.Random(chunk)
    for _ in range(30):
        items = [{"question_id": i, "v": _random_value(rng)} for i in range(rng.randrange(6))]
        indent = rng.choice([None, 1, 2])
        data = json.dumps(items, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
        assert _array_records(data) == [(i + 1, obj, None) for i, obj in enumerate(items)]


def test_json_array_problems_end_the_stream():
    assert _array_records(b'[{"a": 1}, 5, {"b": 2}]') == [
        (1, {"a": 1}, None), (2, None, "expected a JSON object, found int"), (3, {"b": 2}, None)]
    assert _array_records(b'[{"a": 1} {"b": 2}]') == [
        (1, {"a": 1}, None), (1, None, "malformed JSON: expected ',' or ']' after the element")]
    assert _array_records(b'[{"a": 1}, {"b": ') == [
        (1, {"a": 1}, None), (2, None, "malformed JSON: Expecting value")]
    assert _array_records(b'[{"a": NaN}]') == [(1, None, "malformed JSON: NaN is not valid JSON")]
    assert _array_records(b'[{"a": 1}] [') == [(1, {"a": 1}, None),
                                                (1, None, "malformed JSON: data after the closing ']'")]
    assert _array_records(b'{"a": 1}') == [(0, None, "expected a JSON array")]
    assert _array_records(b" [ ] ") == []
    assert _array_records(b'[{"a": "caf\xe9"}]') == [
        (0, None, "not valid UTF-8 near element 1: invalid continuation byte")]


def test_json_array_element_size_is_bounded(monkeypatch):
    monkeypatch.setattr(sources, "_CHUNK", 1024)
    data = b'[{"a": "' + b"x" * 50_000 + b'"}]'
    got = [(r.row, r.error) for r in sources.iter_json_array(io.BufferedReader(io.BytesIO(data)), "x.json",
                                                              max_element_bytes=10_000)]
    assert got == [(1, "element is over the 10,000-byte limit")]


def test_templates():
    rec = {"item_index": 7, "version": "2", "doc": {"question_id": 84}, "n": None}
    assert Expr("gpqa-{item_index:03d}-v{version}")(rec) == "gpqa-007-v2"
    assert Expr("{doc[question_id]}")(rec) == "84"
    assert Expr("{version:0>3}")(rec) == "002"
    assert Expr("{version:03d}")(rec) == "002"  # text that is a number formats as one (CSV cells)
    assert Expr("doc")(rec) == {"question_id": 84}
    for text, message in [("{missing}", "template '{missing}' refers to missing column 'missing'"),
                          ("{n}", "template field {n} is null"),
                          ("{doc[nope]}", "template '{doc[nope]}': missing key 'nope'"),
                          ("{item_index:xyz}", "template '{item_index:xyz}': Invalid format specifier 'xyz' "
                                               "for object of type 'int'"),
                          ("missing", "refers to missing column 'missing'")]:
        with pytest.raises(ExprError) as e:
            Expr(text)(rec)
        assert str(e.value) == message
    for bad in ["{}", "{0}", "{a.b}", "{a[0].real}", "{a:{b}}", "{a", ""]:
        with pytest.raises(ValueError):
            Expr(bad)


@pytest.mark.parametrize("value,accepts,kw,want", [
    ("7", (int,), {}, 7), (" 7 ", (int, type(None)), {}, 7), ("007", (int,), {}, 7), ("7.0", (int,), {}, "7.0"),
    ("", (int, type(None)), {}, None), ("", (str, type(None)), {}, ""), ("true", (bool,), {}, True),
    ("False", (bool,), {}, False), ("1", (bool,), {}, "1"), ("2.5", (float, type(None)), {}, 2.5),
    ("inf", (float,), {}, "inf"), (3, (float, type(None)), {}, 3.0), (True, (float,), {}, True),
    (84, (str,), {"int_to_text": True}, "84"), (84, (str, type(None)), {}, 84), (True, (str,), {"int_to_text": True}, True),
    ('["a","b"]', (list, type(None)), {}, ["a", "b"]), ("[oops", (list, type(None)), {}, "[oops"),
])
def test_coerce(value, accepts, kw, want):
    got = coerce(value, accepts, **kw)
    assert got == want and type(got) is type(want)


# --------------------------------------------------------------------------- a pinned source: the bytes parsed are
# the bytes hashed (sources.CHANGED otherwise), whenever the file is replaced or rewritten after its pin

ROWS = [{"item_id": f"q{i}", "response": f"The answer is ({'ABCD'[i % 4]})"} for i in range(6)]


def _formats(rows: list[dict]) -> dict[str, bytes]:
    """The same rows in every format the record readers take, each file's bytes by its suffix."""
    import gzip
    import zipfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = "".join(json.dumps(r) + "\n" for r in rows).encode()
    csv = ("item_id,response\n" + "".join(f"{r['item_id']},{r['response']}\n" for r in rows)).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("results.json", json.dumps(rows))
    pbuf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), pbuf)
    return {".jsonl": jsonl, ".json": json.dumps(rows).encode(), ".jsonl.gz": gzip.compress(jsonl, mtime=0),
            ".csv": csv, ".csv.gz": gzip.compress(csv, mtime=0), ".zip": buf.getvalue(), ".parquet": pbuf.getvalue()}


SUFFIXES = list(_formats(ROWS))


def _pinned(tmp_path, suffix: str, rows: list[dict] = ROWS) -> sources.SourceFile:
    path = tmp_path / f"rows{suffix}"
    path.write_bytes(_formats(rows)[suffix])
    return sources.source_file(path, sources.TABLE_SUFFIXES)


def _objs(src) -> list[dict]:
    out = []
    for rec in sources.iter_table_records(src):
        assert rec.error is None, rec.error
        out.append(rec.obj)
    return out


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_pinned_file_as_it_was_hashed_reads_in_every_format(tmp_path, suffix):
    src = _pinned(tmp_path, suffix)
    assert _objs(src) == ROWS
    assert _objs(src) == ROWS  # every read checked, every read passes
    assert _objs(src.path) == ROWS  # unpinned (a format guessed from the first rows): read, not checked


@pytest.mark.parametrize("same_size", [True, False], ids=["same-size", "other-size"])
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_file_replaced_after_its_pin_is_refused_in_every_format(tmp_path, suffix, same_size):
    from audit.errors import AuditError
    from tests.attack_tools import replace_file

    src = _pinned(tmp_path, suffix)
    other = ROWS[::-1] if same_size else ROWS[:3]  # reversed: as many bytes (uncompressed), other rows
    replace_file(src.path, _formats(other)[suffix])
    with pytest.raises(AuditError) as e:
        _objs(src)
    assert str(e.value) == f"{src.path}: the file changed since it was hashed: run again"


def test_each_read_of_a_pinned_file_is_checked(tmp_path):
    from audit.errors import AuditError
    from tests.attack_tools import replace_file

    src = _pinned(tmp_path, ".jsonl")
    assert _objs(src) == ROWS  # the first table
    replace_file(src.path, _formats(ROWS[::-1])[".jsonl"])
    with pytest.raises(AuditError, match="the file changed since it was hashed: run again"):
        _objs(src)  # the second


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".csv"])
def test_a_file_rewritten_in_place_while_it_is_read_is_refused_when_the_read_ends(tmp_path, suffix):
    """Not a swap (the open file is the same one): its last bytes change after the first records were read, past
    the reader's buffer. The records already handed out were the pinned file's; the end of the read refuses."""
    from audit.errors import AuditError

    # ~6 MB in 20,000 rows: past the 1 MiB buffer, and pandas' 8,192-row chunks
    rows = [{"item_id": f"q{i}", "response": "x" * 300} for i in range(20_000)]
    src = _pinned(tmp_path, suffix, rows)
    records = sources.iter_table_records(src)
    assert next(records).obj == rows[0]
    with open(src.path, "r+b") as f:
        f.seek(-10, 2)
        f.write(b"y" * 5)
    with pytest.raises(AuditError, match="the file changed since it was hashed: run again"):
        list(records)


def test_a_pinned_file_swapped_for_a_damaged_one_says_it_changed_not_where_it_is_damaged(tmp_path):
    from audit.errors import AuditError
    from tests.attack_tools import replace_file

    src = _pinned(tmp_path, ".json")
    data = src.path.read_bytes()
    replace_file(src.path, data[: len(data) // 2] + b" " * (len(data) - len(data) // 2))  # cut, padded to size
    records = sources.iter_table_records(src)
    got = [next(records).obj for _ in range(2)]
    assert got == ROWS[:2]
    with pytest.raises(AuditError, match="the file changed since it was hashed: run again"):
        list(records)  # not "row 4: malformed JSON"


def test_an_early_stop_is_not_a_change(tmp_path):
    """A reader that stops after a few records (a format sniff) is closed without a check, and raises nothing."""
    src = _pinned(tmp_path, ".jsonl")
    src.path.write_bytes(_formats(ROWS[::-1])[".jsonl"])
    records = sources.iter_table_records(src)
    next(records)
    records.close()


# --------------------------------------------------------------------------- the same, through the importers' CLI


def _mmlu_pro_records(n: int = 6) -> list[dict]:
    return [{"question_id": i, "question": f"q{i}?", "options": ["w", "x", "y", "z"], "answer": "ABCD"[i % 4],
             "answer_index": i % 4, "category": "math", "src": "t", "pred": "ABCD"[(i + 1) % 4],
             "model_outputs": f"The answer is ({'ABCD'[(i + 1) % 4]})"} for i in range(n)]


def _verdict_rows(n: int = 6) -> list[dict]:
    return [{"item_id": f"q{i}", "answer": "ABCD"[i % 4], "correct": i % 2 == 0} for i in range(n)]


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _csv(rows: list[dict]) -> bytes:
    cols = list(rows[0])
    return (",".join(cols) + "\n" + "".join(",".join(str(r[c]) for c in cols) + "\n" for r in rows)).encode()


def _lm_eval_samples() -> bytes:
    from tests.conftest import REPO

    folder = REPO / "tests" / "data" / "lm_eval" / "sshleifer__tiny-gpt2"
    return next(folder.glob("samples_copa_*.jsonl")).read_bytes()


def _reversed_lines(data: bytes) -> bytes:
    return b"".join(data.splitlines(keepends=True)[::-1])  # as many bytes, other records in other rows


# (command after `audit import`, the module whose source_file pins, the file name, its bytes, the swapped bytes)
_CASES = {
    "mmlu-pro-json": (["mmlu-pro"], "mmlu_pro", "math_result.json", json.dumps(_mmlu_pro_records()).encode(),
                      json.dumps(_mmlu_pro_records()[::-1]).encode()),
    "mmlu-pro-jsonl": (["mmlu-pro"], "mmlu_pro", "math_result.jsonl", _jsonl(_mmlu_pro_records()),
                       _jsonl(_mmlu_pro_records(3))),
    "lm-eval-jsonl": (["lm-eval", "--benchmark", "selected_choice"], "lm_eval", "samples_copa.jsonl", None, None),
    "table-jsonl": (["table", "--kind", "responses"], "table", "rows.jsonl", _jsonl(ROWS), _jsonl(ROWS[::-1])),
    "verdicts-jsonl": (["verdicts", "--benchmark", "mmlu_pro", "--tool", "lab"], "verdicts", "lab.jsonl",
                       _jsonl(_verdict_rows()), _jsonl(_verdict_rows()[::-1])),
    "table-csv": (["table", "--kind", "responses"], "table", "rows.csv", _csv(ROWS), _csv(ROWS[::-1])),
    "verdicts-csv-gz": (["verdicts", "--benchmark", "mmlu_pro", "--tool", "lab"], "verdicts", "lab.csv.gz",
                        None, None),
    "mmlu-pro-zip": (["mmlu-pro"], "mmlu_pro", "model_outputs_run.zip", None, None),
    "table-parquet": (["table", "--kind", "responses"], "table", "rows.parquet", _formats(ROWS)[".parquet"],
                      _formats(ROWS[::-1])[".parquet"]),
}


def _case(name: str) -> tuple[list[str], object, str, bytes, bytes]:
    import gzip
    import importlib
    import zipfile

    args, module, file, data, swapped = _CASES[name]
    if name == "lm-eval-jsonl":
        data = _lm_eval_samples()
        swapped = _reversed_lines(data)
    elif name == "verdicts-csv-gz":
        data = gzip.compress(_csv(_verdict_rows()), mtime=0)
        swapped = gzip.compress(_csv(_verdict_rows()[::-1]), mtime=0)
    elif name == "mmlu-pro-zip":
        def zipped(records: list[dict]) -> bytes:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                zf.writestr("model_outputs_run.json", json.dumps(records))
            return buf.getvalue()

        data, swapped = zipped(_mmlu_pro_records()), zipped(_mmlu_pro_records()[::-1])
    assert data is not None and swapped is not None and data != swapped
    return args, importlib.import_module(f"audit.importers.{module}"), file, data, swapped


def _refused_and_nothing_written(r, here, file: str, *outs: str) -> None:
    assert (r.code, r.out) == (2, ""), r.err
    assert r.err == f"audit: error: {file}: the file changed since it was hashed: run again\n"
    left = sorted(p.name for p in here.iterdir() if p.name.startswith(".") or p.name in outs)
    assert left == [], left


def _out_args(args: list[str]) -> tuple[list[str], str]:
    if args[0] == "verdicts":
        return ["-o", "out.json"], "out.json"
    return ["-o", "pkg"], "pkg"


@attack("import.jsonl-swap")
@pytest.mark.parametrize("case", ["mmlu-pro-json", "mmlu-pro-jsonl", "lm-eval-jsonl", "table-jsonl",
                                  "verdicts-jsonl"])
def test_a_json_source_replaced_after_its_hash_is_refused_and_nothing_is_written(cli, here, monkeypatch, case):
    """Each importer parses the bytes it pinned by sha256, or refuses: the file swapped between the hash and the
    read (as many bytes, other records; or fewer bytes) is never imported under the old file's digest."""
    from tests.attack_tools import swap_after_hash

    args, module, file, data, swapped = _case(case)
    (here / file).write_bytes(data)
    out, name = _out_args(args)
    r = cli("import", *args, file, *out)
    assert r.code == 0, r.err  # the file as it is imports
    if name.endswith(".json"):
        (here / name).unlink()
    else:
        shutil.rmtree(here / name)
    swap_after_hash(monkeypatch, module, here / file, swapped)
    _refused_and_nothing_written(cli("import", *args, file, *out), here, file, name)


@attack("import.csv-swap")
@pytest.mark.parametrize("case", ["table-csv", "verdicts-csv-gz"])
def test_a_csv_source_replaced_after_its_hash_is_refused_and_nothing_is_written(cli, here, monkeypatch, case):
    from tests.attack_tools import swap_after_hash

    args, module, file, data, swapped = _case(case)
    (here / file).write_bytes(data)
    out, name = _out_args(args)
    swap_after_hash(monkeypatch, module, here / file, swapped)
    _refused_and_nothing_written(cli("import", *args, file, *out), here, file, name)


def _swapped_whole_file(cli, here, monkeypatch, case: str) -> None:
    """A source read whole (zip, Parquet) replaced after its hash: refused, nothing written."""
    from tests.attack_tools import swap_after_hash

    args, module, file, data, swapped = _case(case)
    (here / file).write_bytes(data)
    swap_after_hash(monkeypatch, module, here / file, swapped)
    _refused_and_nothing_written(cli("import", *args, file, "-o", "pkg"), here, file, "pkg")


@attack("import.zip-swap")
def test_a_zip_source_replaced_after_its_hash_is_refused_and_nothing_is_written(cli, here, monkeypatch):
    _swapped_whole_file(cli, here, monkeypatch, "mmlu-pro-zip")


@attack("import.table-parquet-swap")
def test_a_parquet_table_replaced_after_its_hash_is_refused_by_import_table(cli, here, monkeypatch):
    _swapped_whole_file(cli, here, monkeypatch, "table-parquet")


@attack("import.recorded-swap")
@pytest.mark.parametrize("case,recorded,read", [
    ("mmlu-pro-json", True, 2),  # after the --recorded verdicts were read, before the responses
    ("mmlu-pro-json", True, 3),  # before the items
    ("mmlu-pro-zip", False, 2),  # between the responses and the items tables
    ("lm-eval-jsonl", True, 2),
    ("lm-eval-jsonl", False, 2),
])
def test_a_source_replaced_between_two_reads_of_one_import_is_refused(cli, here, monkeypatch, case, recorded, read):
    """An import reads its file once per table (responses, items) and once more for --recorded: every read is
    checked against the one pin, so the verdicts and the packages cannot come from two files under one digest."""
    from tests.attack_tools import swap_before_read

    args, module, file, data, swapped = _case(case)
    (here / file).write_bytes(data)
    reader = "iter_table_records" if module.__name__.endswith("mmlu_pro") else "iter_json_records"
    swap_before_read(monkeypatch, module, reader, here / file, swapped, read=read)
    extra = ["--recorded", "rec.json"] if recorded else []
    _refused_and_nothing_written(cli("import", *args, file, "-o", "pkg", *extra), here, file, "pkg", "rec.json")
