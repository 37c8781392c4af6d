#!/usr/bin/env bash
# The H200 proof of `audit bench` (issue 13): real vLLM 0.26.0 serving Llama-3.1-8B's shape with dummy
# weights (--load-format dummy: full-size random bf16 weights, nothing downloaded), launched by audit.
#
# Before: vLLM installed on the host per ../shared/device/VLLM.md (/tmp/site), and on this machine
#   bash scripts/h200_bench_prepare.sh          # .dev/llama-3.1-8b-shape: config.json + Llama 3 tokenizer (gz)
# Then, on the host, from the checkout root, carrying .dev/llama-3.1-8b-shape and .dev/vllm-smoke:
#   bash scripts/h200_bench.sh "$OUT"
# or, on a fresh host, in the same call as the last vLLM install step (carry .dev/vllm/c3, .dev/vllm-smoke
# and .dev/llama-3.1-8b-shape: about 58 MiB):
#   bash .dev/vllm-smoke/install-on-device.sh .dev/vllm/c3 || exit 9; bash scripts/h200_bench.sh "$OUT"
# Writes to OUTDIR (5 files): h200_bench.log (everything printed), bench-packages.tar.gz (every package
# directory, validated), and one report PNG per arm.
#
# Arms (each `audit bench throughput --launch` starts its own server and stops it at the end), with
# WINDOWS x WINDOW_S timed windows, PROMPT_TOKENS-token prompts, MAX_TOKENS output cap, ignore_eos,
# one request in flight, GPU counters at 10 Hz and GPM every 0.5 s:
#   1. graphs: vLLM's default (torch.compile + CUDA graphs); then `vllm bench serve` against the same
#      server (--dataset-name random, same lengths, 1 in flight, ignore_eos, greedy), recorded in the
#      package as its anchor and compared with ours by `audit bench report`;
#   2. eager:  --enforce-eager;
#   3. ngram:  CUDA graphs with --speculative-config ngram (skipped when the time left is short).
# Then `audit bench compare` graphs/eager and ngram/graphs, and the sampler benchmark on real NVML.
# A time budget (BUDGET_S, default 545 s from the start) keeps the whole script under 10 minutes: an
# arm that would not fit is skipped and says so.
# Without a GPU (to try the script):  DRY=1 bash scripts/h200_bench.sh /tmp/h200-dry
#   (the fake server of tests/fake_openai_server.py and tests/fake_vllm_bench_serve.py stand in).
set -uo pipefail
cd "$(dirname "$0")/.."
START=$(date +%s)
OUTDIR=${1:-${OUT:?give OUTDIR or set OUT}}
BUDGET_S=${BUDGET_S:-545}
WORK=${WORK:-/tmp/audit-bench}
MODEL_SRC=${MODEL_SRC:-.dev/llama-3.1-8b-shape}
PROMPT_TOKENS=${PROMPT_TOKENS:-512}
MAX_TOKENS=${MAX_TOKENS:-256}
ARMS=${ARMS:-"graphs eager ngram"}
ANCHOR_ARM=${ANCHOR_ARM:-graphs}
ANCHOR_PROMPTS=${ANCHOR_PROMPTS:-12}
SERVE=${SERVE:-"--load-format dummy --max-model-len 4096 --gpu-memory-utilization 0.4 --max-num-seqs 16"}
NGRAM=${NGRAM:-'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, "prompt_lookup_min": 2}'}
if [ "${DRY:-0}" = 1 ]; then
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-3}
  PROGRAM="{python} tests/fake_openai_server.py"
  BENCH_SERVE="{python} tests/fake_vllm_bench_serve.py"
  # Stand-ins for the arms' speeds: 250 tok/s, 60 tok/s, and bundles of 1 and 3 tokens with drafts of 3.
  FAKE_graphs='{"token_delay": 0.004}'; FAKE_eager='{"token_delay": 0.016}'
  FAKE_ngram='{"token_delay": 0.004, "bundle": [1, 3], "spec_k": 3}'
  START_S=5
  HARDWARE=${HARDWARE:-1x NVIDIA H200 (DRY)}
else
  WINDOWS=${WINDOWS:-3}; WINDOW_S=${WINDOW_S:-15}
  PROGRAM="{python} -m vllm.entrypoints.openai.api_server"
  BENCH_SERVE="{python} -m vllm.entrypoints.cli.main"
  START_S=110  # what a server start may take here (VLLM.md: 52-75 s for the tiny model; 8B compiles longer)
fi
mkdir -p "$OUTDIR" "$WORK"
exec > >(tee "$OUTDIR/h200_bench.log") 2>&1
# shellcheck source=scripts/device_lib.sh
. scripts/device_lib.sh

step "environment"
if [ "${DRY:-0}" = 1 ]; then
  dry_env
else
  vllm_env || { echo "vLLM is not installed: run the three install steps of VLLM.md first"; exit 9; }
  # The project itself, with no dependencies fetched: pydantic comes with vLLM's wheels in /tmp/site;
  # click, pandas, pyarrow, numpy, scipy, matplotlib and nvidia-ml-py are in the host image.
  install_audit
  use_audit_site
  PY=python3
  nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,power.limit,clocks.max.sm --format=csv
  $PY -c "import pynvml, matplotlib; from importlib.metadata import version as v; print('nvidia-ml-py', v('nvidia-ml-py'), 'matplotlib', matplotlib.__version__)"
fi
audit --version || exit 7
MODEL="$WORK/llama-3.1-8b-shape"
rm -rf "$MODEL"
if [ "${DRY:-0}" = 1 ] && [ ! -f "$MODEL_SRC/config.json" ]; then
  $PY scripts/bench_model.py "$MODEL"  # the fake server needs no tokenizer
else
  [ -f "$MODEL_SRC/config.json" ] || { echo "missing $MODEL_SRC: run scripts/h200_bench_prepare.sh"; exit 6; }
  cp -r "$MODEL_SRC" "$MODEL"
  [ -f "$MODEL/tokenizer.json" ] || gunzip -k "$MODEL/tokenizer.json.gz" || exit 6
fi
sha256sum "$MODEL"/*.json

step "sampler cost on this machine's NVML (background)"
if [ "${DRY:-0}" = 1 ]; then
  $PY benchmarks/bench_sampler.py --seconds 1 --runs 1 --gpus 1 --costs 0 > "$WORK/sampler.txt" 2>&1 &
else
  $PY benchmarks/bench_sampler.py --real --seconds 5 --runs 3 > "$WORK/sampler.txt" 2>&1 &
fi
SAMPLER_PID=$!

arm() {  # arm NAME EXTRA_SERVER_ARGS WITH_ANCHOR
  local name=$1 extra=$2 anchor=$3 need budget
  need=$(( START_S + 15 + WINDOWS * ${WINDOW_S%.*} + 20 ))
  [ "$anchor" = 1 ] && need=$(( need + 60 ))
  budget=$(left)
  if [ "$budget" -lt "$need" ]; then
    step "SKIPPED arm $name: $budget s left of the budget, it needs about $need s"
    return
  fi
  step "arm $name: $extra"
  local fake_var="FAKE_$name" launch="$SERVE $extra"
  if [ "${DRY:-0}" = 1 ] && [ -n "${!fake_var:-}" ]; then launch="$launch --fake-config '${!fake_var}'"; fi
  local args=(--launch "$launch" --launch-program "$PROGRAM" --launch-timeout 300 --model "$MODEL"
              --arm "$name" -o "$WORK/$name" --prompt-tokens "$PROMPT_TOKENS" --max-tokens "$MAX_TOKENS"
              --ignore-eos --windows "$WINDOWS" --window-s "$WINDOW_S" --warmup-requests 1 --force
              --model-name "${MODEL_NAME:-meta-llama/Llama-3.1-8B}" --weights random --run "${RUN:-h200-bench-$(date -u +%Y%m%d)}"
              ${HARDWARE:+--hardware "$HARDWARE"})
  if [ "$anchor" = 1 ]; then
    args+=(--anchor "$BENCH_SERVE bench serve --backend vllm --base-url {url} --model {model} --tokenizer {model}
      --dataset-name random --random-input-len {prompt_tokens} --random-output-len {max_tokens}
      --random-range-ratio 0 --num-prompts $ANCHOR_PROMPTS --max-concurrency 1 --request-rate inf --ignore-eos
      --temperature 0 --num-warmups 2 --seed 0 --disable-tqdm --save-result --save-detailed
      --result-dir {result_dir} --result-filename {result_name}" --anchor-timeout 150)
  fi
  timeout --signal=TERM --kill-after=20 "$(( budget - 5 ))" audit bench throughput "${args[@]}"
  echo "rc=$?"
  if [ -d "$WORK/$name" ]; then
    audit bench report "$WORK/$name" --png "$OUTDIR/$name.png"
    echo "rc=$?"
    [ -f "$WORK/$name/anchor.log" ] && tail -n 40 "$WORK/$name/anchor.log"
  fi
}

for a in $ARMS; do
  case $a in
    graphs) arm graphs "" "$([ "$ANCHOR_ARM" = graphs ] && echo 1 || echo 0)" ;;
    eager) arm eager "--enforce-eager" "$([ "$ANCHOR_ARM" = eager ] && echo 1 || echo 0)" ;;
    ngram) arm ngram "--speculative-config '$NGRAM'" "$([ "$ANCHOR_ARM" = ngram ] && echo 1 || echo 0)" ;;
    *) echo "unknown arm $a" ;;
  esac
done

step "compare"
[ -d "$WORK/graphs" ] && [ -d "$WORK/eager" ] && audit bench compare "$WORK/graphs" "$WORK/eager"
[ -d "$WORK/ngram" ] && [ -d "$WORK/graphs" ] && audit bench compare "$WORK/ngram" "$WORK/graphs"

step "sampler benchmark"
wait "$SAMPLER_PID"; cat "$WORK/sampler.txt"

step "validate and pack"
pkgs=()
for a in $ARMS; do
  for p in "$WORK/$a" "$WORK/$a.telemetry"; do
    [ -d "$p" ] || continue
    audit validate "$p" && pkgs+=("$(basename "$p")")
  done
done
python3 - "$WORK" "${pkgs[@]}" <<'EOF'
import json, sys
for name in sys.argv[2:]:
    m = json.load(open(f"{sys.argv[1]}/{name}/manifest.json"))
    x = m["provenance"]["extra"]
    if m["kind"] == "telemetry":
        print(name, "| status", x["status"], "| devices", x["devices"], "| sampler", x["sampler"])
        print("   counters", x["counters"], "| events", x["events"][:5])
    else:
        print(name, "| hardware", m["provenance"]["hardware"], "| engine", m["provenance"]["engine_version"],
              "| prompt", {k: x["prompt"].get(k) for k in ("tokens", "example", "prompts", "tokenize_calls")})
        print("   servers", x["servers"], "| notes", x["notes"], "| anchor", x.get("anchor"))
EOF
[ "${#pkgs[@]}" -gt 0 ] && tar czf "$OUTDIR/bench-packages.tar.gz" -C "$WORK" "${pkgs[@]}"
ls -la "$OUTDIR"
step "done"
