#!/usr/bin/env bash
# Issue 22 on one H200: the seed's model class (MoE + native MTP head, linear attention with recurrent
# state, FP8 experts beside BF16 projections), with vLLM 0.26.0 and --load-format dummy.
#
# Before, on this machine: bash scripts/h200_bench_prepare.sh; python3 scripts/h200_moe_models.py .dev/moe
# (config.json per shape; copy .dev/llama-3.1-8b-shape/tokenizer* into .dev/moe/tokenizer/), and the two
# wheels VLLM.md's set lacks for any quantized model (vLLM 0.26.0's quantization package imports
# compressed_tensors at module level, even for `quant_method: fp8`; compressed-tensors needs loguru):
#   python3 -m pip download --no-deps -d .dev/whl compressed-tensors==0.17.0 loguru==0.7.3
# On the H200 host, from the checkout root, after vLLM's wheels are installed (/tmp/site, VLLM.md),
# carrying .dev/moe, .dev/whl and .dev/vllm-smoke:
#   bash scripts/h200_moe.sh "$OUT"
# DeepGEMM is off (VLLM_USE_DEEP_GEMM=0): vLLM 0.26.0 picks its vendored DeepGEMM for FP8 block linears on
# Hopper and JIT-compiles 1,253 kernels at start, which failed here ("NVCC compilation failed") after
# 2+ minutes; without it vLLM uses CUTLASS block-scaled FP8 GEMMs and the Triton FP8 MoE.
# Seen on one H200 (2026-12-01): a cold server start takes about 4.5 minutes (imports 100 s, torch.compile
# 67-74 s, Triton JITs in the first profile run 120 s); with the caches of an earlier start, 115 s. One
# arm per call fits the 10-minute limit cold; ONLY_BASE=1 runs the base arm alone.
# Shapes, tried in issue 22's order until one serves (each failure is logged with the server's log):
#   1. qwen3-next-80b-a3b-fp8   2. glm-4.5-air-fp8   3. qwen3-30b-a3b (base arm) + mimo-7b (MTP arm)
# Arms (audit bench throughput --launch; each starts its own server): `mtp` (--speculative-config
# {"method":"mtp","num_speculative_tokens":3}) first, then `base` (no speculation); the same server flags
# otherwise: CUDA graphs (capture sizes 1-8 only, to start sooner), no prefix caching (Qwen3-Next's MTP
# refuses vLLM's Mamba prefix-cache mode 'all'), Triton GDN prefill (FlashInfer is not shipped), one
# request in flight, PROMPT_TOKENS in / MAX_TOKENS out with ignore_eos, 1 warm-up, WINDOWS x WINDOW_S,
# NVML at 10 Hz and GPM every 0.5 s. BUDGET_S (default 560) bounds the whole script.
# Writes to OUTDIR: h200_moe.log, server-<shape>-<arm>.log, moe-packages.tar.gz, <arm>.png.
# Without a GPU: DRY=1 bash scripts/h200_moe.sh /tmp/moe-dry (the fake server stands in).
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
BUDGET_S=${BUDGET_S:-560}
WORK=${WORK:-/tmp/audit-moe}
SHAPES_DIR=${SHAPES_DIR:-.dev/moe}
SHAPES=${SHAPES:-"qwen3-next-80b-a3b-fp8 glm-4.5-air-fp8 qwen3-30b-a3b+mimo-7b"}
PROMPT_TOKENS=${PROMPT_TOKENS:-512}
MAX_TOKENS=${MAX_TOKENS:-256}
K=${K:-3}
SERVE=${SERVE:-"--load-format dummy --max-model-len 2048 --gpu-memory-utilization 0.92 --max-num-seqs 4 --no-enable-prefix-caching --gdn-prefill-backend triton --compilation-config '{\"cudagraph_capture_sizes\": [1, 2, 4, 8]}'"}
MTP="--speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": $K}'"
if [ "${DRY:-0}" = 1 ]; then
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-3}; START_S=5
  PROGRAM="{python} tests/fake_openai_server.py"
  FAKE_base='{"token_delay": 0.004}'
  FAKE_mtp=${FAKE_mtp:-"{\"token_delay\": 0.004, \"bundle\": [4, 4, 2, 1], \"spec_k\": $K}"}
else
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-10}; START_S=${START_S:-100}
  PROGRAM="{python} -m vllm.entrypoints.openai.api_server"
fi
mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h200_moe.log") 2>&1
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  dry_env
else
  # shellcheck disable=SC1091
  . .dev/vllm-smoke/env.sh
  if ls .dev/whl/*.whl >/dev/null 2>&1; then
    install_wheels /tmp/site .dev/whl/*.whl || exit 9
  fi
  export VLLM_USE_DEEP_GEMM=${VLLM_USE_DEEP_GEMM:-0} VLLM_MOE_USE_DEEP_GEMM=${VLLM_MOE_USE_DEEP_GEMM:-0} \
    VLLM_DEEP_GEMM_WARMUP=${VLLM_DEEP_GEMM_WARMUP:-skip}
  vllm_version || exit 9
  install_audit
  use_audit_site
  PY=python3
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,power.limit,clocks.max.sm,clocks.max.memory --format=csv
fi
audit --version || exit 7
# TOKENIZER (default $SHAPES_DIR/tokenizer, when there): a tokenizer folder copied into every shape
TOKENIZER=${TOKENIZER:-$SHAPES_DIR/tokenizer}
for d in "$SHAPES_DIR"/*/; do
  [ -f "$d/config.json" ] || continue
  [ -f "$d/tokenizer_config.json" ] || [ ! -d "$TOKENIZER" ] || cp "$TOKENIZER"/tokenizer* "$d"
  [ -f "$d/tokenizer.json" ] || [ ! -f "$d/tokenizer.json.gz" ] || gunzip -kf "$d/tokenizer.json.gz"
done
sha256sum "$SHAPES_DIR"/*/config.json "$SHAPES_DIR"/*/tokenizer.json 2>/dev/null

public_name() {  # the public name of each shape (what every package names as its subject)
  case $1 in
    qwen3-next-80b-a3b-fp8) echo Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 ;; glm-4.5-air-fp8) echo zai-org/GLM-4.5-Air-FP8 ;;
    qwen3-30b-a3b) echo Qwen/Qwen3-30B-A3B ;; mimo-7b) echo XiaomiMiMo/MiMo-7B-RL ;; *) echo "unknown/$1" ;;
  esac
}
[ "${DRY:-0}" = 1 ] && HARDWARE=${HARDWARE:-1x NVIDIA H200 (DRY)}

# arm SHAPE NAME EXTRA: one audit bench throughput run; 0 when it wrote its package
arm() {
  local shape=$1 name=$2 extra=$3 need budget pkg="$WORK/$2" follow
  need=$(( START_S + 20 + WINDOWS * WINDOW_S + 20 ))
  budget=$(left)
  if [ "$budget" -lt "$need" ]; then
    step "SKIPPED arm $name of $shape: $budget s left of the budget, it needs about $need s"; return 3
  fi
  step "arm $name of $shape: $extra"
  local fake_var="FAKE_$name" launch="$SERVE $extra"
  if [ "${DRY:-0}" = 1 ]; then launch="$launch --fake-config '${!fake_var}'"; fi
  rm -rf "$pkg" "$pkg.telemetry" "$WORK"/.audit-bench-*
  follow_server_log "$WORK" "$OUTDIR/server-$shape-$name.log" 400
  follow=$!
  timeout --signal=TERM --kill-after=20 "$(( budget - 5 ))" audit bench throughput --launch "$launch" \
    --launch-program "$PROGRAM" --launch-timeout "$(( budget - 30 - WINDOWS * WINDOW_S ))" \
    --model "$WORK/models/$shape" --arm "$name" -o "$pkg" --prompt-tokens "$PROMPT_TOKENS" \
    --max-tokens "$MAX_TOKENS" --ignore-eos --windows "$WINDOWS" --window-s "$WINDOW_S" --warmup-requests 1 --force \
    --model-name "$(public_name "$shape")" --weights random --run "${RUN:-h200-moe-$(date -u +%Y%m%d)}" \
    ${HARDWARE:+--hardware "$HARDWARE"}
  local rc=$?
  sleep 1; kill "$follow" 2>/dev/null; wait "$follow" 2>/dev/null
  echo "rc=$rc"
  if [ "$rc" != 0 ]; then
    echo "--- server log of the failed arm ($shape $name), errors:"
    server_errors "$OUTDIR/server-$shape-$name.log"
    return 1
  fi
  audit bench report "$pkg" --png "$OUTDIR/$name.png"
  return 0
}

mkdir -p "$WORK/models"; rm -rf "$WORK/models"/*
chosen=""
for s in $SHAPES; do
  base_shape=${s%%+*}; mtp_shape=${s##*+}
  for m in $base_shape $mtp_shape; do
    rm -rf "$WORK/models/$m"; cp -r "$SHAPES_DIR/$m" "$WORK/models/$m" || { echo "missing $SHAPES_DIR/$m"; exit 6; }
  done
  if [ "${ONLY_BASE:-0}" = 1 ]; then  # a later call for the base arm alone (the mtp arm ran before)
    arm "$base_shape" base "" && chosen=$s; break
  fi
  if arm "$mtp_shape" mtp "$MTP"; then
    chosen=$s
    arm "$base_shape" base "" || echo "the base arm of $base_shape did not run"
    break
  fi
  step "shape $s did not run with MTP k=$K: trying the next one"
done
[ -n "$chosen" ] || { step "no shape ran"; }

step "compare and validate"
[ -d "$WORK/mtp" ] && [ -d "$WORK/base" ] && audit bench compare "$WORK/mtp" "$WORK/base"
validated "$WORK" mtp mtp.telemetry base base.telemetry
[ "${#pkgs[@]}" -gt 0 ] && tar czf "$OUTDIR/moe-packages.tar.gz" -C "$WORK" "${pkgs[@]}"
echo "chosen shape: ${chosen:-none}"
ls -la "$OUTDIR"
step "done"
