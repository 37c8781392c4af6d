#!/usr/bin/env bash
# The H200 proof of `audit floor` (issue 14): header-only checkpoints of real shapes, floors with the
# bandwidth NVML reports, each re-checked and bundled.
#
# audit needs pydantic on the host (nvidia-ml-py, click, pandas, pyarrow are in the host image). Either
# install vLLM's wheels first (../shared/device/VLLM.md), or on your machine, once:
#   PREPARE=1 bash scripts/h200_floor.sh        # pydantic's 4 wheels (vLLM's pins, 2.8 MB) into .whl/
# and carry .whl. Then on the H200 host, from the checkout root:
#   bash scripts/h200_floor.sh "$OUT"
# Environment: GPUS (default 1: NVML devices 0..GPUS-1, and the GPUs the bytes are split over),
# CONTEXT (default 0: tokens in the KV cache; set it to the mean context of the decode you compare
# with), HBM_TBPS (use this bandwidth instead of NVML). Without a GPU, to try it: DRY=1 bash ... (uses
# .venv and HBM_TBPS=4.8).
#
# Shapes (scripts/shapes/*.config.json, published values):
#   llama-3.1-8b                 dense BF16: the shape to serve with vLLM --load-format dummy and compare
#   qwen3-30b-a3b                MoE, 128 experts, 8 per token, BF16 as published
#   qwen3-30b-a3b-fp8-experts    the same with FP8 block-quantized experts, BF16 attention and router
#                                (its quantization_config lists them in ignored_layers, so vLLM builds the same mix)
#   deepseek-v3                  MLA, FP8 with block scales everywhere but embeddings, head, router, norms
#   deepseek-v3-bf16-attention   the same with BF16 attention (--dtype-mix attention=BF16)
# Writes to OUTDIR: h200_floor.log (everything printed, the NVML readings first) and floor-<shape>.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${PREPARE:-0}" = 1 ]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d .whl pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  ls -la .whl
  exit
fi
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
GPUS=${GPUS:-1}
CONTEXT=${CONTEXT:-0}
WORK=${WORK:-/tmp/audit-floor}
mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h200_floor.log") 2>&1
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  dry_env .venv/bin/python
  HBM_TBPS=${HBM_TBPS:-4.8}
else
  PY=python3
  # shellcheck disable=SC1091
  [ -f .dev/vllm-smoke/env.sh ] && . .dev/vllm-smoke/env.sh
  install_audit
  if ! python3 -c "import pydantic" 2>/dev/null && ls .whl/pydantic*.whl >/dev/null 2>&1; then
    install_wheels /tmp/audit-site .whl/*.whl || exit 8
  fi
  use_audit_site
  python3 -c "import pydantic, pynvml; print('pydantic', pydantic.VERSION, 'nvidia-ml-py ok')" \
    || { echo "pydantic or nvidia-ml-py missing: PREPARE=1 and carry .whl, or install vLLM's wheels"; exit 9; }
  nvidia-smi --query-gpu=index,name,memory.total,clocks.max.memory,clocks.mem --format=csv
  nvidia-smi -q -d CLOCK | sed -n '1,40p'
  nvml_bandwidth x1
fi
audit --version || exit 7
if [ -n "${HBM_TBPS:-}" ]; then BW=(--hbm-tbps "$HBM_TBPS"); else BW=(--from-nvml); fi

public_name() {  # what every floor package names as its model (its config's sha256 tells the variants apart)
  case $1 in
    llama-3.1-8b) echo meta-llama/Llama-3.1-8B ;; qwen3-30b-a3b*) echo Qwen/Qwen3-30B-A3B ;;
    deepseek-v3*) echo deepseek-ai/DeepSeek-V3 ;; *) echo "unknown/$1" ;;
  esac
}
[ -n "${HBM_TBPS:-}" ] && HARDWARE=${HARDWARE:-bandwidth given: $HBM_TBPS TB/s}

run() {  # NAME CONFIG [--dtype-mix MIX]
  local name=$1 config=$2; shift 2
  step "$name"
  rm -rf "$WORK/ckpt/$name" "$WORK/$name"
  "$PY" scripts/make_header_only_checkpoint.py "$config" "$WORK/ckpt/$name" "$@" || return 1
  audit floor "$WORK/ckpt/$name" "${BW[@]}" --gpus "$GPUS" --context "$CONTEXT" -o "$WORK/$name" \
    --id "floor-$name" --model-name "$(public_name "$name")" --engine "${ENGINE:-vllm==0.26.0}" \
    --run "${RUN:-h200-floor-$(date -u +%Y%m%d)}" ${HARDWARE:+--hardware "$HARDWARE"} || return 1
  audit floor-check "$WORK/$name" || return 1
  audit bundle "$WORK/$name" -o "$OUTDIR/floor-$name.tar.gz" && ls -la "$OUTDIR/floor-$name.tar.gz"
}

failed=0
run llama-3.1-8b scripts/shapes/llama-3.1-8b.config.json || failed=1
run qwen3-30b-a3b scripts/shapes/qwen3-30b-a3b.config.json || failed=1
run qwen3-30b-a3b-fp8-experts scripts/shapes/qwen3-30b-a3b-fp8-experts.config.json || failed=1
run deepseek-v3 scripts/shapes/deepseek-v3.config.json || failed=1
run deepseek-v3-bf16-attention scripts/shapes/deepseek-v3.config.json --dtype-mix attention=BF16 || failed=1
step "done: failed=$failed"
exit $failed
