#!/usr/bin/env bash
# The H100 run of issue 32, part 2: a model with its own MTP layer, XiaomiMiMo/MiMo-7B-RL's shape (dense BF16,
# `num_nextn_predict_layers: 1`, `model_type: qwen2` because transformers 5.17 does not know `mimo`; vLLM 0.26.0
# picks its MTP drafter from the architecture MiMoForCausalLM) with --load-format dummy (RANDOM weights), served
# by vLLM 0.26.0 on one H100, without speculation (`base`) and with MTP drafting k=3 tokens (`mtp`, vLLM reuses
# the one MTP layer for each of the 3). Each arm is one `audit bench throughput --launch` (its own server):
# 512-token prompts, 256 tokens with ignore_eos, greedy, one request in flight, 1 warm-up, WINDOWS x WINDOW_S,
# GPU counters; `audit bench report` gives per-request acceptance from the stream (tokens per decode step)
# beside the server's spec-decode counters. Random weights make acceptance meaningless as a property of the
# model: what is measured is the counting, the packaging and what MTP costs when its guesses are random.
#
# On the host, from the stage's root (scripts/h100_prepare.sh), after vLLM's wheels are installed:
#   bash scripts/h100_mtp.sh "$OUT"
# Without a GPU: DRY=1 bash scripts/h100_mtp.sh /tmp/h100-mtp-dry (the fake server stands in).
# BUDGET_S (default 540) bounds the script; an arm that would not fit is skipped and says so.
# Writes to OUTDIR: h100_mtp.log, mtp-packages.tar.gz, base.png, mtp.png, server-<arm>.log of a failed arm.
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
OUTDIR=$(mkdir -p "$OUTDIR" && cd "$OUTDIR" && pwd)
BUDGET_S=${BUDGET_S:-540}
WORK=${WORK:-/tmp/h100-mtp}
SHAPE=${SHAPE:-mimo-7b}
MODEL_NAME=${MODEL_NAME:-XiaomiMiMo/MiMo-7B-RL}
PROMPT_TOKENS=${PROMPT_TOKENS:-512}
MAX_TOKENS=${MAX_TOKENS:-256}
K=${K:-3}
ARMS=${ARMS:-"base mtp"}
SERVE=${SERVE:-"--load-format dummy --max-model-len 2048 --gpu-memory-utilization 0.85 --max-num-seqs 4 --no-enable-prefix-caching --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8]}'"}
MTP="--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": $K}'"
exec > >(tee "$OUTDIR/h100_mtp.log") 2>&1
# shellcheck source=scripts/h100_env.sh
. scripts/h100_env.sh
if [ "${DRY:-0}" = 1 ]; then
  WINDOWS=${WINDOWS:-2}; WINDOW_S=${WINDOW_S:-2}; START_S=5
  PROGRAM="{python} tests/fake_openai_server.py"
  FAKE_base='{"token_delay": 0.004}'
  FAKE_mtp="{\"token_delay\": 0.004, \"bundle\": [1, 1, 2, 1], \"spec_k\": $K}"
  HARDWARE=${HARDWARE:-1x NVIDIA H100 80GB HBM3 (DRY)}
else
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-10}; START_S=${START_S:-150}
  PROGRAM="{python} -m vllm.entrypoints.openai.api_server"
  HARDWARE=${HARDWARE:-1x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)}
fi
rm -rf "$WORK"; mkdir -p "$WORK/models"
MODEL="$WORK/models/$SHAPE"
model_dir "$SHAPE" "$MODEL" || { echo "no model folder for $SHAPE or no tokenizer in $TOKENIZER"; exit 6; }
sha256sum "$MODEL"/*.json

arm() {  # NAME EXTRA_SERVER_ARGS
  local name=$1 extra=$2 need budget pkg="$WORK/$1" follow
  need=$(( START_S + 20 + WINDOWS * WINDOW_S + 20 ))
  budget=$(left)
  if [ "$budget" -lt "$need" ]; then
    step "SKIPPED arm $name: $budget s left of the budget, it needs about $need s"; return 3
  fi
  step "arm $name: $extra"
  local fake_var="FAKE_$name" launch="$SERVE $extra"
  if [ "${DRY:-0}" = 1 ]; then launch="$launch --fake-config '${!fake_var}'"; fi
  follow_server_log "$WORK" "$WORK/server-$name.log" 1200
  follow=$!
  timeout --signal=TERM --kill-after=20 "$(( budget - 5 ))" audit bench throughput --launch "$launch" \
    --launch-program "$PROGRAM" --launch-timeout "$(( budget - 40 - WINDOWS * WINDOW_S ))" \
    --model "$MODEL" --arm "$name" -o "$pkg" --prompt-tokens "$PROMPT_TOKENS" --max-tokens "$MAX_TOKENS" \
    --ignore-eos --windows "$WINDOWS" --window-s "$WINDOW_S" --warmup-requests 1 --force \
    --model-name "$MODEL_NAME" --weights random --run "$RUN" --hardware "$HARDWARE"
  local rc=$?
  sleep 1; kill "$follow" 2>/dev/null; wait "$follow" 2>/dev/null
  echo "rc=$rc"
  if [ "$rc" != 0 ]; then
    cp "$WORK/server-$name.log" "$OUTDIR/server-$name.log" 2>/dev/null
    server_errors "$WORK/server-$name.log"
    return 1
  fi
  audit bench report "$pkg" --png "$OUTDIR/$name.png"
}

for a in $ARMS; do
  case $a in
    base) arm base "" ;;
    mtp) arm mtp "$MTP" ;;
  esac
done

step "compare, validate, pack"
[ -d "$WORK/mtp" ] && [ -d "$WORK/base" ] && audit bench compare "$WORK/mtp" "$WORK/base"
validated "$WORK" base base.telemetry mtp mtp.telemetry
[ "${#pkgs[@]}" -gt 0 ] && tar czf "$OUTDIR/mtp-packages.tar.gz" -C "$WORK" "${pkgs[@]}"
ls -la "$OUTDIR"
step "done"
