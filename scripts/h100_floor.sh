#!/usr/bin/env bash
# The H100 floors (issue 32): `audit floor --from-nvml` on header-only checkpoints of the two shapes the
# H100 run serves, each re-checked and bundled; every package names its subject (model, config sha256,
# engine, hardware from NVML, headers-only weights, run).
#
# On this machine first: bash scripts/h100_prepare.sh (stages .dev/h100 with the configs and pydantic's wheels).
# On the H100 host, from the staged copy's root (it needs no vLLM: it runs in the first device call, beside
# the first part of vLLM's wheels):  bash scripts/h100_floor.sh "$OUT"
# Without a GPU: DRY=1 bash scripts/h100_floor.sh /tmp/h100-floor-dry (HBM_TBPS=3.35 instead of NVML).
# CONTEXT (default 640: the 512-token prompt plus half of the 256 decoded, as the bench arms run).
# Shapes (.dev/h100/models/<shape>/config.json, from scripts/h200_moe_models.py):
#   qwen3-30b-a3b-fp8   Qwen/Qwen3-30B-A3B-FP8 (FP8 128x128 blocks; router, norms and head BF16)
#   mimo-7b             XiaomiMiMo/MiMo-7B-RL (dense BF16, one MTP layer), without and with --with-mtp
# Writes to OUTDIR: h100_floor.log and floor-<name>.tar.gz (3).
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
CONTEXT=${CONTEXT:-640}
WORK=${WORK:-/tmp/h100-floor}
MODELS=${MODELS:-.dev/h100/models}
rm -rf "$WORK"; mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h100_floor.log") 2>&1
# shellcheck source=scripts/h100_env.sh
. scripts/h100_env.sh
if [ "${DRY:-0}" = 1 ]; then
  BW=(--hbm-tbps "${HBM_TBPS:-3.35}" --hardware "1x NVIDIA H100 80GB HBM3 (DRY)")
else
  nvml_bandwidth
  BW=(--from-nvml)
fi

floor() {  # NAME SHAPE MODEL_NAME [audit floor options]
  local name=$1 shape=$2 model=$3; shift 3
  step "floor $name ($model)"
  rm -rf "$WORK/$name"
  [ -d "$WORK/ckpt-$shape" ] || "$PY" scripts/make_header_only_checkpoint.py "$MODELS/$shape/config.json" \
    "$WORK/ckpt-$shape" || return 1
  audit floor "$WORK/ckpt-$shape" "${BW[@]}" --context "$CONTEXT" -o "$WORK/$name" --id "floor-$name" \
    --model-name "$model" --engine "$ENGINE" --run "$RUN" "$@" || return 1
  audit floor-check "$WORK/$name" || return 1
  audit bundle "$WORK/$name" -o "$OUTDIR/floor-$name.tar.gz" && ls -la "$OUTDIR/floor-$name.tar.gz"
}

failed=0
floor qwen3-30b-a3b-fp8 qwen3-30b-a3b-fp8 Qwen/Qwen3-30B-A3B-FP8 || failed=1
floor mimo-7b mimo-7b XiaomiMiMo/MiMo-7B-RL || failed=1
floor mimo-7b-with-mtp mimo-7b XiaomiMiMo/MiMo-7B-RL --with-mtp || failed=1
step "done (failed=$failed)"
exit $failed
