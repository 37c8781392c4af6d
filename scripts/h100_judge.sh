#!/usr/bin/env bash
# The whole judged path on a vLLM-served judge (the tiny random-weight Llama of ../shared/device/VLLM.md):
# audit judge records every call, audit grade --judge-calls grades from the recorded calls, audit reproduce
# re-reads them with the server stopped, and audit show prints the figures. Random weights make parse failures
# likely: the recording, the replay and the judge_error statuses are what this run tests.
#
#   On the device, after the VLLM.md install:  bash scripts/h100_judge.sh MODEL_DIR
#   On the CPU, against the local fake judge:  JUDGE_SERVER=fake bash scripts/h100_judge.sh
#
# The evidence run served Llama-3.1-8B's shape (scripts/shapes/llama-3.1-8b.config.json, the Llama 3 tokenizer
# of scripts/h200_bench_prepare.sh and Llama 3's chat format) with VLLM_ARGS="--load-format dummy": full-size
# random weights. SUBJECT_RUN (with SUBJECT_MODEL, SUBJECT_CONFIG, SUBJECT_ENGINE, SUBJECT_HARDWARE,
# SUBJECT_WEIGHTS) names the judge served in every calls package (`audit judge --model-name ... --run ...`).
#
# Writes everything under ${OUT:-.dev/judge-evidence}: responses/, items/, calls-hle/, calls-inspect/, graded.json,
# show-*.txt, reproduce.txt, server.log. Exit status: non-zero on the first failed step.
set -euo pipefail

MODEL=${1:-.dev/tiny-llama}
OUT=${OUT:-.dev/judge-evidence}
PORT=${PORT:-8013}
AUDIT=${AUDIT:-audit}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
URL="http://127.0.0.1:$PORT"

start_server() {
  if [ "${JUDGE_SERVER:-vllm}" = fake ]; then
    "$PY" tests/judge_server.py "$PORT" > "$OUT/server.log" 2>&1 &
  else
    # The judge's structured output (HLE's json_schema) goes through vLLM's guided decoding (xgrammar).
    "$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL" --served-model-name judge --port "$PORT" \
      --max-model-len 2048 --gpu-memory-utilization "${GPU_UTIL:-0.3}" --enforce-eager --seed 0 ${VLLM_ARGS:-} \
      > "$OUT/server.log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 1 "${SERVER_WAIT_S:-150}"); do
    if "$PY" -c "import urllib.request,sys; urllib.request.urlopen('$URL/v1/models', timeout=2)" 2>/dev/null; then
      return 0
    fi
    sleep 1
  done
  echo "server did not come up; see $OUT/server.log" >&2
  return 1
}

stop_server() {
  # SIGINT stops vLLM cleanly (VLLM.md), but a background job of a script ignores SIGINT unless it installs its
  # own handler (uvicorn does; the fake judge does not): SIGTERM after 30 s.
  if [ -n "${SERVER_PID:-}" ]; then
    kill -INT "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  fi
}
trap stop_server EXIT

# 1. A small HLE-shaped benchmark: items (protected, like HLE) and responses, as packages.
"$PY" - "$OUT" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
items = [{"item_id": f"q{i}", "reference": str(7 * i), "question": f"What is 7 times {i}?", "protected": True}
         for i in range(12)]
resp = [{"item_id": f"q{i}", "response": f"Explanation: multiply.\nExact Answer: {7 * i if i % 3 else 7 * i + 1}\n"
         f"Confidence: {60 + i}%", "finish_reason": "stop"} for i in range(12)]
(out / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
(out / "responses.jsonl").write_text("".join(json.dumps(r) + "\n" for r in resp))
EOF
rm -rf "$OUT/items" "$OUT/responses"
"$AUDIT" import table "$OUT/items.jsonl" --kind items --benchmark hle -o "$OUT/items"
"$AUDIT" import table "$OUT/responses.jsonl" --kind responses --benchmark hle -o "$OUT/responses"

# 2. The judge, served; every call recorded (two repeats with seeds, so the flip rate is measured).
start_server
MODEL_NAME=judge
[ "${JUDGE_SERVER:-vllm}" = fake ] && MODEL_NAME=fake-judge
SUBJECT=()
if [ -n "${SUBJECT_RUN:-}" ]; then
  SUBJECT=(--model-name "$SUBJECT_MODEL" --model-config "$SUBJECT_CONFIG" --engine "$SUBJECT_ENGINE"
           --hardware "$SUBJECT_HARDWARE" --weights "$SUBJECT_WEIGHTS" --run "$SUBJECT_RUN")
fi
"$AUDIT" judge "$OUT/responses" --items "$OUT/items" --judge hle.official --server "$URL" --judge-model "$MODEL_NAME" \
  --repeats 2 --seed 0 --max-tokens 256 --timeout 120 "${SUBJECT[@]}" -o "$OUT/calls-hle" --force \
  | tee "$OUT/judge-hle.txt"
"$AUDIT" judge "$OUT/responses" --items "$OUT/items" --judge inspect.model_graded_fact --server "$URL" \
  --judge-model "$MODEL_NAME" --temperature 0 --max-tokens 128 --logprobs 2 --timeout 120 "${SUBJECT[@]}" \
  -o "$OUT/calls-inspect" --force | tee "$OUT/judge-inspect.txt"
"$AUDIT" judge "$OUT/responses" --items "$OUT/items" --judge simple_evals.equality --server "$URL" \
  --judge-model "$MODEL_NAME" --extractor hle.exact_answer --seed 0 --max-tokens 16 --timeout 120 "${SUBJECT[@]}" \
  -o "$OUT/calls-equality" --force | tee "$OUT/judge-equality.txt"
stop_server

# 3. No server from here on: grade from the recorded calls, show, reproduce.
"$AUDIT" show "$OUT/calls-hle" | tee "$OUT/show-hle.txt"
"$AUDIT" show "$OUT/calls-inspect" | tee "$OUT/show-inspect.txt"
"$AUDIT" show "$OUT/calls-equality" | tee "$OUT/show-equality.txt"
"$AUDIT" grade "$OUT/responses" --items "$OUT/items" --benchmark hle --judge-calls "$OUT/calls-hle" \
  -o "$OUT/graded.json" --force | tee "$OUT/grade.txt"
"$AUDIT" grade "$OUT/responses" --items "$OUT/items" --benchmark hle --judge-calls "$OUT/calls-hle" \
  --judge-rule hle.strict@1 -o "$OUT/graded-strict.json" --force | tee -a "$OUT/grade.txt"
"$AUDIT" reproduce "$OUT/graded.json" | tee "$OUT/reproduce.txt"
"$AUDIT" diff "$OUT/graded.json" "$OUT/graded-strict.json" > "$OUT/diff-strict.md" || [ $? -eq 1 ]
echo "judge evidence in $OUT"
