"""`audit generate`: responses from a vLLM server, with a record of what really happened.

    prompts      versioned prompt templates and the sha256 of what is sent
    openai_http  a small client for the OpenAI-compatible HTTP API (streaming, token counts)
    vllm_server  launching vLLM, and reading its log and command line
    runner       a run: plan, budgets, journal, resume, and the package written at the end

The names of `runner` are re-exported here (`from audit.generate import start, RunConfig`),
imported on first use.
"""

_RUNNER_NAMES = (
    "GREEDY_EPS", "LOG_WAIT_S", "MIN_TEMPERATURE", "MODES", "RUN_FORMAT", "SAMPLING_FROM_GENERATION_CONFIG",
    "GenerateRun", "Journal", "Outcome", "Progress", "RefusedRun", "RunConfig", "Runtime", "Sampling", "ServerSlot",
    "Task", "apply_model_defaults", "detect_hardware", "model_files", "read_generation_config", "read_journal",
    "resume", "rows_by_key", "start", "work_dir",
)

__all__ = list(_RUNNER_NAMES)


def __getattr__(name: str) -> object:
    # Imported on first use: `audit.generate.prompts` (which grading specs name) does not load the runner.
    if name in _RUNNER_NAMES:
        from audit.generate import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
