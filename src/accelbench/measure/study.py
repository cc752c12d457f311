"""One scenario run end to end: resolve, check the host, start vLLM, sweep, save the run folder.

The notebooks and the CLI call these functions. The run folder is written as the run goes: each level's
rows are saved when it ends, under a manifest marked interrupted until the run ends, so a failure saves
what was measured marked failed, SIGINT/SIGTERM save it marked interrupted (RunInterrupted says where),
and the death of this process leaves it to the run's watchdog to stop vLLM and put the folder in place.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from collections.abc import Callable
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
from accelbench.measure.interrupts import Interrupts
from accelbench.measure.runner import Clock, sweep
from accelbench.measure.watchdog import Watchdog
from accelbench.store.runs import RunFolder, finalize_staging, recover_orphans

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


class RunInterrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped a run; what it measured is saved, marked interrupted, in `run.run_dir`.
    A KeyboardInterrupt, so a notebook cell or a script stops as on Ctrl-C; the CLI exits `exit_code`."""

    def __init__(self, signum: int, run: RunResult) -> None:
        self.signum, self.run = signum, run
        super().__init__(f"{run.error}, in {run.run_dir}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


def run_sync(coro: Any, interrupts: Interrupts | None = None) -> Any:
    """Run a coroutine to completion, also from inside Jupyter's already-running event loop (then in a
    thread of its own; a KeyboardInterrupt in this thread cancels it there and waits: the engine lives there)."""
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
    stop: BaseException | None = None
    while t.is_alive():
        try:
            t.join()
        except KeyboardInterrupt as e:
            stop = stop or e
            if interrupts is not None:
                interrupts.cancel()
    if stop is not None:
        raise stop
    if "error" in box:
        raise box["error"]
    return box["value"]


class Collector:
    """Accumulates each measured level (requests, aggregates, telemetry) as the sweep hands it over, and
    has it saved (`save`) before the next starts; once `accept()` says no (a signal came), a level that
    ends is dropped: the signal may have cut it short."""

    def __init__(self, clock: Clock, sampler: telemetry.Sampler | None,
                 save: Callable[[], None] = lambda: None, accept: Callable[[], bool] = lambda: True) -> None:
        self.clock, self.sampler, self.save, self.accept = clock, sampler, save, accept
        self.requests: list[pd.DataFrame] = []
        self.levels: list[dict[str, Any]] = []
        self.scheduler: list[dict[str, Any]] = []  # the scheduler samples of engine starts that have ended
        self.engine_samples: list[dict[str, Any]] = []  # the running engine's, as they come
        self.replicate = 0  # the running engine's start

    def on_level(self, level: Level, records: list[dict[str, Any]], start_s: float, end_s: float) -> None:
        if not self.accept():
            return
        req = metrics.request_table(records)
        row = {"replicate": level.replicate, "level_kind": level.kind, "level_value": level.value,
               "repetition": level.repetition, **metrics.level_row(req), "level_start_s": start_s,
               "level_end_s": end_s}
        t0 = self.clock.t0
        interval = (t0 + row["interval_start_s"], t0 + row["interval_end_s"])
        out_tokens = row["output_tok_per_s"] * row["interval_s"]
        samples = list(self.sampler.samples) if self.sampler else []
        row |= telemetry.summarize(samples, *interval, int(round(out_tokens)))
        # peak KV-cache use and preemptions over the whole level, ramp and drain included (a peak or a
        # preemption there is real); energy above is per token of the measurement interval only
        steps = [s for s in self.engine_samples if t0 + start_s <= s["t"] <= t0 + end_s]
        row["kv_cache_usage_max_pct"] = 100 * max(s["kv_cache_usage"] for s in steps) if steps else None
        row["preempted_requests"] = sum(s["preempted"] for s in steps)
        self.requests.append(req)
        self.levels.append(row)
        self.save()

    def end_engine(self) -> None:
        """The running engine start has ended: its scheduler samples join the others, tagged with it."""
        self.scheduler += [dict(s, replicate=self.replicate) for s in self.engine_samples]
        self.engine_samples = []

    def tables(self) -> dict[str, pd.DataFrame]:
        t0 = self.clock.t0
        tables = {"requests": pd.concat(self.requests, ignore_index=True) if self.requests else pd.DataFrame(),
                  "levels": pd.DataFrame(self.levels)}
        samples = list(self.sampler.samples) if self.sampler else []
        if samples:
            tables["telemetry"] = pd.DataFrame(samples).assign(t=lambda d: d["t"] - t0)
        scheduler = self.scheduler + [dict(s, replicate=self.replicate) for s in list(self.engine_samples)]
        if scheduler:
            tables["scheduler"] = pd.DataFrame(scheduler).assign(t=lambda d: d["t"] - t0)
        return tables


class EventsFile:
    """The run's level events, appended to ACCELBENCH_EVENTS_FILE (JSON lines) when the variable names one:
    a level's start when it starts, its end once its rows are saved in the run folder (so a process that
    follows the file, the fleet's node, knows what a folder holds at any end event)."""

    def __init__(self, path: str | None) -> None:
        self.path, self.pending = path, []

    def on_event(self, event: LevelEvent) -> None:
        if event.phase == "end":
            self.pending.append(event)
        else:
            self.write([event])

    def flush(self) -> None:
        events, self.pending = self.pending, []
        self.write(events)

    def write(self, events: list[LevelEvent]) -> None:
        if self.path and events:
            with open(self.path, "a") as f:
                f.write("".join(e.to_json() + "\n" for e in events))


async def _measure(resolved: Resolved, collector: Collector, engines: list[VllmEngine], cache_dir: Path,
                   log: Path, progress: TextIO, stop_after_s: float | None, replicates: int,
                   events: EventsFile) -> list[Level]:
    """Each replicate on an engine of its own, started and shut down in turn; returns the levels left out."""

    def on_event(event: LevelEvent) -> None:
        mark(log, event.line())
        events.on_event(event)

    def on_progress(text: str) -> None:
        print(f"[accelbench] {text}", file=progress, flush=True)

    for r in range(replicates):
        if replicates > 1:
            on_progress(f"engine start {r + 1} of {replicates}")
        if r:  # the first engine is built before the run starts, so a bad engine config fails early
            engines.append(VllmEngine(resolved, cache_dir))
        engine = engines[r]
        collector.engine_samples, collector.replicate = engine.scheduler.samples, r
        try:
            await engine.start()
            skipped = await sweep(engine, resolved, collector.clock, collector.on_level, on_progress,
                                  stop_after_s, on_event, replicate=r)
        finally:
            engine.close()
            collector.end_engine()
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
    SIGINT or SIGTERM stop the run: the levels measured before are saved, marked interrupted, and
    RunInterrupted (a KeyboardInterrupt) is raised saying where.
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
    recover_orphans(outputs_dir)  # runs on this host cut off with their watchdog: put in place, interrupted
    run = _Run(resolved, backend, host, outputs_dir, stop_after_s, replicates)
    interrupts = Interrupts()
    try:
        with Watchdog(run.folder.staging, run.folder.run_id), interrupts:
            result = run.execute(interrupts)
    except BaseException:  # saving itself failed: the folder goes in place as the last level left it
        if (run.folder.staging / "manifest.json").exists():
            finalize_staging(run.folder.staging)
        else:  # nothing was measured yet
            shutil.rmtree(run.folder.staging, ignore_errors=True)
        raise
    if result.status == "interrupted" and interrupts.signum is not None:
        print(f"[accelbench] {result.error}; saved in {result.run_dir}", flush=True)
        raise RunInterrupted(interrupts.signum, result)
    return result


class _Run:
    """One run's state while it goes: what its manifest says at any moment, and its folder."""

    def __init__(self, resolved: Resolved, backend: Any, host: dict[str, Any], outputs_dir: Path,
                 stop_after_s: float | None, replicates: int) -> None:
        self.resolved, self.backend, self.host, self.outputs_dir = resolved, backend, host, outputs_dir
        self.stop_after_s, self.replicates = stop_after_s, replicates
        self.started = datetime.now(timezone.utc).isoformat()
        self.environment = collect_environment()
        self.engines = [VllmEngine(resolved, paths.model_cache_dir(outputs_dir))]
        self.planned = len(plan_levels(resolved.workload)) * replicates
        self.clock = Clock()
        self.sampler, self.telemetry_source = telemetry_sampler(resolved, host)
        self.engine_start_wall = time.time()
        self.events = EventsFile(os.environ.get(EVENTS_FILE_VAR))
        self.collector = Collector(self.clock, self.sampler, save=self.save_progress)
        self.folder = RunFolder.reserve(outputs_dir, resolved.scenario.name)  # exclusive, under a fresh id
        self.log = self.folder.staging / "engine.log"  # in the run folder from the start: no temporary one

    def manifest(self, status: str, error: str | None, validation: Any = None) -> dict[str, Any]:
        engine, engines, backend = self.engines[-1], self.engines, self.backend
        return dict(
            status=status, error=error, scenario=self.resolved.scenario.name, stop_after_s=self.stop_after_s,
            started_at=self.started, finished_at=datetime.now(timezone.utc).isoformat(),
            resolved=self.resolved.model_dump(mode="json"), environment=self.environment, host_check=self.host,
            engine_args=engine.kwargs, engine_effective=engine.effective, engine_start_s=engines[0].start_s,
            engine_starts_s=[e.start_s for e in engines if e.start_s is not None], replicates=self.replicates,
            method=METHOD_NOTES, levels_measured=len(self.collector.levels), levels_planned=self.planned,
            jit_compilation_levels=jit_levels(self.log) if self.log.exists() else [],
            telemetry=self.telemetry_source, wall_t0=self.clock.wall_t0,
            **({"compilation": backend.compilation_facts(self.host, self.engine_start_wall)}
               if hasattr(backend, "compilation_facts") else {}),
            note=os.environ.get("ACCELBENCH_RUN_NOTE"),
            **({"serve_validation": validation.manifest} if validation else {}))

    def save_progress(self) -> None:
        """The folder as a run cut off now would leave it: every level so far, marked interrupted (the
        watchdog puts it in place as it stands if this process dies); then the level events saved."""
        for name, df in self.collector.tables().items():
            self.folder.write_table(name, df)
        self.folder.write_manifest(self.manifest("interrupted", (
            f"the process running the run ended before the run did, after {len(self.collector.levels)} of "
            f"{self.planned} planned level(s) were measured (those are saved)")))
        self.events.flush()

    def execute(self, interrupts: Interrupts) -> RunResult:
        """Measure, validate if the workload asks, save and put the folder in place."""
        self.collector.accept = lambda: interrupts.signum is None
        error, skipped, stop = None, [], None
        self.save_progress()
        if self.sampler:
            self.sampler.start()
        try:
            with captured_output(self.log) as progress:
                skipped = run_sync(interrupts.guard(_measure(
                    self.resolved, self.collector, self.engines, paths.model_cache_dir(self.outputs_dir),
                    self.log, progress, self.stop_after_s, self.replicates, self.events)), interrupts)
        except Exception as e:  # any failure after start: keep what was measured, mark the run failed
            error = f"{type(e).__name__}: {e}"
        except BaseException as e:  # cancelled by a signal, or KeyboardInterrupt/SystemExit: keep what was measured
            stop = e
        finally:
            if self.sampler:
                self.sampler.stop()
        validation = None
        if self.resolved.workload.validate_with_serve and interrupts.signum is None and stop is None:
            from accelbench.measure.validation import validate_with_serve
            status = "failed" if error else "partial" if skipped else "completed"
            interrupts.immediate = True  # no task to cancel: a signal stops the validation at once
            try:
                validation = validate_with_serve(  # after engine.close(): one engine at a time
                    self.resolved, self.engines[-1].serve_kwargs(), self.outputs_dir,
                    skip_reason=error and f"the in-process sweep did not complete ({status})",
                    on_progress=lambda text: print(f"[accelbench] {text}", flush=True))
            except BaseException as e:  # a signal during the validation: the sweep's levels are kept
                stop = e
            interrupts.immediate = False
        done = f"after {len(self.collector.levels)} of {self.planned} planned level(s) were measured"
        if interrupts.signum is not None or stop is not None:
            status, error = "interrupted", f"interrupted by {interrupts.name or type(stop).__name__} {done}"
        elif error:
            status = "failed"
        elif skipped:
            status, error = "partial", (
                f"stopped by stop_after_s={self.stop_after_s:g}: {len(skipped)} planned level(s) not measured "
                f"({', '.join(level.label for level in skipped)})")
        else:
            status = "completed"
        for name, df in {**self.collector.tables(), **(validation.tables if validation else {})}.items():
            self.folder.write_table(name, df)
        for name, src in (validation.files if validation else {}).items():
            self.folder.move_in(name, src)
        self.folder.write_manifest(self.manifest(status, error, validation))
        run_dir = self.folder.finalize()
        result = RunResult(run_dir, status, error, pd.DataFrame(self.collector.levels))
        if stop is not None and interrupts.signum is None:  # not a signal of ours: saved, then passed on
            print(f"[accelbench] {error}; saved in {run_dir}", flush=True)
            raise stop
        return result


def raise_if_failed(run: RunResult) -> RunResult:
    """End a notebook with the run's error (levels already measured are saved in run.run_dir)."""
    if run.status != "completed":
        what = "the run failed" if run.status == "failed" else f"the run is {run.status}"
        raise AccelbenchError(f"{what}: {run.error}. {len(run.levels)} measured level(s) were saved, marked "
                              f"{run.status}, in {run.run_dir}")
    return run
