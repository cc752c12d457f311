"""One scenario run end to end: resolve, check the host, start vLLM, sweep, save the run folder.

The notebooks and the CLI call these functions; a failure after the engine starts still saves what was
measured, marked failed.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from accelbench.config import paths
from accelbench.config.params import Resolved, resolve
from accelbench.core import metrics, uncertainty
from accelbench.core.levels import Level, LevelEvent, plan_levels
from accelbench.errors import AccelbenchError
from accelbench.measure import telemetry
from accelbench.measure.engines import backend_module
from accelbench.measure.engines.vllm_engine import (
    VllmEngine,
    captured_output,
    jit_levels,
    mark,
)
from accelbench.measure.environment import collect_environment
from accelbench.measure.runner import Clock, sweep
from accelbench.store.runs import new_run_id, save_run

MAX_REPLICATES = 20
EVENTS_FILE_VAR = "ACCELBENCH_EVENTS_FILE"  # where a run also appends its level events (JSON lines)
METHOD_NOTES = ("vLLM in-process (AsyncLLM), dummy weights (load_format='dummy') from an architecture "
                "config, prompts as random token ids (skip_tokenizer_init), ignore_eos with output lengths "
                "fixed or drawn around the workload's mean, as vLLM's own benchmarks do")


@dataclass
class RunResult:
    run_dir: Path
    status: str
    error: str | None
    levels: pd.DataFrame

    def summary(self) -> pd.DataFrame:
        return uncertainty.summarize_levels(self.levels) if not self.levels.empty else self.levels

    def __repr__(self) -> str:
        return f"RunResult({self.status}, {self.run_dir}, {len(self.levels)} level rows)"


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion, also from inside Jupyter's already-running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:  # re-raised in the caller's thread below
            box["error"] = e

    t = threading.Thread(target=target, name="accelbench-run")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class Collector:
    """Accumulates each measured level (requests, aggregates, telemetry) as the sweep hands it over."""

    def __init__(self, clock: Clock, sampler: telemetry.Sampler | None) -> None:
        self.clock, self.sampler = clock, sampler
        self.requests: list[pd.DataFrame] = []
        self.levels: list[dict[str, Any]] = []
        self.scheduler: list[dict[str, Any]] = []  # every engine start's scheduler samples, tagged
        self.engine_samples: list[dict[str, Any]] = []  # the running engine's, as they come

    def on_level(self, level: Level, records: list[dict[str, Any]], start_s: float, end_s: float) -> None:
        req = metrics.request_table(records)
        row = {"replicate": level.replicate, "level_kind": level.kind, "level_value": level.value,
               "repetition": level.repetition, **metrics.level_row(req), "level_start_s": start_s,
               "level_end_s": end_s}
        t0 = self.clock.t0
        interval = (t0 + row["interval_start_s"], t0 + row["interval_end_s"])
        out_tokens = row["output_tok_per_s"] * row["interval_s"]
        samples = self.sampler.samples if self.sampler else []
        row |= telemetry.summarize(samples, *interval, int(round(out_tokens)))
        # peak KV-cache use and preemptions over the whole level, ramp and drain included (a peak or a
        # preemption there is real); energy above is per token of the measurement interval only
        steps = [s for s in self.engine_samples if t0 + start_s <= s["t"] <= t0 + end_s]
        row["kv_cache_usage_max_pct"] = 100 * max(s["kv_cache_usage"] for s in steps) if steps else None
        row["preempted_requests"] = sum(s["preempted"] for s in steps)
        self.requests.append(req)
        self.levels.append(row)

    def tables(self) -> dict[str, pd.DataFrame]:
        t0 = self.clock.t0
        tables = {"requests": pd.concat(self.requests, ignore_index=True) if self.requests else pd.DataFrame(),
                  "levels": pd.DataFrame(self.levels)}
        if self.sampler and self.sampler.samples:
            tables["telemetry"] = pd.DataFrame(self.sampler.samples).assign(t=lambda d: d["t"] - t0)
        if self.scheduler:
            tables["scheduler"] = pd.DataFrame(self.scheduler).assign(t=lambda d: d["t"] - t0)
        return tables


async def _measure(resolved: Resolved, collector: Collector, engines: list[VllmEngine], cache_dir: Path,
                   log: Path, progress: TextIO, stop_after_s: float | None, replicates: int) -> list[Level]:
    """Each replicate on an engine of its own, started and shut down in turn; returns the levels left out."""
    events_file = os.environ.get(EVENTS_FILE_VAR)

    def on_event(event: LevelEvent) -> None:
        mark(log, event.line())
        if events_file:  # the fleet's node follows a run's levels through this file
            with open(events_file, "a") as f:
                f.write(event.to_json() + "\n")

    def on_progress(text: str) -> None:
        print(f"[accelbench] {text}", file=progress, flush=True)

    for r in range(replicates):
        if replicates > 1:
            on_progress(f"engine start {r + 1} of {replicates}")
        if r:  # the first engine is built before the run starts, so a bad engine config fails early
            engines.append(VllmEngine(resolved, cache_dir))
        engine = engines[r]
        collector.engine_samples = engine.scheduler.samples
        try:
            await engine.start()
            skipped = await sweep(engine, resolved, collector.clock, collector.on_level, on_progress,
                                  stop_after_s, on_event, replicate=r)
        finally:
            engine.close()
            collector.scheduler += [dict(s, replicate=r) for s in engine.scheduler.samples]
        if skipped:
            return skipped + [level for later in range(r + 1, replicates) for level in plan_levels(resolved.workload, later)]
    return []


def telemetry_sampler(resolved: Resolved, host: dict[str, Any]) -> tuple[Any, str]:
    """NVML over the run's GPUs, neuron-monitor on Neuron hosts, else none (recorded as absent)."""
    if host.get("gpus"):
        read = telemetry.nvml_reader([g["index"] for g in host["gpus"]])
        return (telemetry.Sampler(read), "nvml") if read else (None, "absent")
    if resolved.scenario.backend == "neuron":
        from accelbench.measure.neuron_monitor import NeuronMonitorSampler
        if NeuronMonitorSampler.available():
            return NeuronMonitorSampler(tag=host.get("neuron_process_tag")), "neuron-monitor"
    return None, "absent"


def run_scenario(scenario: str, model: str | None = None, workload: str | None = None,
                 outputs_dir: Path | str = paths.OUTPUTS_DIR, stop_after_s: float | None = None,
                 replicates: int = 1) -> RunResult:
    """Measure one scenario on this host and save its run folder (failed runs too, marked failed).

    `replicates` engine starts measure the same levels one after another (each on a fresh engine), so the
    spread between engine starts is measured, not only the spread between repetitions of one start.
    `stop_after_s` (seconds from the run's start, engine start included) bounds a run on a host held for
    a limited time: no level starts after it, and a run that left levels out is saved marked partial.
    """
    resolved = resolve(scenario, model, workload)  # bad names or params fail here, before anything runs
    if stop_after_s is not None and (isinstance(stop_after_s, bool) or not isinstance(stop_after_s, (int, float))
                                     or not stop_after_s > 0):
        raise AccelbenchError(f"stop_after_s must be a positive number of seconds (or None for no bound), "
                              f"got {stop_after_s!r}")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or not 1 <= replicates <= MAX_REPLICATES:
        raise AccelbenchError(f"replicates must be a whole number of engine starts from 1 to {MAX_REPLICATES}, "
                              f"got {replicates!r}")
    backend = backend_module(resolved.scenario.backend)
    host = backend.check_host(resolved)  # a backend the host lacks fails here, nothing written
    outputs_dir = Path(outputs_dir)
    started = datetime.now(timezone.utc).isoformat()
    environment = collect_environment()
    run_id = new_run_id()
    engines = [VllmEngine(resolved, paths.model_cache_dir(outputs_dir))]
    clock = Clock()
    sampler, telemetry_source = telemetry_sampler(resolved, host)
    collector = Collector(clock, sampler)
    log = Path(tempfile.mkdtemp(prefix="accelbench-")) / "engine.log"
    error = None
    skipped: list[Level] = []
    if sampler:
        sampler.start()
    engine_start_wall = time.time()
    try:
        with captured_output(log) as progress:
            skipped = run_sync(_measure(resolved, collector, engines, paths.model_cache_dir(outputs_dir), log,
                                        progress, stop_after_s, replicates))
    except Exception as e:  # any failure after start: keep what was measured, mark the run failed
        error = f"{type(e).__name__}: {e}"
    finally:
        if sampler:
            sampler.stop()
    status = "failed" if error else "partial" if skipped else "completed"
    if skipped:
        error = (f"stopped by stop_after_s={stop_after_s:g}: {len(skipped)} planned level(s) not measured "
                 f"({', '.join(level.label for level in skipped)})")
    engine = engines[-1]
    validation = None
    if resolved.workload.validate_with_serve:  # after engine.close(): one engine at a time
        from accelbench.measure.validation import validate_with_serve
        validation = validate_with_serve(
            resolved, engine.serve_kwargs(), outputs_dir,
            skip_reason=error and f"the in-process sweep did not complete ({status})",
            on_progress=lambda text: print(f"[accelbench] {text}", flush=True))
    manifest = dict(
        status=status, error=error, scenario=resolved.scenario.name, stop_after_s=stop_after_s,
        started_at=started, finished_at=datetime.now(timezone.utc).isoformat(),
        resolved=resolved.model_dump(mode="json"), environment=environment, host_check=host,
        engine_args=engine.kwargs, engine_effective=engine.effective, engine_start_s=engines[0].start_s,
        engine_starts_s=[e.start_s for e in engines if e.start_s is not None], replicates=replicates,
        method=METHOD_NOTES,
        levels_measured=len(collector.levels),
        levels_planned=len(plan_levels(resolved.workload)) * replicates,
        jit_compilation_levels=jit_levels(log) if log.exists() else [],
        telemetry=telemetry_source, wall_t0=clock.wall_t0,
        **({"compilation": backend.compilation_facts(host, engine_start_wall)}
           if hasattr(backend, "compilation_facts") else {}),
        note=os.environ.get("ACCELBENCH_RUN_NOTE"),
        **({"serve_validation": validation.manifest} if validation else {}))
    run_dir = save_run(outputs_dir, resolved.scenario.name, run_id, manifest,
                       {**collector.tables(), **(validation.tables if validation else {})},
                       files={"engine.log": log, **(validation.files if validation else {})})
    return RunResult(run_dir, manifest["status"], error, pd.DataFrame(collector.levels))


def raise_if_failed(run: RunResult) -> RunResult:
    """End a notebook with the run's error (levels already measured are saved in run.run_dir)."""
    if run.status != "completed":
        what = "the run failed" if run.status == "failed" else f"the run is {run.status}"
        raise AccelbenchError(f"{what}: {run.error}. {len(run.levels)} measured level(s) were saved, marked "
                              f"{run.status}, in {run.run_dir}")
    return run
