"""Trial of `audit import lighteval` on details and results files that lighteval itself writes.

No public lighteval details table could be fetched here (they live on the Hugging Face Hub, which this machine
does not reach; the stored GitHub corpus holds scripts that read them, not the tables). So lighteval writes
them, from real responses, through its own code end to end: the tasks' own prompt functions
(`lighteval.tasks.tasks.gsm8k.gsm8k_prompt`, `math_500.math_500_prompt`), its own sample metrics
(`expr_gold_metric`, `pass_at_k_math`, `loglikelihood_acc`), `DetailsLogger`/`MetricsLogger` and
`EvaluationTracker.save()` (details Parquet and results JSON under lighteval's own folder layout). The responses
are real: the GSM8K samples in tests/data/lm_eval (a real lm-eval run), the 100 Qwen2.5-Math CoT responses of
../shared/data/qwen25_math_rm_maj_example (the first of 8 per problem) and the 20 COPA log-likelihoods of
tests/data/lm_eval/sshleifer__tiny-gpt2.

Two steps, each in the Python that has what it needs:

    /path/to/lighteval-venv/bin/python benchmarks/trial_lighteval.py write OUT     # lighteval (>= 0.11)
    .venv/bin/python benchmarks/trial_lighteval.py check OUT                         # audit

`check` imports every details file under OUT (checked against its results file), takes lighteval's recorded
verdicts, regrades with audit's spec and prints, per task: n, lighteval's own aggregate, the recorded accuracy
audit reads back, audit's regrade, and how many verdicts the regrade changes.

Run 2026-12-02 (lighteval 0.13.0 with xxhash 3.8.2: lighteval's DetailsLogger hashes a str, which xxhash 4 refuses):

| task | n | lighteval's aggregate | recorded (audit reads) | audit regrade | verdicts changed |
|---|---|---|---|---|---|
| copa | 20 | acc 60.00% | 60.00% | 60.00% | 0 |
| gsm8k | 3 | extractive_match 0.00% | 0.00% | 0.00% | 0 |
| math_500 | 100 | pass@k:k=1&n=1 88.00% | 88.00% | 91.00% | 3 |

Every import checked against the results file: the examples hash recomputed and each mean metric equal. The 3
math_500 changes are incorrect → correct: items 27 and 64 answer `198` and `25` where the gold solution boxes
`198\%` and `25\%` (lighteval's pass@k compares the percent sign; the Qwen2.5-Math grader of the source file
credits both), item 3 answers `4:30 \text{ p.m.}` against `4:30\text{ p.m.}` (the source's grader read `4:30`
and marked it wrong). math_500 needs `--reference boxed`: lighteval logs `ANSWER: <solution>` as its gold.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
GSM8K = REPO / "tests" / "data" / "lm_eval" / "samples_gsm8k_2025-04-30T18-24-41.082644.jsonl"
COPA = REPO / "tests" / "data" / "lm_eval" / "sshleifer__tiny-gpt2" / "samples_copa_2026-10-01T23-15-32.942677.jsonl"
MATH = SHARED / "qwen25_math_rm_maj_example" / "math_cot_100.jsonl"
SPECS = {"gsm8k": ("gsm8k", "gold"), "math_500": ("math500", "boxed"), "copa": ("selected_choice", "gold")}
"""Each task's audit spec and where its reference comes from (math_500 logs a whole solution as its gold)."""


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(out: Path) -> None:
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.metrics.metrics import Metrics
    from lighteval.models.dummy.dummy_model import DummyModelConfig
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.lighteval_task import LightevalTask, LightevalTaskConfig
    from lighteval.tasks.requests import Doc
    from lighteval.tasks.tasks.gsm8k import gsm8k, gsm8k_prompt
    from lighteval.tasks.tasks.math_500 import math_500, math_500_prompt

    def copa_prompt(line, task_name=None):
        return Doc(task_name=task_name, query=line["query"], choices=line["choices"], gold_index=line["gold"])

    copa = LightevalTaskConfig(name="copa", prompt_function=copa_prompt, hf_repo="local", hf_subset="default",
                               metrics=[Metrics.loglikelihood_acc])
    runs = {
        "gsm8k": (gsm8k, [(gsm8k_prompt({"question": r["doc"]["question"], "answer": r["doc"]["answer"]}, "gsm8k"),
                           ModelResponse(text=[r["resps"][0][0]])) for r in _lines(GSM8K)]),
        "math_500": (math_500, [(math_500_prompt({"problem": r["question"], "solution": r["solution"]}, "math_500"),
                                 ModelResponse(text=[r["code"][0]])) for r in _lines(MATH)]),
    }
    copa_docs = []
    for r in _lines(COPA):
        args = r["arguments"]
        choices = [args[f"gen_args_{i}"]["arg_1"] for i in range(len(args))]
        gold = [c[1:] for c in choices].index(r["target"])
        copa_docs.append((copa_prompt({"query": args["gen_args_0"]["arg_0"], "choices": choices, "gold": gold}, "copa"),
                          ModelResponse(logprobs=[float(p[0]) for p in r["filtered_resps"]])))
    runs["copa"] = (copa, copa_docs)

    tracker = EvaluationTracker(output_dir=str(out), save_details=True)
    tracker.general_config_logger.log_model_info(DummyModelConfig(model_name="trial/real-responses"))
    tasks = {}
    for cfg, docs in runs.values():
        task = LightevalTask(cfg)
        tasks[task.full_name] = task
        for doc, response in docs:
            metrics: dict = {}
            for metric in task.metrics:
                metrics.update(metric.compute_sample(doc=doc, model_response=response))
            tracker.metrics_logger.log(task.full_name, metrics)
            tracker.details_logger.log(task.full_name, doc, response, metrics)
    tracker.metrics_logger.aggregate(task_dict=tasks, bootstrap_iters=0)
    tracker.details_logger.aggregate()
    tracker.save()
    print(f"lighteval wrote {sum(1 for _ in out.rglob('*.parquet'))} details tables under {out}")


def check(out: Path) -> int:
    audit = [str(Path(sys.executable).parent / "audit")]
    rows = []
    for details in sorted(out.rglob("details_*.parquet")):
        name = details.name.removeprefix("details_").split("|")[0]
        spec, reference = SPECS[name]
        work = out / "audit" / name
        work.mkdir(parents=True, exist_ok=True)
        imp = subprocess.run([*audit, "import", "lighteval", str(details), "--benchmark", spec, "--reference", reference,
                              "-o", str(work / "pkg"), "--recorded", str(work / "recorded.json"), "--force"],
                             capture_output=True, text=True)
        print(imp.stdout + imp.stderr, end="")
        if imp.returncode != 0:
            return imp.returncode
        grade = subprocess.run([*audit, "grade", str(work / "pkg"), "--benchmark", spec, "-o",
                                str(work / "audit.json"), "--force"], capture_output=True, text=True)
        diff = subprocess.run([*audit, "diff", str(work / "recorded.json"), str(work / "audit.json"), "--format",
                               "json"], capture_output=True, text=True)
        rec = json.loads((work / "recorded.json").read_text())["summary"]["figures"]
        new = json.loads((work / "audit.json").read_text())["summary"]["figures"]
        fig = {f["name"]: f for f in rec}["accuracy_all"], {f["name"]: f for f in new}["accuracy_all"]
        report = json.loads(diff.stdout)
        changed = report["aligned"] - report["unchanged"]
        results = json.loads(next((out / "results").rglob("results_*.json")).read_text())["results"]
        logged = {k: v for k, v in results[details.name.removeprefix("details_").rsplit("_", 1)[0]].items()
                  if not k.endswith("_stderr")}
        rows.append((name, fig[0]["total"], logged, fig[0]["value"], fig[1]["value"], changed, grade.returncode))
    print("\n| task | n | lighteval's aggregate | recorded (audit reads) | audit regrade | verdicts changed |")
    print("|---|---|---|---|---|---|")
    for name, n, logged, rec, new, changed, rc in rows:
        lg = ", ".join(f"{k} {100 * v:.2f}%" for k, v in logged.items())
        print(f"| {name} | {n} | {lg} | {100 * rec:.2f}% | {100 * new:.2f}% | {changed} |")
    return 0


if __name__ == "__main__":
    step, folder = sys.argv[1], Path(sys.argv[2])
    if step == "write":
        write(folder)
    else:
        sys.exit(check(folder))
