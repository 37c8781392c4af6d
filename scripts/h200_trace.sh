#!/usr/bin/env bash
# The H200 proof of `audit trace` (issue 14): a short vLLM 0.26.0 decode, tensor-parallel 2, profiled
# with vLLM's own torch-profiler hooks, summarised per rank with `audit trace`.
#
# On a 2-GPU H200 host, from the checkout root, after vLLM is installed per ../shared/device/VLLM.md
# (/tmp/site holds its wheels; .dev/vllm-smoke and .dev/tiny-llama carried):
#   bash scripts/h200_trace.sh "$OUT"
# Without a GPU (tries the audit half on synthetic vLLM-shaped traces): DRY=1 bash scripts/h200_trace.sh OUTDIR
#
# What vLLM 0.26.0 does (read from the 0.26.0 wheel: vllm/config/profiler.py, vllm/profiler/wrapper.py,
# vllm/v1/worker/gpu_worker.py, vllm/entrypoints/serve/profile/api_router.py, vllm/distributed/utils.py):
# - Profiling is configured with `--profiler-config JSON` (VLLM_TORCH_PROFILER_DIR no longer exists);
#   `profiler: torch` needs an absolute `torch_profiler_dir`. The server then exposes POST /start_profile and
#   POST /stop_profile; each worker records CPU+CUDA activity between the two.
# - Each worker writes `{dir}/dp0_pp0_tp{R}_dcp0_ep0_rank{R}.{time_ns}.pt.trace.json.gz` (torch's
#   tensorboard_trace_handler; gzip unless torch_profiler_use_gzip=false), one file per rank. The API
#   server process adds `{host}_{pid}.async_llm.{time_ns}.pt.trace.json.gz` (CPU only) unless
#   ignore_frontend=true, as here. `audit trace` refuses a CPU-only file with a message saying so.
#   Seen on one H200 with TP=1 (2026-12-01): the single worker wrote `rank0.{time_ns}.pt.trace.json.gz`,
#   without the dp/pp/tp prefix, so the files are found by `*rank{R}.*` below.
# - Steps: every engine step runs inside record_function("execute_context_N(T)_generation_M(T)")
#   (N context requests with T tokens, M generation requests with T tokens), opened in
#   gpu_worker.annotate_profile around model_runner.execute_model; sampling (sample_tokens) runs after
#   it, so a step is one annotation's start to the next's: --step-marker '^execute_context_'.
#   Decode-only steps match --step-filter '_context_0\(0\)_generation_[1-9]' (an idle engine step is
#   `execute_context_0(0)_generation_0(0)`). torch's ProfilerStep#N markers appear only
#   with a profiler schedule (warmup_iterations or wait_iterations > 0), so the default marker finds
#   none: `audit trace` refuses per-step figures and names the marker to use.
# - `gpu_model_runner: forward/sample/...` scopes appear only with VLLM_CUSTOM_SCOPES_FOR_PROFILING=1.
# - With CUDA graphs (the default) each decode step is one cudaGraphLaunch whose kernels (all-reduces
#   included) share its correlation id; `audit trace` counts them in the step of the launch.
# - All-reduce kernels for TP=2 on H200: vLLM's custom all-reduce (`cross_device_reduce_1stage/2stage`),
#   torch symmetric memory (`multimem_all_reduce`, `two_shot_all_reduce`) or NCCL
#   (`ncclDevKernel_AllReduce_...`): all in audit's built-in all_reduce patterns.
#
# Writes to OUTDIR: h200_trace.log, the raw traces (traces/), one profile package per rank
# (profile-tp0/, profile-tp1/: summary, rows, the raw trace when under 20 MB), a package of the same
# rank-0 trace with the default marker (refused steps, for the record), diff-tp0-tp1.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
OUTDIR=$(mkdir -p "$OUTDIR" && cd "$OUTDIR" && pwd)
TOKENIZER=${TOKENIZER:-.dev/tiny-llama}
MODEL_GIVEN=${MODEL:-}
MODEL=${MODEL:-/tmp/audit-trace-model}
PROF=${PROF:-/tmp/audit-trace-prof}
PORT=${PORT:-8013}
TOKENS=${TOKENS:-32}
LAUNCH=${LAUNCH:-"--tensor-parallel-size 2 --load-format dummy --max-model-len 2048 --gpu-memory-utilization 0.6"}
MARKER='^execute_context_'
# COLLECTIVE: extra `audit trace --collective KIND=REGEX` (e.g. the MoE kernels of issue 22, counted per
# step and per position like a collective); PROMPT: the profiled request's prompt.
COLLECTIVE=${COLLECTIVE:-}
PROMPT=${PROMPT:-The capital of France is}
DECODE='_context_0\(0\)_generation_[1-9]'
# What the trace measured (audit trace refuses a profile package without it): the model's public name,
# the weights (dummy: random) and the run; the config is the served config.json, the engine the vLLM here.
MODEL_NAME=${MODEL_NAME:-meta-llama/Llama-3.1-8B}
WEIGHTS=${WEIGHTS:-random}
RUN=${RUN:-h200-trace-$(date -u +%Y%m%d)}
exec > >(tee "$OUTDIR/h200_trace.log") 2>&1
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh
rm -rf "$PROF"; mkdir -p "$PROF" "$OUTDIR/traces"

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  dry_env .venv/bin/python
else
  # shellcheck disable=SC1091
  . .dev/vllm-smoke/env.sh
  PY=python3
  $PY -c "import sys, vllm, torch; print('python', sys.version.split()[0], 'vllm', vllm.__version__, 'torch', torch.__version__)" || exit 9
  # audit itself without dependencies: numpy, click from the host image; pydantic from vLLM's wheels.
  install_audit
  use_audit_site
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
fi
audit --version || exit 7
if [ "${DRY:-0}" = 1 ]; then
  ENGINE=${ENGINE:-vllm==0.26.0}
else
  ENGINE=${ENGINE:-vllm==$($PY -c "import vllm; print(vllm.__version__)")}
fi

if [ "${DRY:-0}" = 1 ]; then
  step "DRY: synthetic vLLM-shaped traces, one per rank (no vLLM, no GPU)"
  $PY - "$PROF" <<'EOF' || exit 6
import sys
sys.path.insert(0, ".")
from pathlib import Path
from tests.trace_builders import TraceBuilder
prof = Path(sys.argv[1])
for rank in (0, 1):
    b = TraceBuilder(device=rank, rank=rank, world_size=2)
    names = ["execute_context_1(32)_generation_0(0)"] + ["execute_context_0(0)_generation_1(1)"] * 8
    names.insert(5, "execute_context_0(0)_generation_0(0)")  # an idle engine step: no kernels
    for k, name in enumerate(names):
        t0 = 1_000_000.0 + 10_000.0 * k
        b.marker(name, t0, dur=2_000.0)
        if "generation_0(0)" in name and "context_0" in name:
            continue
        kernels = [(f"layer_kernel_{i}", t0 + 3000 + 20 * i, 15.0) for i in range(8)]
        kernels[3] = ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>", t0 + 3060, 40.0 - k)
        kernels[6] = ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>", t0 + 3120, 12.0)
        if k == 0:
            for name_, ts, dur in kernels:
                b.kernel(name_, t0 + 100, ts, dur)
        else:
            b.graph(t0 + 100, kernels)
        b.kernel("sampler_kernel", t0 + 2500, t0 + 3300, 8.0)  # after the annotation: sample_tokens
    b.marker("execute_context_0(0)_generation_1(1)", 1_000_000.0 + 100_000.0, dur=2_000.0)
    b.write(prof / f"dp0_pp0_tp{rank}_dcp0_ep0_rank{rank}.1764000000000000000.pt.trace.json.gz")
EOF
else
  step "model directory: Llama-3.1-8B's shape (32 layers, hidden 4096, GQA 32/8, MLP 14336), dummy weights"
  # The vocabulary (4096) and token ids are the carried tiny model's; the other dimensions are the
  # published Llama-3.1-8B config. MODEL=DIR (a config.json and tokenizer) uses that directory instead.
  if [ -z "$MODEL_GIVEN" ]; then
    rm -rf "$MODEL"; mkdir -p "$MODEL"
    cp "$TOKENIZER"/config.json "$TOKENIZER"/tokenizer.json "$TOKENIZER"/tokenizer_config.json "$MODEL"/ || exit 6
    [ -f "$TOKENIZER/chat_template.jinja" ] && cp "$TOKENIZER/chat_template.jinja" "$MODEL"/
    $PY - "$MODEL" <<'EOF' || exit 6
import json, sys
from pathlib import Path
model = Path(sys.argv[1])
config = json.loads((model / "config.json").read_text())  # the tiny model's token ids and vocabulary
config.update({"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
               "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
               "max_position_embeddings": 8192,
               "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}})
(model / "config.json").write_text(json.dumps(config, indent=2))
print({k: config[k] for k in ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads",
                              "num_key_value_heads", "vocab_size")})
EOF
  fi

  step "vLLM server, TP=2, profiler on (torch, with_stack off, frontend off)"
  PROFCFG="{\"profiler\":\"torch\",\"torch_profiler_dir\":\"$PROF\",\"torch_profiler_with_stack\":false,\"torch_profiler_dump_cuda_time_total\":false,\"ignore_frontend\":true}"
  export VLLM_RPC_TIMEOUT=1800000
  # shellcheck disable=SC2086
  $PY -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name trace-model --port "$PORT" \
    $LAUNCH --profiler-config "$PROFCFG" > "$OUTDIR/server.log" 2>&1 &
  spid=$!
  wait_ready "localhost:$PORT" "$spid" 300 \
    || { echo "server did not come up"; tail -40 "$OUTDIR/server.log"; kill "$spid"; exit 5; }
  req() {
    curl -sf "localhost:$PORT/v1/completions" -H 'content-type: application/json' \
      -d "{\"model\":\"trace-model\",\"prompt\":\"$PROMPT\",\"max_tokens\":$1,\"temperature\":0,\"ignore_eos\":true}" \
      | $PY -c "import json,sys; d=json.load(sys.stdin); print('usage', d['usage'])"
  }
  step "warm-up request (not profiled)"
  req 16
  step "profiled: one request, $TOKENS decode tokens"
  curl -sf -X POST "localhost:$PORT/start_profile" && echo "start_profile ok"
  req "$TOKENS"
  curl -sf -X POST "localhost:$PORT/stop_profile" && echo "stop_profile ok"
  sleep 5
  kill -INT "$spid"; wait "$spid"; echo "server exit $?"
fi

step "trace files as vLLM wrote them"
ls -la "$PROF"
cp "$PROF"/*.pt.trace.json* "$OUTDIR/traces/" 2>/dev/null
rc=0
CONFIG=${CONFIG:-$MODEL/config.json}
[ "${DRY:-0}" = 1 ] && [ ! -f "$CONFIG" ] && CONFIG=scripts/shapes/llama-3.1-8b.config.json
SUBJECT=(--model-name "$MODEL_NAME" --model-config "$CONFIG" --engine "$ENGINE" --weights "$WEIGHTS" --run "$RUN")
echo "subject: ${SUBJECT[*]} (config sha256 $(sha256sum "$CONFIG" | cut -c1-16)…)"
TP=${TP:-2}  # how many rank files to look for (LAUNCH sets the real tensor-parallel size)
for rank in $(seq 0 $((TP - 1))); do
  f=$(ls "$PROF"/*rank${rank}.*.pt.trace.json* 2>/dev/null | head -1)
  [ -n "$f" ] || { echo "no trace file for rank $rank"; rc=4; continue; }
  step "audit trace, rank $rank: decode steps between vLLM's execute_context_ markers"
  audit trace "$f" --step-marker "$MARKER" --step-filter "$DECODE" ${COLLECTIVE:+--collective "$COLLECTIVE"} \
    "${SUBJECT[@]}" -o "$OUTDIR/profile-tp$rank" --force || rc=3
  audit validate "$OUTDIR/profile-tp$rank" || rc=3
done
f0=$(ls "$PROF"/*rank0.*.pt.trace.json* 2>/dev/null | head -1)
if [ -n "$f0" ]; then
  step "the same rank-0 trace with every step (prefill included) and with the default marker"
  audit trace "$f0" --step-marker "$MARKER" "${SUBJECT[@]}" -o "$OUTDIR/profile-tp0-all-steps" --force || rc=3
  audit trace "$f0" "${SUBJECT[@]}" -o "$OUTDIR/profile-tp0-default-marker" --force || rc=3
fi
if [ -d "$OUTDIR/profile-tp0" ] && [ -d "$OUTDIR/profile-tp1" ]; then
  step "audit trace diff rank 0 vs rank 1 (per decode step)"
  audit trace diff "$OUTDIR/profile-tp0" "$OUTDIR/profile-tp1" --top 25 | tee "$OUTDIR/diff-tp0-tp1.txt"
fi
du -sh "$OUTDIR"/* 2>/dev/null
echo "done rc=$rc"
exit $rc
