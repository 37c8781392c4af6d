#!/usr/bin/env bash
# The H200 proof of `audit floor` (issue 14): header-only checkpoints of real shapes, floors with the
# bandwidth NVML reports, each re-checked and bundled.
#
# On the H200 host, from the checkout root (after vLLM's wheels are installed per
# ../shared/device/VLLM.md, which brings pydantic; nvidia-ml-py is in the host image):
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
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
GPUS=${GPUS:-1}
CONTEXT=${CONTEXT:-0}
WORK=${WORK:-/tmp/audit-floor}
mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h200_floor.log") 2>&1
step() { echo; echo "=== $* ($(date -u +%H:%M:%S) UTC)"; }

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  export PATH="$PWD/.venv/bin:$PATH"
  PY=.venv/bin/python
  HBM_TBPS=${HBM_TBPS:-4.8}
else
  PY=python3
  # shellcheck disable=SC1091
  [ -f .dev/vllm-smoke/env.sh ] && . .dev/vllm-smoke/env.sh
  python3 -c "import pydantic, pynvml; print('pydantic', pydantic.VERSION)" \
    || { echo "pydantic or nvidia-ml-py missing: install vLLM's wheels first (../shared/device/VLLM.md)"; exit 9; }
  rm -rf /tmp/audit-site
  python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --target /tmp/audit-site . \
    || exit 8
  export PYTHONPATH="/tmp/audit-site:${PYTHONPATH:-}" PATH="/tmp/audit-site/bin:$PATH"
  nvidia-smi --query-gpu=index,name,memory.total,clocks.max.memory,clocks.mem --format=csv
  nvidia-smi -q -d CLOCK | sed -n '1,40p'
  python3 - <<'EOF'
import pynvml
pynvml.nvmlInit()
for i in range(pynvml.nvmlDeviceGetCount()):
    h = pynvml.nvmlDeviceGetHandleByIndex(i)
    bits = pynvml.nvmlDeviceGetMemoryBusWidth(h)
    mhz = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)
    print(f"NVML device {i}: {pynvml.nvmlDeviceGetName(h)}, bus {bits} bits, max memory clock {mhz} MHz, "
          f"x2 = {bits / 8 * mhz * 1e6 * 2 / 1e12:.4f} TB/s, x1 = {bits / 8 * mhz * 1e6 / 1e12:.4f} TB/s")
pynvml.nvmlShutdown()
EOF
fi
audit --version || exit 7
if [ -n "${HBM_TBPS:-}" ]; then BW=(--hbm-tbps "$HBM_TBPS"); else BW=(--from-nvml); fi

run() {  # NAME CONFIG [--dtype-mix MIX]
  local name=$1 config=$2; shift 2
  step "$name"
  rm -rf "$WORK/ckpt/$name" "$WORK/$name"
  "$PY" scripts/make_header_only_checkpoint.py "$config" "$WORK/ckpt/$name" "$@" || return 1
  audit floor "$WORK/ckpt/$name" "${BW[@]}" --gpus "$GPUS" --context "$CONTEXT" -o "$WORK/$name" \
    --id "floor-$name" || return 1
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
