"""The items a run answers, their rendered prompts, and which requests are still to send."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from audit.errors import AuditError
from audit.generate.config import RunConfig
from audit.generate.journal import RowKey
from audit.generate.state import ItemsRecord, RunState
from audit.models import ItemRow, ResponseRow
from audit.packages import open_package
from audit.prompts import PromptTemplate, prompt_sha256


@dataclass(frozen=True)
class Task:
    """One request to send: an item's sample at an attempt."""

    item_id: str
    sample: int
    attempt: int
    cap: int
    """The output ceiling before the context limit: --max-tokens, or --resample-budget for re-samples."""


@dataclass
class RunItems:
    """The items of a run (after --limit), in package order, with their prompts rendered once."""

    rows: list[ItemRow] = field(default_factory=list)
    index: dict[str, int] = field(default_factory=dict)
    """Item id to its position: rows are written in this order, and it names the item in request ids."""
    prompts: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Item id to (prompt text, prompt_sha256)."""


def load_items(cfg: RunConfig, template: PromptTemplate, state: RunState) -> RunItems:
    """Read the items package (refused if it changed since the run began, recorded if new) and render each prompt."""
    path = Path(cfg.items)
    with open_package(path) as pkg:
        if not pkg.files("item_row.v1"):
            raise AuditError(f"is a {pkg.kind!r} package without item rows", path=str(path))
        digest = pkg.digest
        items_prov = pkg.manifest.provenance
        rows = list(pkg.iter_rows("item_row.v1"))
        pid = pkg.manifest.package_id
    known = state.items
    if known and known.digest != digest:
        raise AuditError(f"the items package changed since the run started (digest {digest[:12]}, "
                         f"run recorded {known.digest[:12]})", path=str(path))
    state.items = ItemsRecord(path=str(path), digest=digest, package_id=pid,
                              dataset=items_prov.dataset.model_dump(mode="json") if items_prov.dataset else None)
    if cfg.limit is not None:
        rows = rows[: cfg.limit]
    items = RunItems(rows=rows, index={it.item_id: i for i, it in enumerate(rows)})
    for it in rows:
        try:
            text = template.render(it)
        except AuditError as e:
            raise AuditError(f"cannot render prompt {template.key}: {e}", path=str(path)) from None
        items.prompts[it.item_id] = (text, prompt_sha256(cfg.mode, text))
    return items


def plan(cfg: RunConfig, items: RunItems, done: dict[RowKey, ResponseRow]) -> tuple[str, list[Task]]:
    """The next round of requests and its progress label: first attempts still missing, else re-samples
    of rows cut at the ceiling (up to --resample-truncated), else ("", [])."""
    first = [Task(it.item_id, s, 0, cfg.max_tokens) for it in items.rows for s in range(cfg.samples)
             if (it.item_id, s, 0) not in done]
    if first:
        return "attempt 0", first
    again = _resamples(cfg, items, done)
    if not again:
        return "", []
    return f"re-sample (attempt {max(t.attempt for t in again)})", again


def _resamples(cfg: RunConfig, items: RunItems, done: dict[RowKey, ResponseRow]) -> list[Task]:
    again: list[Task] = []
    budget = cfg.resample_budget or cfg.max_tokens
    latest: dict[tuple[str, int], int] = {}  # one pass over the done rows, not one per item and sample
    for i, ss, a in done:
        latest[(i, ss)] = max(a, latest.get((i, ss), a))
    for it in items.rows:
        for s in range(cfg.samples):
            last_attempt = latest[(it.item_id, s)]
            last = done[(it.item_id, s, last_attempt)]
            if last.finish_reason == "length" and last.error is None and last_attempt < cfg.resample_truncated:
                again.append(Task(it.item_id, s, last_attempt + 1, budget))
    return again
