"""Wall time, CPU time and peak RSS of a command run as a fresh process (shared by the benchmarks)."""

from __future__ import annotations

import subprocess
import sys

# A small launcher forks the command, so the child's peak RSS does not start from the
# benchmark's own (a forked child inherits its parent's resident pages until exec).
_LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss, os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime)
"""


def measure(cmd: list[str], ok_codes: tuple[int, ...] = (0,)) -> tuple[float, float, int, float]:
    """(wall seconds, peak RSS in MB, exit code, CPU seconds); any exit code outside `ok_codes` stops the run."""
    out = subprocess.run([sys.executable, "-c", _LAUNCHER, *cmd], capture_output=True, text=True, check=False)
    try:
        wall, rss_kb, code, cpu = out.stdout.split()
    except ValueError:
        raise SystemExit(f"{' '.join(cmd)}: launcher failed: {out.stderr}") from None
    if int(code) not in ok_codes:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {out.stderr}")
    return float(wall), int(rss_kb) / 1024, int(code), float(cpu)
