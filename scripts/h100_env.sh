# Sourced by scripts/h100_floor.sh, h100_moe.sh and h100_mtp.sh (issue 32, the H100 run), from the root of
# the staged copy that scripts/h100_prepare.sh writes (audit's source with .dev/h100 and .dev/vllm-smoke).
# On the host: vLLM's environment when its wheels are installed (../shared/device/VLLM.md), the two wheels
# any quantized model needs (compressed-tensors, loguru), pydantic when vLLM's wheels are not there yet
# (the floor call), audit itself into /tmp/audit-site. DRY=1: this machine's .venv and the test doubles.
# Sets PY, RUN (the run every package names), ENGINE (NAME==VERSION), and the functions of
# scripts/device_lib.sh (step, left, ...).
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh
RUN=${RUN:-h100-$(date -u +%Y%m%d)}
if [ "${DRY:-0}" = 1 ]; then
  dry_env
  ENGINE=${ENGINE:-vllm==0.26.0}
else
  # shellcheck disable=SC1091
  [ -f .dev/vllm-smoke/env.sh ] && . .dev/vllm-smoke/env.sh
  install_audit
  if [ -d /tmp/site/vllm ] && ls .dev/h100/whl/*.whl >/dev/null 2>&1 && [ ! -d /tmp/site/compressed_tensors ]; then
    install_wheels /tmp/site .dev/h100/whl/*.whl || exit 9
  fi
  if ! PYTHONPATH="/tmp/site:${PYTHONPATH:-}" python3 -c "import pydantic" 2>/dev/null; then
    install_wheels /tmp/audit-site "${PYD:-.dev/h100/pyd}"/*.whl || exit 8
  fi
  use_audit_site /tmp/site
  # DeepGEMM JIT-compiled 1,253 kernels and failed on the H200 (packages/evidence-h200-moe): CUTLASS and
  # the Triton FP8 MoE instead.
  export VLLM_USE_DEEP_GEMM=0 VLLM_MOE_USE_DEEP_GEMM=0 VLLM_DEEP_GEMM_WARMUP=skip
  PY=python3
  if [ -d /tmp/site/vllm ]; then
    # the installed version from its dist-info (importing vllm takes 20+ s)
    v=$(ls -d /tmp/site/vllm-*.dist-info | head -1); v=${v##*/vllm-}; ENGINE=${ENGINE:-vllm==${v%.dist-info}}
  else
    ENGINE=${ENGINE:-vllm==0.26.0}  # the floor call runs before vLLM is installed: the engine it is for
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,power.limit,clocks.max.sm,clocks.max.memory \
    --format=csv
fi
audit --version || exit 7
TOKENIZER=${TOKENIZER:-.dev/h100/tokenizer}
model_dir() {  # SHAPE DEST: the shape's config.json with the tokenizer beside it
  rm -rf "$2"; cp -r ".dev/h100/models/$1" "$2" || return 1
  cp "$TOKENIZER"/tokenizer* "$2/" 2>/dev/null
  [ -f "$2/tokenizer.json" ] || gunzip -k "$2/tokenizer.json.gz" || return 1
}
echo "run $RUN, engine $ENGINE"
