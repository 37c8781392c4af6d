"""Judge-graded benchmarks as verifiable artifacts.

Every call of an LLM judge is a row of a `judge-calls` package (`models`): the request as sent, the model as
requested and served, sampling, the raw reply with logprobs, usage, timings and errors, and the parse rule with
what it read. Verdicts are re-derived from those rows without calling the judge (`audit grade --judge-calls`,
`audit reproduce`).

Modules: `models` (rows), `templates` and `rules` (versioned components, locked like extractors), `client`
(one call under generate's stream bounds), `run` (`audit judge --server`: plan, resume, repeats), `figures`
(HLE's figures, flip rates), `pairwise` (AlpacaEval and Arena-Hard re-derived), `imports` (existing judged
outputs), `grading` (verdicts from recorded calls).
"""
