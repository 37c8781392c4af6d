#!/usr/bin/env bash
# The H100 run of issue 32, part 1: one vLLM 0.26.0 server of Qwen3-30B-A3B's shape in FP8 (128x128 block
# scales, Qwen/Qwen3-30B-A3B-FP8's quantization) with --load-format dummy (full-size RANDOM weights, about
# 31 GB: fits 78 GiB), on one H100, and on that one server, in order:
#   1. `audit bench throughput --server` (512-token prompts, 256 tokens with ignore_eos, greedy, one request in
#      flight, 1 warm-up, WINDOWS x WINDOW_S, GPU counters at 10 Hz, GPM every 0.5 s), then `vllm bench serve`
#      against the same server (random dataset of the same lengths, --max-concurrency 1, ignore_eos, greedy),
#      recorded as the package's anchor: `audit bench report` prints ours / its;
#   2. `audit generate` (MATH-500, 10 items x K=3, completions endpoint, cap 200, the server's request log
#      checked) killed with SIGKILL after 5 journaled rows, then `audit generate --resume`;
#   3. one request of TOKENS decode tokens between POST /start_profile and /stop_profile (vLLM's torch profiler),
#      summarised by `audit trace` between vLLM's execute_context_ markers: the decode steps
#      (--step-filter) with the MoE kernels labelled per position, and every step.
# Every package names its subject: Qwen/Qwen3-30B-A3B-FP8, the served config's sha256, vLLM's version, the
# H100, random weights, the run (RUN).
#
# Before, on this machine: bash scripts/h100_prepare.sh (the stage) and ../shared/device/prepare-vllm-wheels
# OUTDIR 40. On the host, from the stage's root, in the call that carries the last part of the wheels:
#   bash .dev/vllm-smoke/install-on-device.sh PART || exit 9; bash scripts/h100_moe.sh "$OUT"
# Without a GPU: DRY=1 bash scripts/h100_moe.sh /tmp/h100-moe-dry (the fake server and `vllm bench serve`
# stand-in of tests/, a synthetic trace). BUDGET_S (default 520) bounds the script; a step that would not fit
# is skipped and says so.
# Writes to OUTDIR: h100_moe.log, moe-packages.tar.gz (throughput + telemetry, responses, two profiles),
# moe-logs.tar.gz (server log, the journal at the kill), moe.png.
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
OUTDIR=$(mkdir -p "$OUTDIR" && cd "$OUTDIR" && pwd)
BUDGET_S=${BUDGET_S:-520}
WORK=${WORK:-/tmp/h100-moe}
SHAPE=${SHAPE:-qwen3-30b-a3b-fp8}
MODEL_NAME=${MODEL_NAME:-Qwen/Qwen3-30B-A3B-FP8}
PORT=${PORT:-8021}
PROMPT_TOKENS=${PROMPT_TOKENS:-512}
MAX_TOKENS=${MAX_TOKENS:-256}
ANCHOR_PROMPTS=${ANCHOR_PROMPTS:-12}
TOKENS=${TOKENS:-32}
MARKER='^execute_context_'
DECODE='_context_0\(0\)_generation_[1-9]'
MOE='moe=fused_moe|moe_align|moe_sum|topk|expert'
SERVE=(--load-format dummy --max-model-len 2048 --gpu-memory-utilization 0.85 --max-num-seqs 8
       --no-enable-prefix-caching --compilation-config '{"cudagraph_capture_sizes": [1, 2, 4, 8]}'
       --enable-log-requests)
exec > >(tee "$OUTDIR/h100_moe.log") 2>&1
# shellcheck source=scripts/h100_env.sh
. scripts/h100_env.sh
if [ "${DRY:-0}" = 1 ]; then
  WINDOWS=${WINDOWS:-2}; WINDOW_S=${WINDOW_S:-2}
  PROGRAM=("$PY" tests/fake_openai_server.py --fake-config '{"token_delay": 0.004}')
  BENCH_SERVE="{python} tests/fake_vllm_bench_serve.py"
  HARDWARE=${HARDWARE:-1x NVIDIA H100 80GB HBM3 (DRY)}
else
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-10}
  PROGRAM=("$PY" -m vllm.entrypoints.openai.api_server)
  BENCH_SERVE="{python} -m vllm.entrypoints.cli.main"
  HARDWARE=${HARDWARE:-1x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)}
fi
rm -rf "$WORK"; mkdir -p "$WORK/models" "$WORK/prof"
PROF="$WORK/prof"
MODEL="$WORK/models/$SHAPE"
model_dir "$SHAPE" "$MODEL" || { echo "no model folder for $SHAPE or no tokenizer in $TOKENIZER"; exit 6; }
sha256sum "$MODEL"/*.json
SUBJECT=(--model-name "$MODEL_NAME" --model-config "$MODEL/config.json" --weights random --run "$RUN"
         --hardware "$HARDWARE")
URL="http://127.0.0.1:$PORT"

step "server: $MODEL_NAME's shape, FP8, dummy weights, CUDA graphs 1-8, profiler on"
PROFCFG="{\"profiler\":\"torch\",\"torch_profiler_dir\":\"$PROF\",\"torch_profiler_with_stack\":false,\"torch_profiler_dump_cuda_time_total\":false,\"ignore_frontend\":true}"
export VLLM_RPC_TIMEOUT=1800000
"${PROGRAM[@]}" --model "$MODEL" --port "$PORT" "${SERVE[@]}" --profiler-config "$PROFCFG" > "$WORK/server.log" 2>&1 &
spid=$!
if ! wait_ready "$URL" "$spid" $(( $(left) - 200 )); then
  step "FAILED: the server did not come up"
  grep -nE "Error|error:|Traceback|raise |not supported|out of memory" "$WORK/server.log" | tail -n 30
  kill -INT "$spid" 2>/dev/null; sleep 5; kill -9 "$spid" 2>/dev/null
  cp "$WORK/server.log" "$OUTDIR/server-moe.log"
  exit 5
fi
step "server ready"
grep -E "Model loading took|Available KV cache|Graph capturing finished|torch.compile takes" "$WORK/server.log" | tail -n 6

step "1. audit bench throughput on the server, then vllm bench serve on it (c=1, same lengths and cap)"
timeout --signal=TERM --kill-after=20 "$(( $(left) - 150 ))" audit bench throughput --server "$URL" --model "$MODEL" \
  --arm moe -o "$WORK/moe" --prompt-tokens "$PROMPT_TOKENS" --max-tokens "$MAX_TOKENS" --ignore-eos \
  --windows "$WINDOWS" --window-s "$WINDOW_S" --warmup-requests 1 "${SUBJECT[@]}" --force \
  --anchor "$BENCH_SERVE bench serve --backend vllm --base-url {url} --model {model} --tokenizer {model}
    --dataset-name random --random-input-len {prompt_tokens} --random-output-len {max_tokens}
    --random-range-ratio 0 --num-prompts $ANCHOR_PROMPTS --max-concurrency 1 --request-rate inf --ignore-eos
    --temperature 0 --num-warmups 2 --seed 0 --disable-tqdm --save-result --save-detailed
    --result-dir {result_dir} --result-filename {result_name}" --anchor-timeout 150
echo "rc=$?"
if [ -d "$WORK/moe" ]; then
  audit bench report "$WORK/moe" --png "$OUTDIR/moe.png"
  [ -f "$WORK/moe/anchor.log" ] && tail -n 30 "$WORK/moe/anchor.log"
fi

GEN="$WORK/math500-$SHAPE"
if [ "$(left)" -gt 140 ]; then
  step "2. audit generate (MATH-500, 10 x K=3, completions, cap 200) killed with SIGKILL, then --resume"
  audit generate --benchmark math500 --items .dev/h100/items/math500 --server "$URL" --model "$MODEL" \
    --server-log "$WORK/server.log" --mode completion --samples 3 --max-tokens 200 --temperature 0.8 --top-p 0.95 \
    --top-k 50 --seed 1234 --concurrency 4 --hardware "$HARDWARE" -o "$GEN" &
  kill_after_rows $! "$GEN.work/journal.jsonl" 5 1200 0.1
  cp "$GEN.work/journal.jsonl" "$WORK/journal-at-kill.jsonl"
  audit generate --resume "$GEN"
  echo "rc=$?"
  if [ -f "$GEN/responses.jsonl" ]; then
    resume_check "$WORK/journal-at-kill.jsonl" "$GEN/responses.jsonl"
    audit validate "$GEN" && audit show "$GEN"
  fi
else
  step "SKIPPED 2. audit generate: $(left) s left"
fi

if [ "$(left)" -gt 70 ]; then
  step "3. profiled: one request of $TOKENS decode tokens"
  if [ "${DRY:-0}" = 1 ]; then
    "$PY" - "$PROF" <<'EOF' || exit 6
import sys
sys.path.insert(0, ".")
from pathlib import Path
from tests.trace_builders import TraceBuilder
b = TraceBuilder(device=0)
names = ["execute_context_1(512)_generation_0(0)"] + ["execute_context_0(0)_generation_1(1)"] * 8
for k, name in enumerate(names):
    t0 = 1_000_000.0 + 10_000.0 * k
    b.marker(name, t0, dur=2_000.0)
    kernels = [(f"layer_kernel_{i}", t0 + 3000 + 20 * i, 15.0) for i in range(8)]
    kernels[2] = ("fused_moe_kernel", t0 + 3040, 30.0)
    if k == 0:
        for name_, ts, dur in kernels:
            b.kernel(name_, t0 + 100, ts, dur)
    else:
        b.graph(t0 + 100, kernels)
b.marker("execute_context_0(0)_generation_0(0)", 1_000_000.0 + 100_000.0, dur=2_000.0)
b.write(Path(sys.argv[1]) / "rank0.1796000000000000000.pt.trace.json.gz")
EOF
  else
    curl -sf -X POST "$URL/start_profile" && echo "start_profile ok"
    curl -sf "$URL/v1/completions" -H 'content-type: application/json' \
      -d "{\"model\":\"$MODEL\",\"prompt\":\"The capital of France is\",\"max_tokens\":$TOKENS,\"temperature\":0,\"ignore_eos\":true}" \
      | "$PY" -c "import json,sys; print('usage', json.load(sys.stdin)['usage'])"
    curl -sf -X POST "$URL/stop_profile" && echo "stop_profile ok"
    for _ in $(seq 1 60); do ls "$PROF"/*rank0.*.pt.trace.json* >/dev/null 2>&1 && break; sleep 1; done
    sleep 3
  fi
  ls -la "$PROF"
  f=$(ls "$PROF"/*rank0.*.pt.trace.json* 2>/dev/null | head -1)
  if [ -n "$f" ]; then
    audit trace "$f" --step-marker "$MARKER" --step-filter "$DECODE" --collective "$MOE" "${SUBJECT[@]}" \
      --engine "$ENGINE" -o "$WORK/profile-decode" --force
    echo "rc=$?"
    audit trace "$f" --step-marker "$MARKER" "${SUBJECT[@]}" --engine "$ENGINE" -o "$WORK/profile-all-steps" --force \
      > "$WORK/profile-all-steps.txt"
    echo "rc=$?"; sed -n 1,12p "$WORK/profile-all-steps.txt"
  else
    echo "no rank-0 trace file"
  fi
else
  step "SKIPPED 3. the profile: $(left) s left"
fi

step "server stop"
kill -INT "$spid"; for _ in $(seq 1 30); do kill -0 "$spid" 2>/dev/null || break; sleep 1; done
kill -9 "$spid" 2>/dev/null; wait "$spid"; echo "server exit $?"

step "validate and pack"
validated "$WORK" moe moe.telemetry "math500-$SHAPE" profile-decode profile-all-steps
for p in "${pkgs[@]}"; do
  python3 - "$WORK/$p/manifest.json" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
print(m["package_id"], m["kind"], "schema_version", m["schema_version"], "| subject", m["provenance"].get("subject"))
EOF
done
[ "${#pkgs[@]}" -gt 0 ] && tar czf "$OUTDIR/moe-packages.tar.gz" -C "$WORK" "${pkgs[@]}" \
  $(cd "$WORK" && ls profile-all-steps.txt 2>/dev/null)
tar czf "$OUTDIR/moe-logs.tar.gz" -C "$WORK" server.log $(cd "$WORK" && ls journal-at-kill.jsonl 2>/dev/null)
ls -la "$OUTDIR"
step "done"
