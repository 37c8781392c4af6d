"""Literal reference implementations: the upstream regexes applied exactly as upstream applies them.

Not registered as extractors. The fast, registered versions in `extractors/` are
checked against these (tests, `benchmarks/bench_extractors.py`). The literal MMLU-Pro
cascade is quadratic on long lines and long letter-rich texts: call it only on
inputs where that is affordable.
"""

from __future__ import annotations

import re

# TIGER-AI-Lab/MMLU-Pro @ f418b116db00b065c2aea046518d8fcf74d39872, evaluate_from_api.py
# extract_answer / extract_again / extract_final (same in evaluate_from_local.py).


def literal_official(text: str) -> str | None:
    match = re.search(r"answer is \(?([A-J])\)?", text)
    if match:
        return match.group(1)
    match = re.search(r".*[aA]nswer:\s*([A-J])", text)
    if match:
        return match.group(1)
    match = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    if match:
        return match.group(0)
    return None


def literal_official_rule(text: str) -> tuple[str | None, str, tuple[int, int] | None]:
    """The literal cascade, also saying which step fired and where (L1: match, L2/L3: letter)."""
    m = re.search(r"answer is \(?([A-J])\)?", text)
    if m:
        return m.group(1), "L1", m.span()
    m = re.search(r".*[aA]nswer:\s*([A-J])", text)
    if m:
        return m.group(1), "L2", m.span(1)
    m = re.search(r"\b[A-J]\b(?!.*\b[A-J]\b)", text, re.DOTALL)
    if m:
        return m.group(0), "L3", m.span()
    return None, "none", None


# TIGER-AI-Lab/MMLU-Pro @ 7535b160628b2ea6efb306f1817b4ecb3e76b7c7, evaluate_from_apiX.py extract_answer.
_X_PATTERNS = (r"answer is \(?([A-J])\)?", r"[aA]nswer:\s*([A-J])", r"\b[A-J]\b")


def literal_official_x(text: str) -> str | None:
    for pattern in _X_PATTERNS:
        if matches := re.findall(pattern, text):
            return matches[-1]
    return None


# EleutherAI/lm-evaluation-harness @ 325f168, mmlu_pro custom-extract: regex filter, group_select 0.
def literal_lmeval(text: str) -> str:
    match = re.compile(r"answer is \(?([ABCDEFGHIJ])\)?").findall(text)
    return match[0].strip() if match else "[invalid]"


# openai/simple-evals @ ee3b0318d8d1d9d72755a4120879be65f7c07e9e, gpqa_eval.py with common.ANSWER_PATTERN_MULTICHOICE.
def literal_simple_evals(text: str) -> str | None:
    match = re.search(r"(?i)Answer[ \t]*:[ \t]*\$?([A-D])\$?", text)
    return match.group(1) if match else None


# EleutherAI/lm-evaluation-harness @ b733598568fde3afa0e008892f8e7bb18cd472b6: lm_eval/tasks/gsm8k/gsm8k.yaml
# (filter_list, metric_list), lm_eval/filters/extraction.py RegexFilter.apply, lm_eval/api/metrics.py
# exact_match_hf_evaluate, written out as the harness runs them.


def literal_lmeval_gsm8k_filter(text: str, regex_pattern: str, group_select: int) -> str:
    match = re.compile(regex_pattern).findall(text)
    if match:
        match = match[group_select]
        if isinstance(match, tuple):
            match = [m for m in match if m]
            match = match[0] if match else "[invalid]"
        match = match.strip()
    else:
        match = "[invalid]"
    return match


def literal_lmeval_gsm8k_strict(text: str) -> str:
    return literal_lmeval_gsm8k_filter(text, r"#### (\-?[0-9\.\,]+)", 0)


def literal_lmeval_gsm8k_flexible(text: str) -> str:
    return literal_lmeval_gsm8k_filter(text, r"(-?[$0-9.,]{2,})|(-?[0-9]+)", -1)


def literal_lmeval_gsm8k_exact_match(prediction: str, reference: str) -> float:
    for s in [",", "\\$", "(?s).*#### ", "\\.$"]:
        prediction = re.sub(s, "", prediction)
        reference = re.sub(s, "", reference)
    return float(prediction.lower() == reference.lower())
