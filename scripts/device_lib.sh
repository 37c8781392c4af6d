# Shell functions of the device runs, sourced by every scripts/h200_*.sh and (through scripts/h100_env.sh) every
# scripts/h100_*.sh but h100_judge.sh, from the checkout (or staged copy) root: one copy of each step they share.
# Functions only: sourcing it runs nothing. tests/test_device_scripts.py checks that no script defines them again.

# step MESSAGE: a heading in the log, with the UTC time and, when the script set START, the seconds since.
step() {
  echo
  if [ -n "${START:-}" ]; then
    echo "=== $* (+$(( $(date +%s) - START )) s, $(date -u +%H:%M:%S) UTC)"
  else
    echo "=== $* ($(date -u +%H:%M:%S) UTC)"
  fi
}

# left: seconds left of the script's BUDGET_S, counted from START.
left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

# dry_env [PY]: DRY=1's environment: this checkout's .venv first on PATH; PY its python (default `python`).
dry_env() {
  export PATH="$PWD/.venv/bin:$PATH"
  PY=${1:-python}
}

# vllm_version: python's and vLLM's versions (after .dev/vllm-smoke/env.sh put /tmp/site on the path); 1 without vLLM.
vllm_version() {
  python3 -c "import sys, vllm; print('python', sys.version.split()[0], 'vllm', vllm.__version__)"
}

# vllm_env: vLLM's environment on the host (../shared/device/VLLM.md), then vllm_version.
vllm_env() {
  # shellcheck disable=SC1091
  . .dev/vllm-smoke/env.sh
  vllm_version
}

# install_audit: audit itself from this tree into /tmp/audit-site, no dependency fetched (the host image and
# vLLM's wheels hold them); exits 8 when pip fails. use_audit_site puts it on the paths.
install_audit() {
  rm -rf /tmp/audit-site
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/audit-site . \
    || exit 8
}

# use_audit_site [DIR]: /tmp/audit-site (then DIR, when given) first on PYTHONPATH, its bin first on PATH.
use_audit_site() {
  export PYTHONPATH="/tmp/audit-site${1:+:$1}:${PYTHONPATH:-}" PATH="/tmp/audit-site/bin:$PATH"
}

# install_wheels TARGET WHEEL...: local wheels into TARGET, no index, no dependencies.
install_wheels() {
  local target=$1; shift
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$target" "$@"
}

# nvml_bandwidth [x1]: each NVML device's bus width and maximum memory clock, and the bandwidth they give
# (x2 for double data rate; with x1, the single-rate figure too), as `audit floor --from-nvml` reads them.
nvml_bandwidth() {
  python3 - "${1:-}" <<'EOF'
import sys

import pynvml
pynvml.nvmlInit()
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    bits = pynvml.nvmlDeviceGetMemoryBusWidth(h)
    mhz = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)
    x1 = f", x1 = {bits / 8 * mhz * 1e6 / 1e12:.4f} TB/s" if sys.argv[1] == "x1" else ""
    print(f"NVML device {i}: {pynvml.nvmlDeviceGetName(h)}, bus {bits} bits, max memory clock {mhz} MHz, "
          f"x2 = {bits / 8 * mhz * 1e6 * 2 / 1e12:.4f} TB/s{x1}")
pynvml.nvmlShutdown()
EOF
}

# wait_ready URL PID TRIES: 0 once URL/health answers (one try a second), 1 when PID exits or TRIES run out.
wait_ready() {
  local url=$1 pid=$2 tries=$3
  for _ in $(seq 1 "$tries"); do
    curl -sf "$url/health" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}

# kill_after_rows PID JOURNAL ROWS TRIES PAUSE: SIGKILL the `audit generate` PID once JOURNAL holds ROWS rows
# (looked at TRIES times, PAUSE seconds apart, or until it exits), then keep a copy of the journal as it was.
kill_after_rows() {
  local pid=$1 journal=$2 rows=$3 tries=$4 pause=$5 n
  for _ in $(seq 1 "$tries"); do
    n=$(cat "$journal" 2>/dev/null | wc -l)
    [ "$n" -ge "$rows" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep "$pause"
  done
  kill -9 "$pid"
  wait "$pid"
  echo "audit killed (rc=$?) with $(wc -l < "$journal") rows journaled"
}

# resume_check JOURNAL RESPONSES: how many rows journaled before the kill came back unchanged after --resume.
resume_check() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
before = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
after = [json.loads(l) for l in open(sys.argv[2])]
final = {(r["item_id"], r["sample"], r["attempt"]): r for r in after}
same = sum(final.get((r["item_id"], r["sample"], r["attempt"])) == r for r in before)
print(f"resume check: {len(before)} rows before the kill, {same} of them unchanged in the package; "
      f"{len(after)} rows, {len(final)} distinct keys")
EOF
}

# follow_server_log WORK DEST TRIES: in the background, copy the server log of the `audit bench` run in WORK
# to DEST as it grows (the log lives in audit's work folder, which a failed run removes); its PID is $!.
follow_server_log() {
  local work=$1 dest=$2 tries=$3
  ( for _ in $(seq 1 "$tries"); do f=$(ls "$work"/.audit-bench-*/server.log 2>/dev/null | head -1)
      [ -n "$f" ] && exec tail -n +1 -f "$f" > "$dest"; sleep 0.25; done ) &
}

# server_errors LOG: the error lines of a failed arm's server log (warnings left out), the last 25.
server_errors() {
  grep -nE "Error|error:|Traceback|raise |NotImplemented|not supported|out of memory" "$1" | grep -v WARNING \
    | tail -n 25
}

# validated WORK NAME...: `audit validate` each package WORK/NAME that exists; the names that pass in `pkgs`.
validated() {
  local work=$1 p; shift
  pkgs=()
  for p in "$@"; do
    [ -d "$work/$p" ] && audit validate "$work/$p" && pkgs+=("$p")
  done
}
