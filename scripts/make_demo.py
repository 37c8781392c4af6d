"""Write the demo packages under packages/demo-lab-note/ (run once; the output is committed).

Every question and response here was written for this demo: none comes from
MATH, MMLU-Pro, GPQA or HLE. Each benchmark reproduces one failure mode of the
lab note that audit exists for, next to ordinary correct and wrong answers.
The lab's own per-item verdicts, as its runner recorded them, sit beside the
packages in `lab-recorded/`, so `audit diff` can retract what it got wrong.

    SOURCE_DATE_EPOCH=1795910400 python scripts/make_demo.py
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from audit.models import Provenance
from audit.pack import SourceRow, Table, build_package

ROOT = Path(__file__).resolve().parent.parent / "packages" / "demo-lab-note"

PROVENANCE = dict(model="demo-model (fictional)", engine="handwritten", hardware="none",
                  notes="Authored for the audit demo; every text is invented. Reproduces the failure modes "
                        "of a lab's published note, not its data.")

# --------------------------------------------------------------------------- MATH-500-style
MATH_ITEMS = [
    ("demo-math-01", "Solve $2x + 3 = 11$ for $x$.", "4"),
    ("demo-math-02", "What fraction of an hour is 45 minutes?", "\\frac{3}{4}"),
    ("demo-math-03", "Compute $7 \\times 8$.", "56"),
    ("demo-math-04", "What is $\\sqrt{49}$?", "7"),
    ("demo-math-05", "Find the sum of the interior angles of a pentagon, in degrees.", "540"),
    ("demo-math-06", "Evaluate $\\frac{1}{2^{99}} \\cdot 2$.", "\\frac{1}{2^{98}}"),
    ("demo-math-07", "How many primes are less than 20?", "8"),
    ("demo-math-08", "Simplify $\\frac{10}{4}$.", "\\frac{5}{2}"),
]
MATH_RESPONSES = {
    "demo-math-01": ("Subtract 3 from both sides: $2x = 8$, so $x = 4$.\n\nFinal answer: $\\boxed{x = 4}$", "stop"),
    "demo-math-02": ("45 minutes out of 60 is $\\dfrac{45}{60} = \\dfrac{3}{4}$.\n\n$\\boxed{\\dfrac{3}{4}}$", "stop"),
    "demo-math-03": ("$7 \\times 8 = 56$, so the answer is $\\boxed{56}$.", "stop"),
    "demo-math-04": ("$7^2 = 49$, hence $\\boxed{7}$.", "stop"),
    "demo-math-05": ("A pentagon splits into 3 triangles: $3 \\cdot 180 = 540$. $\\boxed{540}$", "stop"),
    "demo-math-06": ("Doubling divides the denominator by two: $\\boxed{\\frac{1}{2^{99}}}$", "stop"),
    "demo-math-07": ("2, 3, 5, 7, 11, 13, 17, 19: there are $\\boxed{8}$.", "stop"),
    "demo-math-08": ("Divide by 2: $\\boxed{\\frac{5}{2}}$", "stop"),
}
# The lab's normalizer compared strings: `x = 4` != `4`, `\dfrac` != `\frac`.
MATH_LAB = {"demo-math-01": ("x = 4", False), "demo-math-02": ("\\dfrac{3}{4}", False),
            "demo-math-03": ("56", True), "demo-math-04": ("7", True), "demo-math-05": ("540", True),
            "demo-math-06": ("\\frac{1}{2^{99}}", False), "demo-math-07": ("8", True),
            "demo-math-08": ("\\frac{5}{2}", True)}

# --------------------------------------------------------------------------- MMLU-Pro-style
LETTERS = "ABCDEFGHIJ"


def options(correct: int, right: str) -> list[str]:
    wrong = [f"{v} (distractor {i + 1})" for i, v in enumerate(["0.5", "1", "2", "3", "5", "8", "13", "21", "34"])]
    wrong.insert(correct, right)
    return wrong


MMLU_ITEMS = [
    ("demo-mmlu-01", "How much heat (in kJ) ... (demo question 1)", 6, "42 kJ"),
    ("demo-mmlu-02", "What tension (in N) ... (demo question 2)", 2, "12 N"),
    ("demo-mmlu-03", "Which gas ... (demo question 3)", 1, "nitrogen"),
    ("demo-mmlu-04", "Which year ... (demo question 4)", 3, "1905"),
    ("demo-mmlu-05", "Which organ ... (demo question 5)", 0, "the liver"),
    ("demo-mmlu-06", "What is the pH ... (demo question 6)", 9, "7.4"),
    ("demo-mmlu-07", "Which law ... (demo question 7)", 4, "Ohm's law"),
    ("demo-mmlu-08", "How many moles ... (demo question 8)", 5, "0.25"),
]
MMLU_RESPONSES = {
    "demo-mmlu-01": "Q = m c ΔT = 1 kg × 4.2 kJ/(kg·K) × 10 K = 42 kJ.\n\n\\boxed{\\text{G. 42 kJ}}",
    "demo-mmlu-02": "Balancing forces on the 1.2 kg mass gives T = 12 N. The answer is exactly 12 N, "
                    "so the answer is (C).",
    "demo-mmlu-03": "Air is mostly nitrogen. The answer is (B).",
    "demo-mmlu-04": "The annus mirabilis papers appeared in 1905. The answer is (D).",
    "demo-mmlu-05": "Bile is produced by the liver. The answer is (A).",
    "demo-mmlu-06": "Blood is slightly basic, around 7.4. The answer is (J).",
    "demo-mmlu-07": "V = IR is Ohm's law. The answer is (E).",
    "demo-mmlu-08": "n = 10 g / 40 g/mol = 0.25 mol, which is option F... no wait, I think it is (H). "
                    "The answer is (H).",
}
# The lab's runner: first case-insensitive `answer is \(?([A-J])\)?`, no fallback.
MMLU_LAB = {"demo-mmlu-01": (None, False), "demo-mmlu-02": ("E", False), "demo-mmlu-03": ("B", True),
            "demo-mmlu-04": ("D", True), "demo-mmlu-05": ("A", True), "demo-mmlu-06": ("J", True),
            "demo-mmlu-07": ("E", True), "demo-mmlu-08": ("H", False)}

# --------------------------------------------------------------------------- GPQA-style (protected)
GPQA_ITEMS = [(f"demo-gpqa-0{i}", gold) for i, gold in enumerate("BCADBC", start=1)]
GPQA_RESPONSES = {
    # Cut at the output ceiling; an "Answer:" appears mid-reasoning.
    "demo-gpqa-01": ("Let us test option B first. Answer: B would follow if the coupling were weak, but the "
                     "coupling is strong, so we need to revisit the second-order term, which", "length"),
    # Cut at the output ceiling; only a prose hunch.
    "demo-gpqa-02": ("The spectrum suggests the correct choice is probably C, although the splitting pattern "
                     "needs a closer look at the", "length"),
    "demo-gpqa-03": ("The product keeps both stereocentres.\n\nAnswer: A", "stop"),
    "demo-gpqa-04": ("Counting the nodes gives three.\n\nAnswer: D", "stop"),
    "demo-gpqa-05": ("The reaction is first order in the catalyst.\n\nAnswer: **B**", "stop"),
    "demo-gpqa-06": ("Energy is conserved, so the speed doubles.\n\nAnswer: A", "stop"),
}
# The lab's grader read the first "Answer:" anywhere, else a prose fallback, and ignored truncation.
GPQA_LAB = {"demo-gpqa-01": ("B", True), "demo-gpqa-02": ("C", True), "demo-gpqa-03": ("A", True),
            "demo-gpqa-04": ("D", True), "demo-gpqa-05": ("B", True), "demo-gpqa-06": ("A", False)}

# --------------------------------------------------------------------------- HLE-style (protected)
HLE_ITEMS = [
    ("demo-hle-01", "3.1416", None), ("demo-hle-02", "2.50", None), ("demo-hle-03", "17", None),
    ("demo-hle-04", "C", 5), ("demo-hle-05", "0.0072", None), ("demo-hle-06", "B", 4),
    ("demo-hle-07", "128", None), ("demo-hle-08", "44", None),
]
HLE_RESPONSES = {
    "demo-hle-01": "Explanation: Series expansion to four terms.\nExact Answer: 3.1415\nConfidence: 70%",
    "demo-hle-02": "Explanation: Half of five.\nExact Answer: 2.5\nConfidence: 95%",
    "demo-hle-03": "Explanation: The seventh prime.\nExact Answer: 17\nConfidence: 90%",
    "demo-hle-04": "Explanation: Only the third construction is planar.\nAnswer: C\nConfidence: 60%",
    "demo-hle-05": "Explanation: Ratio of the two rates.\nExact Answer: 0.0071\nConfidence: 40%",
    "demo-hle-06": "Explanation: By symmetry.\nAnswer: B\nConfidence: 85%",
    "demo-hle-07": "Explanation: Two to the seventh.\nExact Answer: 128\nConfidence: 99%",
    "demo-hle-08": "Explanation: Counting edges twice.\nExact Answer: 88\nConfidence: 30%",
}
# The lab accepted numbers within 1% relative, and re-ran demo-hle-07/08, which then vanished.
HLE_LAB = {"demo-hle-01": ("3.1415", True), "demo-hle-02": ("2.5", True), "demo-hle-03": ("17", True),
           "demo-hle-04": ("C", True), "demo-hle-05": ("0.0071", False), "demo-hle-06": ("B", True)}


def source(rows: list[dict], label: str) -> list[SourceRow]:
    return [SourceRow(label, i + 1, r) for i, r in enumerate(rows)]


def write(name: str, benchmark: str, items: list[dict], responses: list[dict], max_tokens: int) -> None:
    for r in responses:
        r.setdefault("max_tokens", max_tokens)
    build_package(ROOT / name, kind="responses", benchmark=benchmark, package_id=f"demo-lab-note-{name}",
                  provenance=Provenance(**PROVENANCE, sampling={"temperature": 0.0, "max_tokens": max_tokens}),
                  tables=[Table("responses.jsonl", "response_row.v1", source(responses, "responses")),
                          Table("items.jsonl", "item_row.v1", source(items, "items"))],
                  overwrite=True)


def lab_table(name: str, recorded: dict[str, tuple[str | None, bool]]) -> None:
    path = ROOT / "lab-recorded" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for item_id, (answer, correct) in recorded.items():
            f.write(json.dumps({"item_id": item_id, "sample": 0, "answer": answer, "correct": correct}) + "\n")


def main() -> None:
    os.environ.setdefault("SOURCE_DATE_EPOCH", "1795910400")
    if ROOT.exists():
        shutil.rmtree(ROOT)
    ROOT.mkdir(parents=True)
    write("math500", "math500",
          [{"item_id": i, "question": q, "reference": a, "subject": "demo"} for i, q, a in MATH_ITEMS],
          [{"item_id": i, "response": t, "finish_reason": f} for i, (t, f) in MATH_RESPONSES.items()], 4096)
    lab_table("math500", MATH_LAB)
    write("mmlu_pro", "mmlu_pro",
          [{"item_id": i, "question": q, "reference": LETTERS[c], "choices": options(c, right), "subject": "demo"}
           for i, q, c, right in MMLU_ITEMS],
          [{"item_id": i, "response": t, "finish_reason": "stop"} for i, t in MMLU_RESPONSES.items()], 4096)
    lab_table("mmlu_pro", MMLU_LAB)
    write("gpqa_diamond", "gpqa_diamond",
          [{"item_id": i, "question": f"Demo stand-in for a protected question ({i}); written for audit.",
            "reference": gold, "choices": [f"demo option {c} of {i}" for c in "ABCD"], "protected": True}
           for i, gold in GPQA_ITEMS],
          [{"item_id": i, "response": t, "finish_reason": f} for i, (t, f) in GPQA_RESPONSES.items()], 32)
    lab_table("gpqa_diamond", GPQA_LAB)
    write("hle", "hle",
          [{"item_id": i, "question": f"Demo stand-in for a protected question ({i}); written for audit.",
            "reference": ref, "num_choices": n, "protected": True} for i, ref, n in HLE_ITEMS],
          [{"item_id": i, "response": t, "finish_reason": "stop"} for i, t in HLE_RESPONSES.items()], 8192)
    lab_table("hle", HLE_LAB)
    print(f"wrote {ROOT}")


if __name__ == "__main__":
    main()
