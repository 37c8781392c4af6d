#!/usr/bin/env bash
# The H200 proof of `audit generate` (issue 7): real vLLM 0.26.0 launched by audit on the tiny model.
#
# On the H200 host, from the checkout root, after vLLM is installed per ../shared/device/VLLM.md
# (/tmp/site holds its wheels), with .dev/tiny-llama, .dev/vllm-smoke and .dev/gen-items carried
# (scripts/h200_prepare.sh builds .dev/gen-items; .whl is installed too when carried):
#   bash scripts/h200_generate.sh "$OUT"
# Writes to OUTDIR: h200_generate.log (everything printed) and one .tar.gz per package (`audit bundle`).
#
# Steps (each `audit generate` starts its own server with --launch and stops it at the end):
#   1. MATH-500, 10 items x K=2 (chat endpoint), cap 32 tokens, one re-sample round at 128;
#   2. MMLU-Pro, 9 items x K=2 (2 do not fit the 1024-token context: excluded), cap 32, re-sample at 96;
#   3. (KILL_DEMO=1, default) MATH-500 on the completions endpoint, K=3, killed with SIGKILL after 5 rows,
#      then `audit generate --resume`: the rows from before the kill must come back unchanged;
#   4. audit validate, audit show and audit bundle for each package.
# Without a GPU (to try the script): DRY=1 LAUNCH_PROGRAM="{python} tests/fake_openai_server.py" bash ...
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
MODEL=${MODEL:-.dev/tiny-llama}
ITEMS=${ITEMS:-.dev/gen-items}
WORK=${WORK:-/tmp/audit-gen}
LAUNCH=${LAUNCH:-"--max-model-len 1024 --gpu-memory-utilization 0.2 --enforce-eager"}
PROGRAM=${LAUNCH_PROGRAM:-"{python} -m vllm.entrypoints.openai.api_server"}
mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h200_generate.log") 2>&1
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  dry_env
else
  vllm_env || exit 9
  # The project itself, with no dependencies fetched: pydantic comes with vLLM's wheels in /tmp/site;
  # click, pandas, pyarrow, numpy, scipy, sympy are in the host image.
  install_audit
  if ls .whl/*.whl >/dev/null 2>&1; then
    install_wheels /tmp/audit-site .whl/*.whl || exit 8
  fi
  use_audit_site
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total --format=csv
fi
audit --version || exit 7
for d in "$MODEL" "$ITEMS/math500" "$ITEMS/mmlu_pro"; do [ -e "$d" ] || { echo "missing: $d"; exit 6; }; done
COMMON=(--model "$MODEL" --temperature 0.8 --top-p 0.95 --top-k 50 --seed 1234
        --launch "$LAUNCH" --launch-program "$PROGRAM" --launch-timeout 300)
MATH="$WORK/math500-tiny-llama"
MMLU="$WORK/mmlu_pro-tiny-llama"
KILLED="$WORK/math500-completion-resumed"

step "1. MATH-500: 10 items x K=2, cap 32, one re-sample round at 128"
audit generate --benchmark math500 --items "$ITEMS/math500" "${COMMON[@]}" --samples 2 --concurrency 4 \
  --max-tokens 32 --resample-truncated 1 --resample-budget 128 -o "$MATH" --force
echo "rc=$?"

step "2. MMLU-Pro: 9 items x K=2, cap 32, one re-sample round at 96"
audit generate --benchmark mmlu_pro --items "$ITEMS/mmlu_pro" "${COMMON[@]}" --samples 2 --concurrency 4 \
  --max-tokens 32 --resample-truncated 1 --resample-budget 96 -o "$MMLU" --force
echo "rc=$?"

if [ "${KILL_DEMO:-1}" = 1 ]; then
  step "3. kill -9 mid-run, then --resume (completions endpoint, K=3, cap 400)"
  rm -rf "$KILLED" "$KILLED.work"
  audit generate --benchmark math500 --items "$ITEMS/math500" "${COMMON[@]}" --mode completion --samples 3 \
    --max-tokens 400 -o "$KILLED" &
  kill_after_rows $! "$KILLED.work/journal.jsonl" 5 2400 0.25
  cp "$KILLED.work/journal.jsonl" "$WORK/journal-at-kill.jsonl"
  sleep 5
  python3 - <<'EOF'
import glob, os
left = []
for p in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        cmd = open(p, "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        continue
    if int(p.split("/")[2]) != os.getpid() and ("vllm.entrypoints.openai" in cmd or "fake_openai_server" in cmd):
        left.append(cmd[:120])
print(f"server processes still running 5 s after the kill: {len(left)}", *left, sep="\n  ")
EOF
  audit generate --resume "$KILLED"
  echo "rc=$?"
  resume_check "$WORK/journal-at-kill.jsonl" "$KILLED/responses.jsonl"
fi

step "4. validate, show, bundle"
for p in "$MATH" "$MMLU" "$KILLED"; do
  [ -d "$p" ] || { echo "no package $p"; continue; }
  audit validate "$p"
  audit show "$p"
  audit bundle "$p" -o "$OUTDIR/$(basename "$p").tar.gz"
  python3 - "$p" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
x = m["provenance"]["extra"]
print("hardware", m["provenance"]["hardware"], "| context_window", x["context_window"], "| counts", x["counts"])
print("sampling_check", x["sampling_check"])
for s in x["sessions"]:
    print("session", s["index"], "launch", s.get("launch", {}).get("ready_s"), "s to ready, exit",
          s.get("launch", {}).get("exit_code"), "| server", {k: s["servers"][0][k] for k in ("version", "model", "max_model_len")} if s["servers"] else None)
rows = [json.loads(l) for l in open(sys.argv[1] + "/responses.jsonl")]
shown = rows[:2] + [r for r in rows if r.get("excluded")][:1] + [r for r in rows if r["attempt"]][:1]
for r in [r for i, r in enumerate(shown) if r not in shown[:i]]:
    r = dict(r)
    if r.get("response"):
        r["response"] = r["response"][:60] + "..."
    print(json.dumps(r, ensure_ascii=False)[:600])
EOF
done
ls -la "$OUTDIR"
