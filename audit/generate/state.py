"""The run record: what a run keeps in `OUT.work/run.json` between sessions, and puts in the manifest.

`RunState` is written after every change that must survive a kill (a session begun, a server
launched, sessions ended) and read back by `--resume`. Its sessions go into the package's
`provenance.extra.sessions` as they are, so their keys and key order are part of the output.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from audit.errors import AuditError
from audit.fileio import dumps_pretty, read_document, write_atomic
from audit.generate.config import RunConfig

RUN_FORMAT = "audit-generate-run.v1"


class ServerInfo(TypedDict):
    """One server as it described itself when a session began (`/version`, `/v1/models`, server info)."""

    url: str
    version: str | None
    model: str
    root: str | None
    max_model_len: int
    server_config: NotRequired[dict[str, Any]]


class LaunchRecord(TypedDict, total=False):
    """The server a session launched, filled in as it starts, answers and stops."""

    command: list[str]
    log: str
    """The server's log, relative to the work directory (and then to the package)."""
    pid: int | None
    ready_s: float
    exit_code: int | None


@dataclass
class Session:
    """One invocation of `audit generate` on the run (the first, then one per `--resume` that sends requests)."""

    index: int
    """Position in `RunState.sessions`; part of every request id and row of the session."""
    started_at: float
    """Unix time the session began connecting."""
    servers: list[ServerInfo] = field(default_factory=list)
    """The servers it sent requests to."""
    launch: LaunchRecord | None = None
    """The server it launched (with `--launch`), else None."""
    requests_verified: int | None = None
    """Rows whose applied sampling parameters the server log confirmed; None until the first."""
    server_default_sampling: dict[str, Any] | None = None
    """The defaults a launched server announced it took from generation_config.json, if it did."""
    finished_at: float | None = None
    """Unix time its servers were stopped or let go; None while running (or after a kill)."""

    def to_json(self) -> dict[str, Any]:
        """The session as JSON: fields in order, unset (None) ones left out."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Session:
        """The session `to_json` wrote."""
        return cls(**d)


@dataclass
class ItemsRecord:
    """The items package a run reads: its digest must not change between sessions."""

    path: str
    digest: str
    package_id: str
    dataset: dict[str, Any] | None
    """The items package's `provenance.dataset`, as JSON."""

    def to_json(self) -> dict[str, Any]:
        """The record as JSON, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class ServerIdentity:
    """What every server of every session must agree on, or the rows would mix two setups."""

    version: str | None
    model: str
    max_model_len: int

    def to_json(self) -> dict[str, Any]:
        """The identity as JSON, in field order."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass
class RunState:
    """A run's record (`run.json` in its work directory), from `audit generate` to the package."""

    run_id: str
    """Random hex naming the run: in every request id and in the manifest (`extra.run_id`)."""
    created: float
    """Unix time the run began."""
    config: RunConfig
    """What the run sends: fixed at the start (with --use-model-defaults applied)."""
    overwrite: bool
    """Whether the run was started with --force (it may replace the package)."""
    generation_config: dict[str, Any] | None
    """The model's generation_config.json (a local model), else None."""
    model_files: dict[str, Any] | None
    """sha256 of a local model's config and tokenizer files and the sizes of its weights, else None."""
    sessions: list[Session] = field(default_factory=list)
    """Every session so far, the current one last."""
    items: ItemsRecord | None = None
    """The items package, recorded by the first session that read it."""
    server: ServerIdentity | None = None
    """The servers' identity, pinned by the first session that connected."""
    server_override: list[str] | None = None
    """Server URLs a `--resume --server URL` put in place of the configured ones."""

    def to_json(self) -> dict[str, Any]:
        """The record as `run.json` holds it; fields not yet known are left out."""
        out: dict[str, Any] = {
            "format": RUN_FORMAT, "run_id": self.run_id, "created": self.created, "config": self.config.to_json(),
            "overwrite": self.overwrite, "generation_config": self.generation_config,
            "model_files": self.model_files, "sessions": [s.to_json() for s in self.sessions],
        }
        if self.items is not None:
            out["items"] = self.items.to_json()
        if self.server is not None:
            out["server"] = self.server.to_json()
        if self.server_override is not None:
            out["server_override"] = self.server_override
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunState:
        """The record `to_json` wrote."""
        return cls(
            run_id=d["run_id"], created=d["created"], config=RunConfig.from_json(d["config"]),
            overwrite=bool(d.get("overwrite")), generation_config=d.get("generation_config"),
            model_files=d.get("model_files"), sessions=[Session.from_json(s) for s in d["sessions"]],
            items=ItemsRecord(**d["items"]) if d.get("items") else None,
            server=ServerIdentity(**d["server"]) if d.get("server") else None,
            server_override=d.get("server_override"))


def work_dir(out: Path) -> Path:
    """Where an unfinished run keeps its journal, config and logs: `OUT.work` beside the package."""
    return out.parent / f"{out.name}.work"


def save_state(work: Path, state: RunState) -> None:
    """Replace `run.json` atomically: a kill leaves the old record or the new one."""
    write_atomic(work / "run.json", dumps_pretty(state.to_json()))


MAX_STATE_BYTES = 16 << 20
"""The largest run.json read (a few kilobytes: the config, the sessions, the items' digest)."""


def _run_json(work: Path) -> Any:
    """`work`/run.json decoded: a regular file of at most MAX_STATE_BYTES (a FIFO is refused, not waited on);
    AuditError (one line) otherwise."""
    path = work / "run.json"
    data, err = read_document(path, MAX_STATE_BYTES, what="a run state file", follow_links=False)
    if err is not None or data is None:
        raise AuditError(f"unreadable run state: {(err or '').removeprefix('unreadable: ')}", path=str(path))
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise AuditError(f"unreadable run state: {e}", path=str(path)) from None


def load_state(work: Path) -> RunState:
    """The record of the unfinished run in `work`; refused unless it is one this code wrote."""
    d = _run_json(work)
    found = d.get("format") if isinstance(d, dict) else None
    if found != RUN_FORMAT:
        raise AuditError(f"not a run this audit can resume (format {found!r})", path=str(work))
    return RunState.from_json(d)


def check_run_dir(work: Path) -> None:
    """Refuse unless `work` is an unfinished run's folder (a run.json of this format inside, not a link)."""
    try:
        ok = not work.is_symlink() and _run_json(work).get("format") == RUN_FORMAT
    except (AuditError, AttributeError):
        ok = False
    if not ok:
        raise AuditError("--force replaces only what audit wrote; this is not an unfinished run's folder "
                         "(no run.json of an audit run)", path=str(work))
