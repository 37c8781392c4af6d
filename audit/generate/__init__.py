"""`audit generate`: responses from a vLLM server, with a record of what really happened.

    prompts      versioned prompt templates and the sha256 of what is sent
    openai_http  a small client for the OpenAI-compatible HTTP API (streaming, token counts)
    vllm_server  launching vLLM, and reading its log and command line
    runner       a run: plan, budgets, journal, resume, and the package written at the end

The names of `runner` are re-exported here (`from audit.generate import start, RunConfig`).
"""

from audit.generate.runner import (
    GREEDY_EPS,
    LOG_WAIT_S,
    MIN_TEMPERATURE,
    MODES,
    RUN_FORMAT,
    SAMPLING_FROM_GENERATION_CONFIG,
    GenerateRun,
    Journal,
    Outcome,
    Progress,
    RefusedRun,
    RunConfig,
    Runtime,
    Sampling,
    ServerSlot,
    Task,
    apply_model_defaults,
    detect_hardware,
    model_files,
    read_generation_config,
    read_journal,
    resume,
    rows_by_key,
    start,
    work_dir,
)

__all__ = [
    "GREEDY_EPS", "LOG_WAIT_S", "MIN_TEMPERATURE", "MODES", "RUN_FORMAT", "SAMPLING_FROM_GENERATION_CONFIG",
    "GenerateRun", "Journal", "Outcome", "Progress", "RefusedRun", "RunConfig", "Runtime", "Sampling", "ServerSlot",
    "Task", "apply_model_defaults", "detect_hardware", "model_files", "read_generation_config", "read_journal",
    "resume", "rows_by_key", "start", "work_dir",
]
