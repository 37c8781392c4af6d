"""Attacks on the bounds of reading user-supplied files outside packages (issue 19, round 3): a verdict
file's Parquet sidecar, the importers' zip, Parquet and .csv.gz inputs; and (issue 28, class 8) an lm-eval
folder giving one task twice. See tests/attacks.py.

Each runs `audit` in a fresh interpreter with a time limit (and a memory limit where decoding is the
attack), and expects one line on stderr and exit 2. Bombs are small (built in well under a second);
the limits they pass are lowered in the jailed process where a real-sized bomb would be slow to build.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from tests.attack_tools import MIB, ROW, audit_jailed
from tests.attacks import attack
from tests.builders import make_package

MEMORY = "import resource; resource.setrlimit(resource.RLIMIT_AS, (1200 << 20, 1200 << 20))"
"""A jail of 1.2 GB of address space: decoding the bombs below takes more."""


def _one_line(r, message: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr == f"audit: error: {message}\n", r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def _import_table(src: Path, tmp_path: Path, setup: str = "", timeout: float = 30):
    return audit_jailed("import", "table", src, "-o", tmp_path / "out", "--kind", "responses", "--benchmark", "choice",
                        setup=setup, timeout=timeout)


def _parquet(table, **kw) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    return buf.getvalue()


# --------------------------------------------------------------------------- the verdict file's sidecar


def _graded_with_sidecar(tmp_path: Path, n: int = 120) -> Path:
    from audit.cli import main

    items = make_package(tmp_path / "items", items=[{"item_id": f"q{i:03d}", "reference": "A", "num_choices": 4}
                                                   for i in range(n)])
    resp = make_package(tmp_path / "resp", responses=[
        {"item_id": f"q{i:03d}", "response": "The answer is (A).", "finish_reason": "stop"} for i in range(n)])
    out = tmp_path / "results.json"
    assert main(["grade", str(resp), "--items", str(items), "--benchmark", "choice", "-o", str(out),
                 "--parquet"]) == 0
    return out


def _forge_sidecar(out: Path, edit) -> tuple[Path, int]:
    """Rewrite the sidecar with `edit(table)` (no Arrow schema stored: a reader sees plain text columns) and
    re-pin it in the verdict file, as a forger would; the sidecar's path and size."""
    import hashlib

    import pyarrow.parquet as pq

    header = json.loads(out.read_text())
    side = out.parent / header["rows_file"]["path"]
    data = _parquet(edit(pq.read_table(side)), compression="zstd", store_schema=False)
    side.write_bytes(data)
    out.write_text(out.read_text().replace(header["rows_file"]["sha256"], hashlib.sha256(data).hexdigest()))
    return side, len(data)


@pytest.mark.slow
@attack("verdicts.sidecar-dictionary-bomb")
def test_a_sidecar_repeating_one_huge_value_through_a_dictionary_is_refused_undecoded(tmp_path):
    import pyarrow as pa

    out = _graded_with_sidecar(tmp_path)
    big = "x" * (8 * MIB)  # 120 rows of it: 960 MiB decoded, from a file of a few KB

    def edit(t):
        return t.set_column(t.schema.get_field_index("answer"), "answer",
                            pa.array([big] * t.num_rows).dictionary_encode())

    side, size = _forge_sidecar(out, edit)
    assert size < 64 * 1024
    r = audit_jailed("show", out, setup=MEMORY, timeout=30)
    _one_line(r, f"{out}: rows_file {side.name}: decodes to more than 67,108,864 bytes by row 120, the most a "
                 f"{size:,}-byte file may expand to")


@attack("verdicts.sidecar-huge-value")
def test_a_sidecar_holding_one_huge_value_is_refused_from_its_footer(tmp_path):
    import pyarrow as pa

    out = _graded_with_sidecar(tmp_path)

    def edit(t):
        answers = ["A"] * t.num_rows
        answers[0] = "x" * (80 * MIB)  # the footer's own check allows 4096 bytes a row, or 64 times the file
        return t.set_column(t.schema.get_field_index("answer"), "answer", pa.array(answers))

    side, size = _forge_sidecar(out, edit)
    r = audit_jailed("show", out, setup=MEMORY, timeout=30)
    _one_line(r, f"{out}: rows_file {side.name}: decodes to more than 67,108,864 bytes (its footer says), the most "
                 f"a {size:,}-byte file may expand to")


# --------------------------------------------------------------------------- zip inputs of the importers


def _zip(path: Path, members: list[tuple[str, bytes]], level: int = 9) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as z:
        for name, data in members:
            z.writestr(name, data)
    return path


LOW_FLOOR = "import audit.fileio as j; j.MAX_LINE_BYTES = 1 << 20"
"""gzip_limit's floor (the longest line) lowered to 1 MiB, so a 64 MiB bomb is over it (a real one: GBs)."""


@attack("import.zip-bomb")
def test_a_zip_member_expanding_past_the_ratio_is_refused_unread(tmp_path):
    src = _zip(tmp_path / "r.zip", [("r.jsonl", b"x" * (64 * MIB))])  # one endless line, 64 KB on disk
    size = src.stat().st_size
    r = _import_table(src, tmp_path, setup=LOW_FLOOR)
    limit = max(1 << 20, 200 * size)
    _one_line(r, f"{src}: zip archive decompresses to more than {limit:,} bytes (its members say), the most a "
                 f"{size:,}-byte file may expand to (at most 200 times its size, 17,179,869,184 bytes in all)")
    assert not (tmp_path / "out").exists()


@attack("import.zip-bomb")
def test_many_zip_members_each_within_the_ratio_are_bounded_together(tmp_path):
    # 40 members of 2 MiB of rows: each is small, together past the ratio of the whole archive
    chunk = ROW * (2 * MIB // len(ROW))
    src = _zip(tmp_path / "r.zip", [(f"m{i:02d}.jsonl", chunk) for i in range(40)])
    size = src.stat().st_size
    r = _import_table(src, tmp_path, setup=LOW_FLOOR)
    assert r.returncode == 2 and "zip archive decompresses to more than" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"audit: error: {src}: "), r.stderr
    assert size < (1 << 20)


@attack("import.zip-members")
def test_a_zip_of_too_many_members_is_refused_before_any_is_read(tmp_path):
    src = _zip(tmp_path / "r.zip", [(f"m{i:03d}.jsonl", ROW) for i in range(101)])
    r = _import_table(src, tmp_path, setup="import audit.importers.sources as s; s.MAX_ZIP_MEMBERS = 100")
    _one_line(r, f"{src}: zip archive has 101 members, more than the 100 read")


@pytest.mark.slow
@attack("import.zip-member-path")
def test_zip_member_names_that_are_not_plain_relative_paths_are_refused(tmp_path):
    for i, name in enumerate(["../x.jsonl", "/etc/x.jsonl", "a/../../x.jsonl", "C:x.jsonl", "a\nb.jsonl",
                              "a\x1b[2Jb.jsonl"]):
        src = _zip(tmp_path / f"r{i}.zip", [(name, ROW)])
        r = _import_table(src, tmp_path)
        # (zipfile itself turns a backslash or a drive letter into a plain name)
        shown = zipfile.ZipFile(src).namelist()[0]
        if shown in ("x.jsonl", "etc/x.jsonl"):
            continue
        _one_line(r, f"{src}: zip archive has a member named {shown!r}: not a plain relative path"
                  .replace("\n", "\\n").replace("\x1b", "\\x1b"))


def test_a_zip_inside_a_zip_is_not_read(tmp_path):
    inner = _zip(tmp_path / "inner.zip", [("r.jsonl", ROW)]).read_bytes()
    src = _zip(tmp_path / "r.zip", [("inner.zip", inner)])
    r = _import_table(src, tmp_path)
    _one_line(r, f"{src}: zip archive holds no .json or .jsonl file")


def test_a_plain_zip_import_still_reads(tmp_path):
    src = _zip(tmp_path / "r.zip", [("a.jsonl", ROW), ("sub/b.json", b'[{"item_id":"q2","response":"B"}]')])
    r = _import_table(src, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(", 2 rows (2 read)\n"), r.stdout


@pytest.mark.slow
@attack("import.eval-zip-bomb")
def test_an_inspect_log_zip_bomb_is_refused_before_inspect_reads_it(tmp_path):
    import pytest

    pytest.importorskip("inspect_ai")
    from tests.test_import_inspect import _write_log

    # A log inspect_ai wrote, one sample padded with 64 MiB of blank space (still valid JSON: read as written)
    with zipfile.ZipFile(_write_log(tmp_path / "logs", "eval")) as z:
        members = [(n, z.read(n)) for n in z.namelist()]
    first = next(i for i, (n, _) in enumerate(members) if n.startswith("samples/"))
    members[first] = (members[first][0], members[first][1] + b" " * (64 * MIB))
    src = _zip(tmp_path / "run.eval", members)
    size = src.stat().st_size
    r = audit_jailed("import", "inspect", src, "-o", tmp_path / "out", setup=LOW_FLOOR, timeout=30)
    limit = max(1 << 20, 200 * size)
    _one_line(r, f"{src}: zip archive decompresses to more than {limit:,} bytes (its members say), the most a "
                 f"{size:,}-byte file may expand to (at most 200 times its size, 17,179,869,184 bytes in all)")


# --------------------------------------------------------------------------- Parquet and .csv.gz inputs


@pytest.mark.slow
@attack("import.parquet-bomb")
def test_an_imported_parquet_repeating_one_huge_value_is_refused_undecoded(tmp_path):
    import pyarrow as pa

    src = tmp_path / "r.parquet"
    data = _parquet(pa.table({"item_id": [f"q{i}" for i in range(2000)],
                              "response": pa.array(["x" * MIB] * 2000).dictionary_encode()}),
                    compression="zstd", store_schema=False)
    src.write_bytes(data)  # 2 GiB decoded, 30 KB on disk
    r = _import_table(src, tmp_path, setup=MEMORY)
    _one_line(r, f"{src}: row 1: decodes to more than 67,108,864 bytes by row 2,000, the most a {len(data):,}-byte "
                 "file may expand to")


@pytest.mark.slow
@attack("import.parquet-bomb")
def test_an_imported_parquet_holding_one_huge_value_is_refused_from_its_footer(tmp_path):
    import pyarrow as pa

    src = tmp_path / "r.parquet"
    data = _parquet(pa.table({"item_id": ["q1"], "response": ["x" * (80 * MIB)]}), compression="zstd")
    src.write_bytes(data)
    r = _import_table(src, tmp_path, setup=MEMORY)
    _one_line(r, f"{src}: row 1: decodes to more than 67,108,864 bytes (its footer says), the most a "
                 f"{len(data):,}-byte file may expand to")


@pytest.mark.slow
@attack("import.parquet-bomb")
def test_an_lm_eval_parquet_bomb_is_refused_before_datasets_reads_it(tmp_path):
    import pytest
    import pyarrow as pa

    pytest.importorskip("datasets")
    src = tmp_path / "samples_t_2026-01-01T00-00-00.parquet"
    data = _parquet(pa.table({"doc_id": list(range(2000)), "resps": pa.array(["x" * MIB] * 2000).dictionary_encode()}),
                    compression="zstd", store_schema=False)
    src.write_bytes(data)
    r = audit_jailed("import", "lm-eval", src, "-o", tmp_path / "out", "--benchmark", "choice", setup=MEMORY,
                     timeout=60)
    _one_line(r, f"{src}: decodes to more than 67,108,864 bytes by row 2,000, the most a {len(data):,}-byte "
                 "file may expand to")


def test_a_plain_parquet_import_still_reads(tmp_path):
    import pyarrow as pa

    src = tmp_path / "r.parquet"
    src.write_bytes(_parquet(pa.table({"item_id": ["q1", "q2"], "response": pa.array(["A", "A"]).dictionary_encode()})))
    r = _import_table(src, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.endswith(", 2 rows (2 read)\n"), r.stdout


@pytest.mark.slow
@attack("import.csv-gz-bomb")
def test_a_csv_gz_bomb_stops_at_the_gzip_bound(tmp_path):
    from tests.attack_tools import gzip_repeated

    src = tmp_path / "r.csv.gz"
    # a header, then 64 MiB of blank lines (pandas skips them, reading on: a real bomb holds terabytes)
    data = gzip_repeated(b"\n" * MIB, 64, head=b"item_id,response\n")
    src.write_bytes(data)
    setup = "import audit.fileio as j; j.MAX_GZIP_RATIO = 1; j.MAX_LINE_BYTES = 1 << 20"
    r = _import_table(src, tmp_path, setup=setup, timeout=30)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stderr.startswith(f"audit: error: {src}: row "), r.stderr
    assert r.stderr.endswith(f": malformed CSV: decompresses to more than {1 << 20:,} bytes, the most this file may "
                             f"expand to (at most 1 times its size, 17,179,869,184 bytes in all)\n"), r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- other files named on the command line


@pytest.mark.slow
@attack("salt.file-huge")
def test_a_huge_or_binary_salt_file_is_refused_in_one_line(tmp_path):
    import os

    big = tmp_path / "salt"
    with open(big, "wb") as f:
        f.truncate(8 << 30)  # 8 GiB, sparse: read whole before
    os.chmod(big, 0o600)
    r = audit_jailed("verify-release", tmp_path / "rel", "--items", tmp_path / "items", "--salt-file", big,
                     setup=MEMORY, timeout=30)
    _one_line(r, f"{big}: larger than the 4,096-byte limit for a salt file")
    binary = tmp_path / "salt2"
    binary.write_bytes(b"\xff" * 64)
    os.chmod(binary, 0o600)
    r = audit_jailed("verify-release", tmp_path / "rel", "--items", tmp_path / "items", "--salt-file", binary)
    _one_line(r, f"{binary}: not valid UTF-8 at byte 0")


def _jailed_python(code: str, timeout: float = 30):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", MEMORY + "\n" + code], capture_output=True, text=True,
                          timeout=timeout)


@attack("gen.config-huge")
def test_a_huge_generation_config_is_refused_unread(tmp_path):
    cfg = tmp_path / "model" / "generation_config.json"
    cfg.parent.mkdir()
    with open(cfg, "wb") as f:
        f.write(b'{"temperature": 0.6, "pad": "')
        f.truncate(8 << 30)  # 8 GiB, sparse: read whole before
    r = _jailed_python("from audit.errors import AuditError\nfrom audit.generate.model_info import read_generation_config\n"
                       f"try:\n    read_generation_config({str(cfg.parent)!r})\nexcept AuditError as e:\n    print(e)")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stdout == f"{cfg}: larger than the 1,048,576-byte limit for a generation_config.json\n"
    cfg.write_text('{"temperature": 0.6, "temperature": 1.0}')
    r = _jailed_python("from audit.errors import AuditError\nfrom audit.generate.model_info import read_generation_config\n"
                       f"try:\n    read_generation_config({str(cfg.parent)!r})\nexcept AuditError as e:\n    print(e)")
    assert r.stdout == f"{cfg}: field temperature: unreadable: duplicate key in a JSON object\n", r.stdout


@pytest.mark.slow
@attack("show.deep-json-sniff")
def test_a_json_file_nested_too_deep_is_not_a_traceback_when_its_format_is_guessed(tmp_path):
    for name, depth in (("small.json", 2_000), ("deep.json", 200_000)):  # read from its head, or whole
        src = tmp_path / name
        src.write_text('{"a":' + "[" * depth + "]" * depth + "}")
        r = audit_jailed("show", src, timeout=30)
        _one_line(r, f"{src}: not a package or a verdict file: expected a package directory, a .tar.gz or a "
                     "verdict file")
        r = audit_jailed("import", "verdicts", src, "-o", tmp_path / "v.json", "--benchmark", "choice", timeout=30)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr[-2000:]
        assert r.stderr.startswith(f"audit: error: {src}") and "Traceback" not in r.stderr


def _patched_zip(path: Path, local: int, central: int, value: int) -> Path:
    """A one-member zip whose 2-byte field at `local` in the local header and `central` in the central
    directory entry is `value` (the flags, the compression method)."""
    import struct

    _zip(path, [("r.jsonl", ROW)], level=0)
    data = bytearray(path.read_bytes())
    i, j = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
    data[i + local:i + local + 2] = struct.pack("<H", value)
    data[j + central:j + central + 2] = struct.pack("<H", value)
    path.write_bytes(bytes(data))
    return path


@attack("import.zip-unreadable-member")
def test_an_encrypted_zip_member_or_an_unknown_method_is_one_line(tmp_path):
    src = _patched_zip(tmp_path / "enc.zip", 6, 8, 0x1)
    _one_line(_import_table(src, tmp_path), f"{src}: zip archive member 'r.jsonl' is encrypted")
    src = _patched_zip(tmp_path / "method.zip", 8, 10, 99)  # AES, as 7-Zip writes it
    _one_line(_import_table(src, tmp_path), f"{src}: zip archive member 'r.jsonl' uses compression method 99, "
                                            "which is not read")


@attack("import.csv-long-cell")
def test_a_csv_cell_past_the_line_limit_is_refused_not_imported(tmp_path):
    src = tmp_path / "r.csv"
    src.write_bytes(b"item_id,response\nq1," + b"x" * (4 * MIB) + b"\n")  # (real: a 100 MiB cell, 6x in memory)
    r = _import_table(src, tmp_path, setup=LOW_FLOOR)
    _one_line(r, f"{src}: row 1: malformed CSV: a line is over the 1,048,576-byte limit")
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- documents read whole: bounded first


def _sparse(path: Path, size: int = 8 << 30) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # 8 GiB that take no disk: read whole before
    return path


@pytest.mark.slow
@attack("verdicts.file-huge")
def test_a_huge_verdict_file_or_rows_file_is_refused_from_its_size_unread(tmp_path):
    big = _sparse(tmp_path / "results.json")
    r = audit_jailed("diff", big, big, setup=MEMORY, timeout=30)
    _one_line(r, f"{big}: larger than the 1,073,741,824-byte limit for a verdict file")
    (tmp_path / "g").mkdir()
    out = _graded_with_sidecar(tmp_path / "g")
    side = out.parent / json.loads(out.read_text())["rows_file"]["path"]
    _sparse(side)
    r = audit_jailed("show", out, setup=MEMORY, timeout=30)
    _one_line(r, f"{out}: rows_file {side.name}: larger than the 1,073,741,824-byte limit for a Parquet rows file")


def test_a_verdict_file_that_is_a_fifo_is_named_as_such_not_as_missing(tmp_path, cli):
    fifo = tmp_path / "results.json"
    os.mkfifo(fifo)
    r = cli("diff", fifo, fifo)
    assert (r.code, r.err) == (2, f"audit: error: {fifo}: not a regular file\n")
    r = cli("diff", tmp_path / "missing.json", fifo)
    assert (r.code, r.err) == (2, f"audit: error: {tmp_path / 'missing.json'}: no such file\n")


@pytest.mark.slow
def test_a_verdict_file_of_13000_rows_is_far_inside_the_limit(tmp_path):
    from audit.verdicts.read import MAX_VERDICT_FILE_BYTES, read_verdicts

    out = _graded_with_sidecar(tmp_path, n=13_000)
    assert out.stat().st_size < MAX_VERDICT_FILE_BYTES // 100
    assert read_verdicts(out, rows="models").header.summary.items == 13_000


@attack("release.json-huge")
def test_a_release_json_padded_past_the_document_limit_is_refused_by_verify_release(tmp_path):
    """verify-release read every file of the release whole and parsed release.json at any size (the release's
    own reader, `audit show`, refuses past 64 MiB): now each file but the rows is bounded before it is read."""
    from audit.cli import main
    from tests.attack_tools import repin

    items = make_package(tmp_path / "items", items=[{"item_id": f"q{i}", "reference": "A", "num_choices": 4}
                                                   for i in range(20)])
    resp = make_package(tmp_path / "resp", responses=[{"item_id": f"q{i}", "response": "The answer is (A)."}
                                                      for i in range(20)])
    graded, rel = tmp_path / "results.json", tmp_path / "rel"
    assert main(["grade", str(resp), "--items", str(items), "--benchmark", "choice", "-o", str(graded)]) == 0
    assert main(["release", str(graded), "-o", str(rel)]) == 0
    info = (rel / "release.json").read_bytes()
    repin(rel, "release.json", info + b" " * (65 * MIB), indent=None)  # the same JSON, whitespace after it
    r = audit_jailed("verify-release", rel, "--items", items, "--responses", resp, timeout=60)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert ("FAIL package        release.json: larger than the 67,108,864-byte limit for a release's document"
            in r.stdout), r.stdout
    assert "Traceback" not in r.stdout + r.stderr


@attack("release.rows-huge")
def test_a_release_whose_rows_file_is_past_the_limit_is_refused_before_its_rows_are_held(tmp_path, monkeypatch, cli):
    """verify-release and the release kind's reader (`audit show`) held every row of any size in memory: the rows
    file's size, which validation checked against the manifest, is bounded first (1 GiB; lowered here)."""
    from audit.release import kind as release_kind

    items = make_package(tmp_path / "items", items=[{"item_id": f"q{i}", "reference": "A", "num_choices": 4}
                                                   for i in range(20)])
    resp = make_package(tmp_path / "resp", responses=[{"item_id": f"q{i}", "response": "The answer is (A)."}
                                                      for i in range(20)])
    graded, rel = tmp_path / "results.json", tmp_path / "rel"
    assert cli("grade", resp, "--items", items, "--benchmark", "choice", "-o", graded).code == 0
    assert cli("release", graded, "-o", rel).code == 0
    size = (rel / "verdicts.jsonl").stat().st_size
    assert cli("verify-release", rel, "--items", items).code == 0
    monkeypatch.setattr(release_kind, "MAX_ROWS_FILE_BYTES", size - 1)
    r = cli("verify-release", rel, "--items", items)
    assert r.code == 1
    assert (f"FAIL package        verdicts.jsonl: larger than the {size - 1:,}-byte limit for a release's rows"
            in r.out), r.out
    r = cli("show", rel)
    assert (r.code, r.err) == (2, f"audit: error: {rel}: verdicts.jsonl: larger than the {size - 1:,}-byte limit "
                                  f"for a release's rows\n")


# --------------------------------------------------------------------------- round 4 (issue 28), class 8


def _copa_run(root: Path) -> Path:
    from tests.test_import_lm_eval_dir import COPA_DIR

    return Path(shutil.copytree(COPA_DIR, root / "run"))


def _also_embedded(run: Path, task: str = "copa", documents: slice = slice(0, 5)) -> None:
    """The run's results file holding another copy of `task`'s samples (fewer documents: the copies differ)."""
    from tests.test_import_lm_eval_dir import STAMP

    records = [json.loads(line) for line in (run / f"samples_copa_{STAMP}.jsonl").read_text().splitlines()]
    results = run / f"results_{STAMP}.json"
    doc = json.loads(results.read_text())
    doc["samples"] = {task: records[documents]}
    results.write_text(json.dumps(doc))


@attack("import.lm-eval-task-twice")
def test_a_task_both_in_a_samples_file_and_embedded_in_the_results_file_is_refused(cli, here):
    from tests.test_import_lm_eval_dir import STAMP

    run = _copa_run(here)
    _also_embedded(run)
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: run/results_{STAMP}.json: field samples.copa: task "
                                             f"'copa' of this run is also in samples_copa_{STAMP}.jsonl: two "
                                             f"copies, and which one counts is ambiguous (keep one)\n")
    assert not (here / "pkgs").exists()
    # Another task embedded beside the samples file is no second copy: both are read.
    _also_embedded(run, task="copa_other")
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert r.code == 0 and {p.name for p in (here / "pkgs").iterdir()} == {"copa", "copa_other"}, r


@attack("import.lm-eval-task-twice")
def test_with_on_bad_row_record_a_task_given_twice_is_listed_and_the_others_imported(cli, here):
    from tests.test_import_lm_eval_dir import STAMP, _layout

    _layout(here / "out")
    _also_embedded(here / "out" / "sshleifer__tiny-gpt2")
    r = cli("import", "lm-eval", "out", "-o", "pkgs", "--on-bad-row", "record")
    assert r.code == 0, r
    assert (f"  not imported (bad_input): out/sshleifer__tiny-gpt2/results_{STAMP}.json (task copa): field "
            f"samples.copa: task 'copa' of this run is also in samples_copa_{STAMP}.jsonl: two copies, and which "
            f"one counts is ambiguous (keep one)") in r.out.splitlines()
    assert (here / "pkgs" / "tinyllama" / "gsm8k").is_dir() and not (here / "pkgs" / "sshleifer__tiny-gpt2").exists()


@attack("import.lm-eval-task-twice")
def test_a_task_in_a_jsonl_and_a_parquet_samples_file_is_refused(cli, here):
    from tests.test_import_lm_eval_dir import STAMP

    run = _copa_run(here)
    (run / f"samples_copa_{STAMP}.parquet").write_bytes(b"PAR1")  # refused by its name, before a byte is read
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: run/samples_copa_{STAMP}.parquet: task 'copa' of this "
                                             f"run is also in samples_copa_{STAMP}.jsonl: two copies, and which one "
                                             f"counts is ambiguous (keep one)\n")


@attack("import.lm-eval-task-twice")
def test_samples_beside_two_results_files_of_their_run_are_refused(cli, here):
    from tests.test_import_lm_eval_dir import STAMP

    run = _copa_run(here)
    doc = json.loads((run / f"results_{STAMP}.json").read_text())
    doc["results"]["copa"]["acc,none"] = 0.95  # the figure the samples would be checked against
    (run / f"results_tiny-gpt2_hf_copa_{STAMP}.json").write_text(json.dumps(doc))
    r = cli("import", "lm-eval", "run", "-o", "pkgs")
    assert (r.code, r.out, r.err) == (2, "", f"audit: error: run/results_tiny-gpt2_hf_copa_{STAMP}.json: a second "
                                             f"results file of the run of samples_copa_{STAMP}.jsonl (the first: "
                                             f"results_{STAMP}.json): which one its samples are checked against is "
                                             f"ambiguous (keep one)\n")
