"""The archive bombs of issue 11 at their real size, against `audit validate` in a fresh process each.

    .venv/bin/python benchmarks/attack_bombs.py [--baseline DIR] [--timeout 120]

The attack tests (tests/test_attacks_packages.py) use small caps to stay fast; this one-off check
runs the bombs at the size the issue names, each built in seconds from repeated gzip members:

  tar-10g-first   a 10 GiB member of zeros (~10 MB .tar.gz), manifest.json first
  tar-10g-last    the same member before manifest.json (the cap before the manifest applies)
  gz-rows-10g     a package whose .jsonl.gz repeats one valid row out to 10 GiB (rows: 1 declared)
  members-200k    200,000 empty members after manifest.json (none listed), and before it
  listed-50k/200k a valid tarball whose manifest lists 50,000 / 200,000 empty files: linear?
  gz-line-48g     (issue 19) a 49 MB .jsonl.gz of one 48 GiB line, uncompressed_bytes null
  parquet-400m    (issue 19) a 14 KiB Parquet file holding one 400 MiB value

Each run has RLIMIT_FSIZE set to 300 MiB, so a defence that unpacked a bomb first fails with
EFBIG instead of filling the disk, and a timeout (default 120 s, the issue's bound). Printed per
case: exit code, wall seconds, the first output line. With --baseline DIR (a checkout of the
commit before the hardening, e.g. `git archive 5885385 | tar -x -C DIR`), the same cases run on
it too, and the ratio of wall times is printed.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.attack_tools import (  # noqa: E402
    MIB,
    ROW,
    gzip_repeated,
    manifest,
    many_empty_members_tar_gz,
    sha256,
    tar_gz,
    tar_header,
    write_package,
)

JAIL = """
import resource, sys
resource.setrlimit(resource.RLIMIT_FSIZE, (300 << 20, 300 << 20))
from audit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def build(d: Path) -> dict[str, Path]:
    cases = {}
    m = json.dumps(manifest([{"path": "responses.jsonl", "data": ROW, "rows": 1}])).encode()
    p = d / "tar-10g-first.tar.gz"
    p.write_bytes(tar_gz([("manifest.json", m), ("responses.jsonl", 10 * 1024 * MIB)]))
    cases["tar-10g-first"] = p
    p = d / "tar-10g-last.tar.gz"
    p.write_bytes(tar_gz([("responses.jsonl", 10 * 1024 * MIB), ("manifest.json", m)]))
    cases["tar-10g-last"] = p
    chunk = ROW * (MIB // len(ROW))
    cases["gz-rows-10g"] = write_package(d / "gz-rows-10g", {"responses.jsonl.gz": gzip_repeated(chunk, 10 * 1024)},
                                         rows={"responses.jsonl.gz": 1})
    p = d / "members-200k-first.tar.gz"
    p.write_bytes(many_empty_members_tar_gz(200_000, [("manifest.json", m), ("responses.jsonl", ROW)]))
    cases["members-200k-first"] = p
    body = gzip.decompress(many_empty_members_tar_gz(200_000, [("responses.jsonl", ROW)]))[:-1024]
    body += tar_header("manifest.json", len(m)) + m + b"\0" * (-len(m) % 512) + b"\0" * 1024
    p = d / "members-200k-last.tar.gz"
    p.write_bytes(gzip.compress(body, compresslevel=1, mtime=0))
    cases["members-200k-last"] = p
    for n in (50_000, 200_000):
        files = [{"path": "responses.jsonl", "data": ROW, "rows": 1}]
        files += [{"path": f"m{i:07d}", "sha256": sha256(b""), "bytes": 0, "schema": "text"} for i in range(n)]
        mm = json.dumps(manifest(files)).encode()
        p = d / f"listed-{n // 1000}k.tar.gz"
        p.write_bytes(many_empty_members_tar_gz(n, [("manifest.json", mm), ("responses.jsonl", ROW)]))
        cases[f"listed-{n // 1000}k"] = p
    line = gzip_repeated(b"x" * MIB, 48 * 1024)  # one 48 GiB line in 49 MB, as in the issue
    cases["gz-line-48g"] = write_package(d / "gz-line-48g", {"responses.jsonl.gz": line},
                                         rows={"responses.jsonl.gz": 1})
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"item_id": ["q1"], "response": ["x" * (400 * MIB)]}), buf, compression="zstd")
    cases["parquet-400m"] = write_package(d / "parquet-400m", {"responses.parquet": buf.getvalue()},
                                          rows={"responses.parquet": 1})
    return cases


def run(src: Path | None, target: Path, timeout: float, tmp: Path) -> tuple[str, float, str]:
    # The program's temporary folders go under `tmp`, removed even when a run is killed at the timeout.
    scratch = Path(tempfile.mkdtemp(dir=tmp))
    env = {**os.environ, "TMPDIR": str(scratch)}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    t = time.perf_counter()
    try:
        r = subprocess.run([sys.executable, "-c", JAIL, "validate", str(target)], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=str(src or REPO))
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t, f"still running after {timeout:.0f} s"
    wall = time.perf_counter() - t
    first = (r.stdout.strip().splitlines() or r.stderr.strip().splitlines() or [""])[0]
    first = first.replace(str(target), "PKG")
    return str(r.returncode), wall, first[:150]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", type=Path, help="a checkout of the code before the hardening")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="attack-bombs-") as tmp:
        t = time.perf_counter()
        cases = build(Path(tmp))
        sizes = {k: sum(f.stat().st_size for f in ([v] if v.is_file() else v.rglob("*"))) for k, v in cases.items()}
        print(f"built {len(cases)} bombs in {time.perf_counter() - t:.1f} s")
        for name, target in cases.items():
            code, wall, first = run(None, target, args.timeout, Path(tmp))
            line = f"{name:<20} {sizes[name] / MIB:7.1f} MB on disk  exit {code:>7}  {wall:7.2f} s  {first}"
            if args.baseline is not None:
                bcode, bwall, bfirst = run(args.baseline, target, args.timeout, Path(tmp))
                line += f"\n{'':<20} baseline: exit {bcode:>7}  {bwall:7.2f} s ({bwall / wall:.0f}x)  {bfirst}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
