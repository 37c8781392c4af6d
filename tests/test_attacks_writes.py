"""Round 3 attacks on what audit writes and what it calls the same (issue 19): `--force` replacing a
user's folder, two writers racing for one output name, a package identity that ignored its manifest,
trailing archives in a tarball, recorded fields `reproduce` copied unchecked, a zero tolerance
that was not exact, and claims arithmetic that crashed.

Each test performs its attack and passes only because the defence holds; see tests/attacks.py.
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from tests.builders import make_package
from tests.attacks import attack
from tests.test_claims_ledger import MINI, SECOND, refused, write
from tests.test_claims_ledger import mini  # noqa: F401  (fixture)

from audit.claims.ledger import Tolerance
from audit.packages import bundle


# --------------------------------------------------------------------------- claims: tolerance and arithmetic


@attack("claims.zero-tolerance-slack")
@pytest.mark.parametrize("recorded, recomputed", [
    (10_000_000_007, 10_000_000_000),   # the count
    (2 ** 52 + 1, 2 ** 52),             # counts near a float's limit
    (1e15 + 1, 1e15),
])
def test_zero_tolerance_is_exact_for_counts(recorded, recomputed):
    assert not Tolerance(absolute=0).allows(float(recorded), float(recomputed))
    assert not Tolerance(relative=0).allows(float(recorded), float(recomputed))
    assert Tolerance(absolute=0).allows(float(recorded), float(recorded))


@attack("claims.zero-tolerance-slack")
def test_small_tolerances_forgive_only_a_floats_last_bits():
    assert Tolerance(absolute=0).allows(0.1 + 0.2, 0.3)  # one ulp: rounding, not a difference
    assert not Tolerance(absolute=0).allows(1e9 + 0.5, 1e9)
    assert not Tolerance(absolute=1).allows(1e10 + 2, 1e10)  # the slack no longer grows with the value
    assert Tolerance(absolute=1).allows(1e10 + 1, 1e10)
    assert not Tolerance(relative=1e-12).allows(1e6, 1e6 + 1e-5)


@attack("claims.arithmetic-crash")
@pytest.mark.parametrize("expr, message", [
    ("max(5)", "max takes at least 2 arguments (got 1)"),
    ("min(G1)", "min takes at least 2 arguments (got 1)"),
    ("abs(1, 2)", "abs takes 1 argument (got 2)"),
    ("sqrt(G1, 2)", "sqrt takes 1 argument (got 2)"),
    ("log(1, 2, 3)", "log takes 1 argument (got 3)"),
    ("exp()", "exp takes 1 argument (got 0)"),
    ("max(*G1)", "Starred is not allowed (numbers, claim ids, + - * /, parentheses and abs, min, max, sqrt, "
                 "log, exp only)"),
    ("1" * 320, "the number 111111111111111111111111111111… is out of range"),
    ("1e999 - 1e999", "the number 1e999 is out of range"),
    ("True + G1", "Constant is not allowed (numbers, claim ids, + - * /, parentheses and abs, min, max, sqrt, "
                  "log, exp only)"),
])
def test_bad_arithmetic_is_one_line_naming_the_row_and_field(cli, mini, expr, message):  # noqa: F811
    write(mini, MINI + SECOND.format(expr=expr))
    assert refused(cli, "claims.yaml") == f"claims.yaml: line 23: claim G2: field recipe.args.expr: {message}"


# --------------------------------------------------------------------------- tarballs: nothing after the end


def _bundled(tmp_path, name: str, answer: str) -> tuple[Path, bytes]:
    """A bundled package answering `answer`; returns its path and its decompressed tar bytes."""
    src = make_package(tmp_path / name, responses=[{"item_id": "q1", "response": answer}])
    out = tmp_path / f"{name}.tar.gz"
    bundle(src, out)
    return out, gzip.decompress(out.read_bytes())


def _trailing_cases(tmp_path) -> dict[str, bytes]:
    first, tar1 = _bundled(tmp_path, "honest", "A")
    _, tar2 = _bundled(tmp_path, "forged", "B")
    plain = first.read_bytes()
    return {
        "second archive, same stream": gzip.compress(tar1 + tar2, mtime=0),
        "second gzip member": plain + gzip.compress(tar2, mtime=0),
        "second archive after the end blocks' padding": gzip.compress(tar1 + bytes(10240) + tar2, mtime=0),
        "garbage after the gzip stream": plain + b"trailing garbage",
        "garbage after the end blocks": gzip.compress(tar1 + b"x", mtime=0),
        "a small archive right after the first end block": gzip.compress(tar1[:_end_of(tar1)] + bytes(512) + tar2,
                                                                         mtime=0),
    }


def _end_of(tar: bytes) -> int:
    """Offset of the first zero block after the last member (where tarfile stops reading)."""
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r:") as tf:
        tf.getmembers()
        return tf.offset


@attack("pkg.tar-trailing-archive")
def test_a_second_archive_in_the_same_stream_is_refused(tmp_path, cli):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(_trailing_cases(tmp_path)["second archive, same stream"])
    if shutil.which("tar"):  # what the attack relies on: tar -i unpacks the second archive over the first
        dest = tmp_path / "x"
        dest.mkdir()
        subprocess.run(["tar", "-xzif", str(bad), "-C", str(dest)], check=True)
        assert '"B"' in (dest / "responses.jsonl").read_text()
    r = cli("validate", bad)
    assert r.code == 1, r
    assert r.out.splitlines()[0] == f"{bad}: data after the end of the tar archive (a second archive or "\
                                    "garbage; nothing may follow it)"


@attack("pkg.tar-trailing-data")
@pytest.mark.parametrize("case", ["second gzip member", "second archive after the end blocks' padding",
                                  "garbage after the gzip stream", "garbage after the end blocks",
                                  "a small archive right after the first end block"])
def test_any_data_after_the_archive_is_refused(tmp_path, cli, case):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(_trailing_cases(tmp_path)[case])
    r = cli("validate", bad)
    assert r.code == 1, r
    first = r.out.splitlines()[0]
    assert first in (f"{bad}: data after the end of the tar archive (a second archive or garbage; nothing may "
                     f"follow it)", f"{bad}: not a readable tar archive: Not a gzipped file (b'tr')"), first


@attack("pkg.tar-trailing-data")
def test_an_honest_bundle_and_zero_padding_still_validate(tmp_path, cli):
    first, tar1 = _bundled(tmp_path, "honest", "A")
    assert cli("validate", first).code == 0
    padded = tmp_path / "padded.tar.gz"
    padded.write_bytes(gzip.compress(tar1 + bytes(65536), mtime=0))  # tar -b 128 pads with zeros
    assert cli("validate", padded).code == 0
    plain = tmp_path / "plain.tar"
    plain.write_bytes(tar1)
    assert cli("validate", plain).code == 0
