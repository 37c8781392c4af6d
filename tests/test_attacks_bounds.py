"""Attacks on the bounds of reading (issue 19): gzip and Parquet data files that expand past any
sensible size, and inputs read through the same readers. See tests/attacks.py.

Bombs are small here (megabytes on disk, built in about a second); benchmarks/attack_bombs.py runs
them at the size the issue names.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib

import pytest

from audit.errors import AuditError
from audit.fileio import GzipBound, jsonl_source, open_binary
from audit.models import FileEntry, ResponseRow
from audit.packages.layout import PinnedRead
from tests.attack_tools import MIB, ROW, audit_jailed, gzip_repeated, write_package
from tests.attacks import attack


def _one_member(chunk: bytes, copies: int) -> bytes:
    """One gzip member (not repeated members) decompressing to chunk * copies."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(z.compress(chunk) for _ in range(copies)), z.flush()])


def _entry(path: str, data: bytes, rows: int | None = None) -> FileEntry:
    import hashlib

    return FileEntry(path=path, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data), rows=rows,
                     schema="response_row.v1")


# --------------------------------------------------------------------------- gzip


@pytest.mark.slow
@attack("pkg.gz-long-line")
def test_a_gz_of_one_endless_line_stops_at_the_line_limit(tmp_path):
    data = gzip_repeated(b"x" * MIB, 8192)  # one 8 GiB line (the issue's: 48 GiB), a few MB on disk
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl.gz": data}, rows={"responses.jsonl.gz": 1})
    r = audit_jailed("validate", pkg, timeout=20)  # skipping the line decompressed all 8 GiB of it
    assert r.returncode == 1, r.stderr
    assert (f"{pkg}/responses.jsonl.gz: line 1: line is over the 67,108,864-byte limit (decompressed); "
            "reading stopped there") in r.stdout
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.slow
@attack("pkg.gz-long-line")
def test_a_one_member_gz_run_without_newlines_stops_at_the_line_limit(tmp_path):
    data = _one_member(b"x" * MIB, 96)  # one member, 96 MiB of one line
    (tmp_path / "r.jsonl.gz").write_bytes(data)
    reader = PinnedRead(tmp_path, _entry("r.jsonl.gz", data, rows=1))
    items = list(reader)
    assert items == []
    assert reader.problems == [("line 1: line is over the 67,108,864-byte limit (decompressed); reading stopped "
                                "there", None)]
    assert reader.stopped and reader.sha256 == _entry("r.jsonl.gz", data).sha256  # the rest is still hashed


@pytest.mark.slow
@attack("pkg.gz-ratio")
def test_a_gz_expanding_past_its_ratio_stops_whatever_the_manifest_says(tmp_path):
    chunk = ROW * (MIB // len(ROW))
    data = gzip_repeated(chunk, 1024)  # 1 GiB of valid rows in a few MB
    pkg = write_package(tmp_path / "pkg", {"responses.jsonl.gz": data}, rows={"responses.jsonl.gz": 10**9})
    setup = "import audit.fileio as j; j.MAX_GZIP_RATIO = 1; j.MAX_LINE_BYTES = 1 << 20"  # (the line floor too)
    r = audit_jailed("validate", pkg, setup=setup, timeout=30)
    assert r.returncode == 1, r.stderr
    assert (f"{pkg}/responses.jsonl.gz: line ") in r.stdout
    assert (f"decompresses to more than {len(data):,} bytes, the most this file may expand to (at most 1 times its "
            f"size, 17,179,869,184 bytes in all); reading stopped there") in r.stdout
    assert "Traceback" not in r.stderr


@attack("pkg.gz-ratio")
def test_the_absolute_gzip_cap_holds_for_a_large_file(tmp_path):
    data = gzip.compress(ROW * 3000, mtime=0)
    (tmp_path / "r.jsonl.gz").write_bytes(data)
    import audit.fileio as j

    old = j.MAX_GZIP_BYTES, j.MAX_LINE_BYTES
    try:
        j.MAX_GZIP_BYTES, j.MAX_LINE_BYTES = 10_000, 1000
        reader = PinnedRead(tmp_path, _entry("r.jsonl.gz", data, rows=3000))
        n = sum(1 for _ in reader)
    finally:
        j.MAX_GZIP_BYTES, j.MAX_LINE_BYTES = old
    assert n == 10_000 // len(ROW)
    assert reader.stopped and "decompresses to more than 10,000 bytes" in reader.problems[0][0]


@pytest.mark.slow
@attack("pkg.gz-input")
def test_gz_inputs_are_bounded_too(tmp_path):
    p = tmp_path / "in.jsonl.gz"
    p.write_bytes(gzip_repeated(b"x" * MIB, 1024))
    with pytest.raises(AuditError, match=r"in.jsonl.gz: row 1: line is over the 67,108,864-byte limit "
                                         r"\(decompressed\)"):
        list(jsonl_source(p))
    # Every other reader of a .gz input (importers, judge files) goes through open_binary: bounded by ratio.
    p.write_bytes(gzip_repeated(b"\n" * MIB, 1024))
    with open_binary(p) as fh, pytest.raises(GzipBound, match="decompresses to more than"):
        while fh.read(MIB):
            pass


@attack("pkg.gz-input")
@pytest.mark.parametrize("chunk, copies, message", [
    (b"\n" * MIB, 8192, "more than 1,000,000 blank lines; reading stopped there"),  # 8 GiB of newlines
    (ROW * (MIB // len(ROW)), 2048, "decompresses to more than"),  # 2 GiB of rows, past 1 x its size
])
@pytest.mark.slow
def test_import_of_a_gz_bomb_stops_with_one_line(tmp_path, chunk, copies, message):
    p = tmp_path / "in.jsonl.gz"
    p.write_bytes(gzip_repeated(chunk, copies))
    setup = "import audit.fileio as j; j.MAX_GZIP_RATIO = 1; j.MAX_LINE_BYTES = 1 << 20"
    r = audit_jailed("import", "table", "--kind", "responses", "--dedupe", p, "-o", tmp_path / "out", setup=setup,
                     timeout=30)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert message in r.stderr and r.stderr.count("\n") == 1, r.stderr


# --------------------------------------------------------------------------- Parquet


def _parquet(table, **kw) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    return buf.getvalue()


@pytest.mark.slow
@attack("pkg.parquet-huge-value")
def test_a_small_parquet_file_holding_one_huge_value_is_refused_unread(tmp_path):
    import pyarrow as pa

    data = _parquet(pa.table({"item_id": ["q1"], "response": ["x" * (80 * MIB)]}), compression="zstd")
    assert len(data) < 16 * 1024
    pkg = write_package(tmp_path / "pkg", {"responses.parquet": data}, rows={"responses.parquet": 1})
    # Decoded, 80 MiB take 300+ MB to validate: the footer alone refuses it, in bounded memory.
    setup = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))"
    r = audit_jailed("validate", pkg, setup=setup, timeout=30)
    assert r.returncode == 1, r.stderr
    assert (f"{pkg}/responses.parquet: decodes to more than 67,108,864 bytes (its footer says), the most a "
            f"{len(data):,}-byte file may expand to") in r.stdout
    assert "Traceback" not in r.stderr


@attack("pkg.parquet-huge-value")
def test_the_parquet_bound_reads_the_footer_only(tmp_path):
    import pyarrow as pa

    data = _parquet(pa.table({"item_id": ["q1"], "response": ["x" * (80 * MIB)]}), compression="zstd")
    (tmp_path / "r.parquet").write_bytes(data)
    before = pa.total_allocated_bytes()
    reader = PinnedRead(tmp_path, _entry("r.parquet", data, rows=1))
    assert list(reader) == [] and reader.stopped
    assert pa.total_allocated_bytes() - before < MIB


@attack("pkg.parquet-shape")
@pytest.mark.parametrize("shape, message", [
    ("row_groups", "has 10,001 row groups, more than the 10,000 read"),
    ("columns", "has 600 columns, more than the 512 read"),
    ("nesting", "is nested deeper than 16 levels"),
])
def test_parquet_files_of_absurd_shape_are_refused_from_the_footer(tmp_path, shape, message):
    import pyarrow as pa

    if shape == "row_groups":
        data = _parquet(pa.table({"item_id": [f"q{i}" for i in range(10_001)]}), row_group_size=1)
    elif shape == "columns":
        data = _parquet(pa.table({f"c{i}": [1] for i in range(600)}))
    else:
        value, typ = 1, pa.int64()
        for _ in range(20):
            value, typ = [value], pa.list_(typ)
        data = _parquet(pa.table({"item_id": ["q1"], "deep": pa.array([value], type=typ)}))
    (tmp_path / "r.parquet").write_bytes(data)
    reader = PinnedRead(tmp_path, _entry("r.parquet", data, rows=10_001))
    assert list(reader) == [] and reader.stopped
    assert message in reader.problems[0][0]


@pytest.mark.slow
@attack("pkg.parquet-huge-value")
def test_one_value_repeated_through_a_parquet_dictionary_is_counted_decoded(tmp_path):
    import pyarrow as pa

    value = "x" * MIB
    data = _parquet(pa.table({"item_id": [f"q{i}" for i in range(2000)],
                              "response": pa.array([value] * 2000).dictionary_encode()}), compression="zstd")
    assert len(data) < 32 * 1024  # 2 GiB decoded
    (tmp_path / "r.parquet").write_bytes(data)
    before = pa.total_allocated_bytes()
    reader = PinnedRead(tmp_path, _entry("r.parquet", data, rows=2000))
    assert list(reader) == [] and reader.stopped
    assert reader.problems == [(f"decodes to more than 67,108,864 bytes by row 2,000, the most a {len(data):,}-byte "
                                "file may expand to", None)]
    assert pa.total_allocated_bytes() - before < 16 * MIB


@attack("pkg.parquet-huge-value")
def test_a_parquet_value_over_the_row_limit_is_refused_before_it_is_decoded(tmp_path):
    import pyarrow as pa

    import audit.fileio as j

    rows = [{"item_id": "q1", "response": "x" * (70 * MIB)}]
    data = _parquet(pa.Table.from_pylist(rows))  # (uncompressed: the file is as large as its value)
    (tmp_path / "r.parquet").write_bytes(data)
    reader = PinnedRead(tmp_path, _entry("r.parquet", data, rows=1))
    assert list(reader) == [] and reader.stopped
    assert reader.problems == [(f"rows 1 to 1 hold a value of {70 * MIB:,} bytes, over the {j.MAX_LINE_BYTES:,}-byte "
                                "limit for a row", None)]


@pytest.mark.slow
def test_a_valid_parquet_package_reads_the_same_rows(tmp_path):
    from audit.pack import Table, build_package
    from audit.packages import open_package
    from tests.builders import rows_source

    rows = [{"item_id": f"q{i}", "response": "The answer is (B)." if i % 2 else None, "finish_reason": "stop",
             "extra": {"k": [1, 2]}} for i in range(20_000)]
    build_package(tmp_path / "p", kind="responses",
                  tables=[Table("responses.parquet", "response_row.v1", rows_source(rows, "r"))])
    with open_package(tmp_path / "p", kind="responses") as pkg:
        got = list(pkg.iter_rows("response_row.v1"))
    assert got == [ResponseRow.model_validate(r) for r in rows]


@pytest.mark.slow
@attack("pkg.parquet-huge-value")
def test_the_page_headers_bound_the_size_when_the_footer_understates_it():
    """The reader sizes its buffers by the page headers: they are read too (a forged footer could say 1 byte)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from audit.packages.parquet import parquet_pages_problem

    data = _parquet(pa.table({"item_id": ["q1"], "response": ["x" * (80 * MIB)]}), compression="zstd")
    md = pq.ParquetFile(io.BytesIO(data)).metadata
    assert parquet_pages_problem(md, memoryview(data)) == (
        f"decodes to more than 67,108,864 bytes (its page headers say), the most a {len(data):,}-byte file may "
        "expand to")
    small = _parquet(pa.table({"item_id": [f"q{i}" for i in range(50_000)]}), row_group_size=10_000)
    assert parquet_pages_problem(pq.ParquetFile(io.BytesIO(small)).metadata, memoryview(small)) is None


# --------------------------------------------------------------------------- round 4 (issue 28), class 2


def _declared_small(path, member: str, declared: int) -> None:
    """Rewrite `member`'s uncompressed size, in its local header and the central directory, to `declared`."""
    import struct
    import zipfile

    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(member)
    struct.pack_into("<I", data, info.header_offset + 22, declared)
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if bytes(data[pos + 46:pos + 46 + name_len]) == member.encode():
            struct.pack_into("<I", data, pos + 24, declared)
        pos += 4
    path.write_bytes(bytes(data))


@attack("bounds.eval-member-declared-small")
@pytest.mark.parametrize("method", ["deflate", "zstd"])
def test_an_eval_member_declaring_6000_bytes_and_expanding_to_gigabytes_is_counted(tmp_path, method):
    import zipfile

    pytest.importorskip("inspect_ai")
    import inspect_ai._util.zipfile as izip  # (zstd members in zipfile, as inspect_ai writes them)

    from tests.test_import_inspect import _write_log

    compression = zipfile.ZIP_DEFLATED if method == "deflate" else izip._ZIP_ZSTANDARD
    with zipfile.ZipFile(_write_log(tmp_path / "logs", "eval")) as z:
        members = [(n, z.read(n)) for n in z.namelist()]
    first = next(i for i, (n, _) in enumerate(members) if n.startswith("samples/"))
    name = members[first][0]
    src = tmp_path / "run.eval"
    with zipfile.ZipFile(src, "w", compression) as z:
        for n, data in members:
            with z.open(n, "w", force_zip64=True) as w:
                w.write(data)
                if n == name:  # 2 GiB of blank space after the sample: still valid JSON
                    for _ in range(2048):
                        w.write(b" " * MIB)
    _declared_small(src, name, 6000)
    r = audit_jailed("import", "inspect", src, "-o", tmp_path / "out",
                     setup="import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))",
                     timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr == f"audit: error: {src}: zip archive member {name!r} expands past the 6,000 bytes it declares\n"
    assert not (tmp_path / "out").exists()


@attack("bounds.inspect-json-huge")
def test_an_inspect_json_log_past_its_cap_is_refused_from_its_size(tmp_path):
    from audit.importers.inspect_ai import MAX_JSON_LOG_BYTES

    src = tmp_path / "run.json"
    with open(src, "wb") as f:  # sparse: its size is all that is read
        f.truncate(MAX_JSON_LOG_BYTES + 1)
    r = audit_jailed("import", "inspect", src, "-o", tmp_path / "out", timeout=60)
    assert (r.returncode, r.stderr) == (2, f"audit: error: {src}: a {MAX_JSON_LOG_BYTES + 1:,}-byte JSON log, more "
                                           f"than the {MAX_JSON_LOG_BYTES:,} read (inspect_ai holds it whole, "
                                           "several times over); convert it with `inspect log convert --to eval`\n")
    assert not (tmp_path / "out").exists()


@attack("bounds.map-format-width")
@pytest.mark.parametrize("template", ["{id:>1500000000}", "{n:.900000000f}", "{n:0900000000d}", "{id:_^2000}",
                                      "{n:,.1001f}"])
def test_map_format_widths_and_precisions_are_capped(tmp_path, template):
    src = tmp_path / "r.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "x", "n": 7}) + "\n", encoding="utf-8")
    r = audit_jailed("import", "table", src, "-o", tmp_path / "pkg", "--kind", "responses", "--map",
                     f"item_id={template}", "--map", "response=text",
                     setup="import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "MemoryError" not in r.stderr
    assert r.stderr == (f"audit: error: --map item_id: bad template {template!r}: a format width or precision "
                        "over 1,000\n")
    assert not (tmp_path / "pkg").exists()


def test_map_format_specs_under_the_cap_still_format(cli, tmp_path):
    src = tmp_path / "r.jsonl"
    src.write_text(json.dumps({"id": "a", "text": "x", "n": 7}) + "\n", encoding="utf-8")
    r = cli("import", "table", src, "-o", tmp_path / "pkg", "--kind", "responses", "--map",
            "item_id={id}-{n:03d}-{n:.2f}-{id:>5}", "--map", "response=text")
    assert r.code == 0, r.err


@attack("import.eval-duplicate-member")
def test_an_eval_holding_one_member_name_twice_is_refused(tmp_path):
    import warnings
    import zipfile

    pytest.importorskip("inspect_ai")
    from tests.test_import_inspect import _write_log

    with zipfile.ZipFile(_write_log(tmp_path / "logs", "eval")) as z:
        members = [(n, z.read(n)) for n in z.namelist()]
    name, data = next((n, d) for n, d in members if n.startswith("samples/"))
    src = tmp_path / "run.eval"
    with warnings.catch_warnings(), zipfile.ZipFile(src, "w", zipfile.ZIP_DEFLATED) as z:
        warnings.simplefilter("ignore")  # (zipfile warns of the duplicate name, and writes it)
        for n, d in [*members, (name, data.replace(b'"C"', b'"I"'))]:
            z.writestr(n, d)
    r = audit_jailed("import", "inspect", src, "-o", tmp_path / "out", timeout=120)
    assert (r.returncode, r.stderr) == (2, f"audit: error: {src}: zip archive holds a member named {name!r} twice "
                                           "(readers disagree on which copy counts)\n")
    assert not (tmp_path / "out").exists()
