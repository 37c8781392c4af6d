"""Trial of the trace reader's paths on real public traces kept outside the repository.

For each trace (`.json` or `.json.gz`) under the folders given: an independent count by the standard library
(`json.load` of the whole file: events, and kernel events `ph: X, cat: kernel`), then audit's three readers, each
timed in this process:
- the compiled pass (`TraceReader.columns`, audit/trace/_scan.c): how many events it read itself, and how many it
  left to the exact reader (one at a time) or to msgspec (text that is not ASCII);
- the msgspec fast path (what runs without the extension);
- the exact path (the standard library's decoder, one event at a time).
It prints whether each fast path collected exactly what the exact path did (or both refused the file), and whether
audit's kernel count equals the independent one.

    .venv/bin/python benchmarks/trial_real_traces.py DIR [DIR ...]
"""

from __future__ import annotations

import gzip
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from audit.trace import collect as collect_mod  # noqa: E402
from audit.trace.analyze import TraceOptions  # noqa: E402
from audit.trace.collect import KERNEL, collect, collect_fast  # noqa: E402
from audit.trace.reader import FastPathUnsure, TraceError, TraceReader  # noqa: E402


def _independent(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    events = json.loads(data)["traceEvents"]
    kernels = sum(1 for e in events if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == "kernel")
    return len(events), kernels


def _read_by_compiled(path: Path) -> tuple[int, int]:
    """(events the compiled pass read, events left to the other readers)."""
    mine = other = 0
    for batch in TraceReader(path).columns():
        if type(batch) is list:
            other += len(batch)
        else:
            mine += batch.rows  # type: ignore[attr-defined]
    return mine, other


def _timed(fn, *args):
    t = time.perf_counter()
    try:
        got = fn(*args)
    except (FastPathUnsure, TraceError) as e:
        got = e
    return got, time.perf_counter() - t


def main(folders: list[str]) -> int:
    o = TraceOptions()
    marker, cats, ops = o.compiled()[0], o.marker_categories, o.ops_compiled()
    paths = sorted(p for d in folders for p in Path(d).iterdir() if p.name.endswith((".json", ".json.gz")))
    print(f"{'trace':<70} {'events':>9} {'compiled':>9} {'other':>6} {'kernels':>8} {'= json':>6} "
          f"{'= exact':>12} {'compiled s':>10} {'msgspec s':>9} {'exact s':>8}")
    bad = 0
    for path in paths:
        events, kernels = _independent(path)
        mine, other = _read_by_compiled(path)
        collect_mod.COMPILED = True
        compiled, t_c = _timed(collect_fast, TraceReader(path), marker, cats, ops)
        collect_mod.COMPILED = False
        msgspec_got, t_m = _timed(collect_fast, TraceReader(path), marker, cats, ops)
        collect_mod.COMPILED = True
        exact, t_e = _timed(collect, TraceReader(path), marker, cats, ops)
        if isinstance(exact, Exception):
            refused = isinstance(compiled, Exception) and isinstance(msgspec_got, Exception)
            agree = "both refuse" if refused else "DIFFER"
            audit_kernels = "-"
        else:
            agree = "yes, yes" if compiled == exact and msgspec_got == exact else \
                f"{'yes' if compiled == exact else 'NO'}, {'yes' if msgspec_got == exact else 'NO'}"
            audit_kernels = sum(1 for c in exact.g_cat if c == KERNEL)
        same_kernels = "yes" if audit_kernels == kernels else "NO"
        bad += agree not in ("yes, yes", "both refuse") or same_kernels != "yes"
        print(f"{path.name[-70:]:<70} {events:>9,} {mine:>9,} {other:>6,} {kernels:>8,} {same_kernels:>6} "
              f"{agree:>12} {t_c:>10.3f} {t_m:>9.3f} {t_e:>8.3f}")
    print(f"{len(paths)} traces; {bad} where a fast path differs from the exact one or the kernel count from json's")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
